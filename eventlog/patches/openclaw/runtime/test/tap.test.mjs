// The runtime tap on OpenClaw's real grammY, the real JS writer and the real DLP engine, against a loopback
// Bot API. Run: node --test patches/openclaw/runtime/test/
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  allBytes, blockingScanner, botWithTap, createTap, fakeTelegram, leaksPiece, plantedKey, rand, readAll, realDeps,
  tempRoot,
} from "./tap-helpers.mjs";

const CHAT = 424242;

async function setup(opts = {}) {
  const root = tempRoot();
  const tg = await fakeTelegram();
  const lines = [];
  const tap = createTap({ deps: realDeps(root, opts), stderr: (l) => lines.push(l) });
  const { bot, inner } = botWithTap(tg, tap);
  return { root, tg, tap, bot, inner, stderr: lines, done: async () => { await tg.close(); rmSync(root, { recursive: true, force: true }); } };
}

const sent = (root) => readAll(root, "raw").filter((e) => e.event === "message:sent");
// message:sent is appended after the reply is handed back; flush() waits for the appends in flight
async function sentOf(s) { await s.tap.flush(); return sent(s.root); }
const alerts = (root) => readAll(root, "dlp").filter((e) => e.event === "dlp:alert");

test("sendMessage with a key: redacted before it leaves, alert without plaintext, message:sent with provider id", async () => {
  const s = await setup();
  try {
    const key = plantedKey();
    const res = await s.bot.api.sendMessage(CHAT, `Here is the key: <code>${key}</code> keep it safe`, { parse_mode: "HTML" });
    assert.equal(typeof res.message_id, "number");
    assert.equal(s.tg.requests.length, 1);
    const body = s.tg.requests[0].raw;
    assert.equal(leaksPiece(body, key), null, "no 12-char piece of the key reached Telegram");
    assert.match(s.tg.requests[0].body.text, /\[REDACTED:anthropic-api-key\]/);
    // our transformer ran first: the throttler (installed before it) already saw the redacted payload
    assert.equal(leaksPiece(JSON.stringify(s.inner), key), null);
    const [ev] = (await sentOf(s));
    assert.equal(ev.method, "sendMessage");
    assert.equal(ev.chat_id, String(CHAT));
    // the bot's identity from Telegram's reply: the views' sender for what the bot sent (docs/recall.md)
    assert.deepEqual(ev.outcome, { ok: true, message_id: res.message_id,
      from: { id: 7000001, is_bot: true, username: "tap_test_bot", name: "T" } });
    assert.equal(ev.message_id, res.message_id);
    assert.equal(ev.payload.text, s.tg.requests[0].body.text, "payload as sent");
    assert.equal(ev.dlp.action, "redact");
    const [al] = alerts(s.root);
    assert.equal(al.rule, "anthropic-api-key");
    assert.equal(al.action, "redact");
    assert.equal(al.direction, "out");
    assert.equal(al.log_event, ev.id);
    assert.deepEqual(ev.dlp.alerts, [al.id]);
    // what is derived from the secret sits in a content field, so `forget` can erase it (eventlog/dlp/alerts.py)
    assert.match(al.payload.fingerprint, /^[0-9a-f]{64}$/);
    assert.ok(al.salt && al.fingerprint === undefined && al.masked === undefined);
    assert.equal(leaksPiece(allBytes(s.root), key), null, "the key is nowhere under the log root");
  } finally { await s.done(); }
});

test("every content-bearing method is filtered, nested fields included", async () => {
  const s = await setup();
  try {
    const k = () => plantedKey();
    const keys = [];
    const K = () => { const x = k(); keys.push(x); return x; };
    await s.bot.api.sendPhoto(CHAT, "AgACAgIAAxkBAAIBfileid", { caption: `photo ${K()}` });
    await s.bot.api.sendDocument(CHAT, "BQACAgIAAxkBAAIBfileid", { caption: `doc ${K()}`, caption_entities: [{ type: "bold", offset: 0, length: 3 }] });
    await s.bot.api.sendVideo(CHAT, "BAACAgIAAxkBAAIBfileid", { caption: K() });
    await s.bot.api.sendAudio(CHAT, "CQACAgIAAxkBAAIBfileid", { caption: K() });
    await s.bot.api.sendAnimation(CHAT, "CgACAgIAAxkBAAIBfileid", { caption: K() });
    await s.bot.api.sendVoice(CHAT, "AwACAgIAAxkBAAIBfileid", { caption: K() });
    await s.bot.api.sendMediaGroup(CHAT, [{ type: "photo", media: "AgACfile1", caption: K() }, { type: "photo", media: "AgACfile2" }]);
    await s.bot.api.editMessageCaption(CHAT, 5, { caption: K() });
    await s.bot.api.sendPoll(CHAT, `which ${K()}?`, [{ text: K() }, { text: "no" }]);
    await s.bot.api.editMessageText(CHAT, 5, `edited ${K()}`);
    await s.bot.api.sendMessage(CHAT, "buttons", { reply_markup: { inline_keyboard: [[{ text: K(), callback_data: "x" }]] } });
    await s.bot.api.answerCallbackQuery("cbq-1", { text: K(), show_alert: true });
    await s.bot.api.answerInlineQuery("inl-1", [{ type: "article", id: "1", title: "t",
      input_message_content: { message_text: K() } }]);
    await s.bot.api.sendMessage(CHAT, "`code`", { entities: [{ type: "code", offset: 0, length: 6 }] });
    await s.bot.api.deleteMessage(CHAT, 5);
    await s.bot.api.sendChatAction(CHAT, "typing");
    const bodies = s.tg.requests.map((r) => r.raw).join("\n");
    for (const key of keys) assert.equal(leaksPiece(bodies, key), null);
    assert.equal(s.tg.requests.length, 16);
    // entity offsets of a changed caption are dropped; untouched ones stay
    assert.equal(s.tg.requests[1].body.caption_entities, undefined);
    assert.deepEqual(s.tg.requests[13].body.entities, [{ type: "code", offset: 0, length: 6 }]);
    // file ids are never scanned or changed
    assert.equal(s.tg.requests[0].body.photo, "AgACAgIAAxkBAAIBfileid");
    const ev = (await sentOf(s));
    assert.equal(ev.length, 15, "every call but the typing indicator is logged");
    // files are per chat, so compare as multisets
    assert.deepEqual(ev.map((e) => e.method).sort(),
      s.tg.requests.map((r) => r.method).filter((m) => m !== "sendChatAction").sort());
    assert.equal(alerts(s.root).length, keys.length);
    assert.equal(leaksPiece(allBytes(s.root), keys.join("|")), null);
    for (const key of keys) assert.equal(leaksPiece(allBytes(s.root), key), null);
  } finally { await s.done(); }
});

test("block rule: the text is replaced by a short withheld notice, the call still succeeds", async () => {
  const s = await setup({ scanner: blockingScanner() });
  try {
    const pem = `-----BEGIN RSA PRIVATE KEY-----\n${rand(64)}\n-----END RSA PRIVATE KEY-----`;
    const res = await s.bot.api.sendMessage(CHAT, `the key:\n${pem}`);
    assert.equal(typeof res.message_id, "number");
    const text = s.tg.requests[0].body.text;
    assert.match(text, /^\[withheld by DLP: private-key\]$/);
    const [ev] = (await sentOf(s));
    assert.equal(ev.dlp.action, "block");
    assert.equal(ev.text, text);
    assert.ok(!allBytes(s.root).includes("BEGIN RSA PRIVATE KEY"));
  } finally { await s.done(); }
});

test("streaming preview: a growing editMessageText never shows a prefix of the key", async () => {
  const s = await setup();
  try {
    const key = plantedKey();
    const full = `Sure, your key is ${key} and that is all.`;
    const first = await s.bot.api.sendMessage(CHAT, full.slice(0, 5));
    for (let n = 6; n <= full.length; n += 3) {
      await s.bot.api.editMessageText(CHAT, first.message_id, full.slice(0, n)).catch(() => {});
    }
    await s.bot.api.editMessageText(CHAT, first.message_id, full);
    const shown = s.tg.requests.map((r) => r.body.text ?? "");
    for (const t of shown) {
      // no trailing piece of any length >= 3 of the key's start
      for (let i = 3; i <= key.length; i++) assert.ok(!t.includes(key.slice(0, i)), `preview leaked ${key.slice(0, i)}`);
    }
    assert.ok(shown.some((t) => t.endsWith("and that is all.")), "the final text still arrives");
    const held = (await sentOf(s)).filter((e) => e.dlp?.held_back > 0);
    assert.ok(held.length > 0, "some previews were held back");
  } finally { await s.done(); }
});

test("hold-back: a preview tail is held only where a secret could begin; the send site's final reply is never cut", async () => {
  const root = tempRoot();
  const tg = await fakeTelegram();
  const tap = createTap({ deps: realDeps(root, {}), stderr: () => {} });
  const ingress = botWithTap(tg, tap).bot;
  const send = botWithTap(tg, tap, { site: "send" }).bot;
  try {
    // ingress previews: an ordinary word ending is not a secret's start; `sk` after a space is
    const p = await ingress.api.sendMessage(CHAT, "notes from the old release");
    await ingress.api.editMessageText(CHAT, p.message_id, "see task-");
    await ingress.api.editMessageText(CHAT, p.message_id, "your key is sk");
    // send site: the final reply goes out whole, even when it ends like a secret's start
    await send.api.sendMessage(CHAT, "the final answer is sk");
    await send.api.editMessageText(CHAT, p.message_id, "done: token eyJ");
    const shown = tg.requests.map((r) => r.body.text);
    assert.deepEqual(shown, ["notes from the old release", "see task-", "your key is ", "the final answer is sk",
      "done: token eyJ"]);
    await tap.flush();
    const held = sent(root).map((e) => [e.site, e.dlp?.held_back ?? 0]);
    assert.deepEqual(held, [["ingress", 0], ["ingress", 0], ["ingress", 2], ["send", 0], ["send", 0]]);
  } finally { await tg.close(); rmSync(root, { recursive: true, force: true }); }
});

test("fail closed: a scanner that throws means the call is not forwarded and an alert is written", async () => {
  const broken = { filter() { throw new Error("injected scanner fault"); } };
  const s = await setup({ scanner: broken });
  try {
    await assert.rejects(s.bot.api.sendMessage(CHAT, "hello"), /refused: DLP scanner error/);
    assert.equal(s.tg.requests.length, 0, "nothing reached Telegram");
    const [al] = alerts(s.root);
    assert.equal(al.rule, "scanner-error");
    assert.equal(al.action, "block");
    const [ev] = (await sentOf(s));
    assert.equal(ev.outcome.ok, false);
    assert.equal(ev.payload, undefined, "an unscanned payload is never logged");
    // calls without content still work (the gateway can poll and start)
    await s.bot.api.getMe();
    assert.equal(s.tg.requests.length, 1);
  } finally { await s.done(); }
});

test("log cannot be written: outbound refused, inbound not handed to the bot; recovers when the log works", async () => {
  const s = await setup();
  try {
    // a regular file where the partition directory tree must go: every append fails (ENOTDIR), even as root
    mkdirSync(join(s.root, "raw", "telegram"), { recursive: true });
    writeFileSync(join(s.root, "raw", "telegram", "chats"), "not a directory");
    await assert.rejects(s.bot.api.sendMessage(CHAT, "hello"), /event log cannot be written/);
    assert.equal(s.tg.requests.length, 0);
    let handled = 0;
    s.bot.on("message", () => { handled++; });
    await assert.rejects(s.bot.handleUpdate(update(1, { message: msg(CHAT, "hi") })));
    assert.equal(handled, 0, "the agent never sees an update the log does not have");
    assert.ok(s.stderr.some((l) => l.includes("cannot append message:received")));
    assert.ok(s.stderr.every((l) => !l.includes("hi\"")), "stderr lines carry no message text");
    rmSync(join(s.root, "raw", "telegram", "chats"));
    await s.bot.handleUpdate(update(2, { message: msg(CHAT, "hi again") }));
    assert.equal(handled, 1);
    await s.bot.api.sendMessage(CHAT, "hello");
    assert.equal(s.tg.requests.length, 1);
  } finally { await s.done(); }
});

function msg(chat, text, extra = {}) {
  return { message_id: Math.floor(Math.random() * 1e6), date: 1764470000, chat: { id: chat, type: chat > 0 ? "private" : "supergroup" },
    from: { id: 99, is_bot: false, first_name: "Ann", username: "ann" }, text, ...extra };
}
function update(id, body) { return { update_id: id, ...body }; }

test("inbound: every update type is logged before the handler runs; replays are marked duplicate", async () => {
  const s = await setup();
  try {
    const seenAtHandler = [];
    s.bot.use(async (ctx, next) => { seenAtHandler.push(readAll(s.root, "raw").length); await next(); });
    const ups = [
      update(10, { message: msg(CHAT, "hello") }),
      update(11, { edited_message: { ...msg(CHAT, "hello, edited"), edit_date: 1764470001 } }),
      update(12, { callback_query: { id: "cb-9", from: { id: 99, is_bot: false, first_name: "Ann" }, chat_instance: "1",
        data: "btn", message: msg(CHAT, "menu") } }),
      update(13, { message_reaction: { chat: { id: CHAT, type: "private" }, message_id: 3, date: 1764470002,
        user: { id: 99, is_bot: false, first_name: "Ann" }, old_reaction: [], new_reaction: [{ type: "emoji", emoji: "👍" }] } }),
      update(14, { message: msg(-100123, "talking among ourselves", { chat: { id: -100123, type: "supergroup", title: "g" } }) }),
      update(15, { my_chat_member: { chat: { id: -100123, type: "supergroup", title: "g" }, from: { id: 99, is_bot: false, first_name: "Ann" },
        date: 1764470003, old_chat_member: { status: "left", user: { id: 7000001, is_bot: true, first_name: "T" } },
        new_chat_member: { status: "member", user: { id: 7000001, is_bot: true, first_name: "T" } } } }),
      update(16, { channel_post: { message_id: 1, date: 1764470004, chat: { id: -100777, type: "channel", title: "c" }, text: "post" } }),
      update(17, { poll: { id: "p1", question: "q?", options: [], total_voter_count: 0, is_closed: false,
        is_anonymous: true, type: "regular", allows_multiple_answers: false } }),
    ];
    for (const u of ups) await s.bot.handleUpdate(u);
    await s.bot.handleUpdate(ups[0]); // a replay after restart
    const got = readAll(s.root, "raw").filter((e) => e.event === "message:received");
    assert.deepEqual(got.map((e) => e.update_type).sort(), ["message", "edited_message", "callback_query",
      "message_reaction", "message", "my_chat_member", "channel_post", "poll", "message"].sort());
    assert.deepEqual(seenAtHandler, [1, 2, 3, 4, 5, 6, 7, 8, 9], "the line existed before the next middleware ran");
    const dup = got.filter((e) => e.update_id === 10);
    assert.deepEqual(dup.map((e) => e.duplicate ?? false), [false, true]);
    const byId = Object.fromEntries(got.filter((e) => !e.duplicate).map((e) => [e.update_id, e]));
    assert.deepEqual(byId[10].raw, ups[0]);
    assert.equal(byId[10].text, "hello");
    assert.equal(byId[11].text, "hello, edited");
    assert.equal(byId[12].chat_id, String(CHAT));
    assert.equal(byId[13].chat_id, String(CHAT));
    assert.equal(byId[14].chat_id, "-100123");
    assert.equal(byId[16].chat_id, "-100777");
    // an answerCallbackQuery is filed under the chat its callback came from
    await s.bot.api.answerCallbackQuery("cb-9", { text: "ok" });
    assert.equal((await sentOf(s)).at(-1).chat_id, String(CHAT));
  } finally { await s.done(); }
});

test("a replay is recognised across a restart (new tap, same root)", async () => {
  const s = await setup();
  try {
    await s.bot.handleUpdate(update(50, { message: msg(CHAT, "one") }));
    const tap2 = createTap({ deps: realDeps(s.root), stderr: () => {} });
    const { bot } = botWithTap(s.tg, tap2);
    await bot.handleUpdate(update(50, { message: msg(CHAT, "one") }));
    const got = readAll(s.root, "raw").filter((e) => e.update_id === 50);
    assert.deepEqual(got.map((e) => e.duplicate ?? false), [false, true]);
  } finally { await s.done(); }
});

test("alert stream cannot be written: the redacted call goes out, then calls with findings wait for their alerts", async () => {
  const s = await setup();
  try {
    await s.tap.ready; // the scanner has read its key from dlp/ by now
    rmSync(join(s.root, "dlp"), { recursive: true, force: true });
    writeFileSync(join(s.root, "dlp"), "not a directory"); // dlp/alerts.jsonl cannot be created
    const key = plantedKey();
    await s.bot.api.sendMessage(CHAT, `key ${key}`);
    await s.tap.flush();
    assert.equal(s.tg.requests.length, 1);
    assert.equal(leaksPiece(s.tg.requests[0].raw, key), null, "still redacted");
    assert.ok(s.tap.degraded, "the failed alert append is remembered");
    assert.ok(s.stderr.some((l) => l.includes("cannot append dlp alert")));
    // the next call with a finding must record its alert first: it cannot, so it is refused
    await assert.rejects(s.bot.api.sendMessage(CHAT, `again ${plantedKey()}`), /alert stream cannot be written/);
    assert.equal(s.tg.requests.length, 1);
    // a call without findings has nothing to record there and goes out
    await s.bot.api.sendMessage(CHAT, "plain text");
    assert.equal(s.tg.requests.length, 2);
    // once the stream works again, calls with findings go out and the state clears
    rmSync(join(s.root, "dlp"));
    await s.bot.api.sendMessage(CHAT, `third ${plantedKey()}`);
    assert.equal(s.tg.requests.length, 3);
    await s.tap.flush();
    assert.equal(s.tap.degraded, null);
    assert.equal(alerts(s.root).length, 1);
  } finally { await s.done(); }
});

test("one alert per leak: preview edits that carry the same secret reuse the alert; another secret or chat gets its own", async () => {
  const s = await setup();
  try {
    const key = plantedKey();
    const first = await s.bot.api.sendMessage(CHAT, `key: ${key}`);
    await s.bot.api.editMessageText(CHAT, first.message_id, `key: ${key} and more`);
    await s.bot.api.editMessageText(CHAT, first.message_id, `key: ${key} and more text`);
    await s.bot.api.sendMessage(CHAT + 1, `key: ${key}`);
    const other = plantedKey();
    await s.bot.api.sendMessage(CHAT, `another: ${other}`);
    const evs = await sentOf(s);
    const al = alerts(s.root);
    assert.equal(al.length, 3, "chat A key, chat B key, chat A other key");
    const inA = evs.filter((e) => e.chat_id === String(CHAT));
    assert.deepEqual(inA.slice(0, 3).map((e) => e.dlp.alerts), [[al[0].id], [al[0].id], [al[0].id]]);
    assert.equal(leaksPiece(allBytes(s.root), key), null);
    assert.equal(leaksPiece(allBytes(s.root), other), null);
  } finally { await s.done(); }
});

test("one alert per leak: a secret growing across preview edits of one message is one alert, updated with the longest fingerprint", async () => {
  const s = await setup();
  try {
    const tok = `ghs_${"Qx7kP2mZ9vLw4RtY8nB3cD6fH1jK5sA0eG".repeat(4)}`; // a long installation-style token
    const first = await s.bot.api.sendMessage(CHAT, `token ${tok.slice(0, 44)} …`);
    await s.bot.api.editMessageText(CHAT, first.message_id, `token ${tok.slice(0, 90)} …`);
    await s.bot.api.editMessageText(CHAT, first.message_id, `token ${tok} done`);
    await s.bot.api.editMessageText(CHAT, first.message_id, `token ${tok} done, bye`);
    const other = await s.bot.api.sendMessage(CHAT, `again ${tok} in a new message`);
    const evs = await sentOf(s);
    const all = readAll(s.root, "dlp");
    const al = all.filter((e) => e.event === "dlp:alert");
    const upd = all.filter((e) => e.event === "dlp:alert:update");
    assert.equal(al.length, 2, "one alert for the growing secret, one for the other message");
    assert.equal(upd.length, 2, "the alert was updated twice, as the secret grew");
    assert.ok(upd.every((u) => u.alert === al[0].id));
    assert.equal(upd[1].end - upd[1].start, tok.length);
    assert.notEqual(upd[1].payload.fingerprint, al[0].payload.fingerprint);
    assert.deepEqual(evs.slice(0, 4).map((e) => e.dlp.alerts), [[al[0].id], [al[0].id], [al[0].id], [al[0].id]]);
    assert.ok(other.message_id !== first.message_id);
    assert.equal(leaksPiece(allBytes(s.root), tok), null);
  } finally { await s.done(); }
});

test("a PEM key with escaped newlines streamed over preview edits: redacted from its header on, one alert", async () => {
  const s = await setup();
  try {
    const body = Array.from({ length: 6 }, () => rand(64)).concat([`${rand(20)}==`]);
    const pem = ["-----BEGIN PRIVATE KEY-----", ...body, "-----END PRIVATE KEY-----"].join("\\n");
    const full = `Here is the service account: {"private_key": "${pem}\\n", "client_email": "a@b.c"} - done.`;
    const first = await s.bot.api.sendMessage(CHAT, full.slice(0, 20));
    const hdr = full.indexOf("-----BEGIN") + "-----BEGIN PRIVATE KEY-----".length;
    for (let n = 27; n < full.length; n += 29) {
      await s.bot.api.editMessageText(CHAT, first.message_id, full.slice(0, n)).catch(() => {});
    }
    await s.bot.api.editMessageText(CHAT, first.message_id, full);
    const shown = s.tg.requests.map((r) => r.body.text ?? "");
    for (const t of shown) {
      for (const line of body) assert.equal(leaksPiece(t, line), null, "a piece of the key body was shown");
    }
    // once the header was in a preview, no later preview showed it
    const after = s.tg.requests.filter((r, i) => i > 0 && (r.body.text ?? "").length > 0)
      .filter((r, i) => full.slice(0, 20 + 29 * i).length >= hdr);
    for (const r of after) assert.ok(!r.body.text.includes("BEGIN PRIVATE KEY"), r.body.text);
    assert.equal(shown.at(-1), 'Here is the service account: {"private_key": "[REDACTED:private-key]\\n", "client_email": "a@b.c"} - done.');
    await s.tap.flush();
    const al = alerts(s.root);
    assert.equal(al.length, 1, "one alert for the key, updated as it grew");
    assert.deepEqual([al[0].rule, al[0].action, al[0].severity], ["private-key", "redact", "critical"]);
    for (const line of body) assert.equal(leaksPiece(allBytes(s.root), line), null, "the key body is under the root");
  } finally { await s.done(); }
});
