// tap-core.mjs beyond its fail-closed paths (issue 15, mutants the tap tests let live): which calls pass untouched,
// the alert de-duplication window and its edge, an alert's action and field, message:sent's text, the replay file
// (name, mode, compaction), the reply not waiting for the disk, deleteMessages and flush() against held-back tails,
// and the partition check's zero-padded month in a month where padding matters. Real grammY, writer and DLP engine,
// a loopback Bot API; time moves by setting the clock, never by sleeping.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  blockingScanner, botWithTap, createTap, fakeTelegram, fakeTimers, plantedKey, rand, readAll, realDeps, tempRoot,
} from "./tap-helpers.mjs";
import { withFileLock } from "../writer.mjs";

const CHAT = 626262;

async function setup({ over = {}, releaseMs, timers, accountId } = {}) {
  const root = tempRoot();
  const tg = await fakeTelegram();
  const lines = [];
  const deps = realDeps(root).then((d) => ({ ...d, ...over }));
  const tap = createTap({ deps, stderr: (l) => lines.push(l), ...(releaseMs !== undefined ? { releaseMs, timers } : {}) });
  const { bot } = botWithTap(tg, tap, accountId ? { accountId } : {});
  return { root, tg, tap, bot, stderr: lines,
    sent: async () => {
      await tap.flush();
      return existsSync(join(root, "raw")) ? readAll(root, "raw").filter((e) => e.event === "message:sent") : [];
    },
    alerts: () => readAll(root, "dlp").filter((e) => e.event === "dlp:alert"),
    done: async () => { await tg.close(); rmSync(root, { recursive: true, force: true }); } };
}
const update = (id, body) => ({ update_id: id, ...body });
const msg = (text) => ({ message_id: 1, date: 1764470000, chat: { id: CHAT, type: "private" },
  from: { id: 99, is_bot: false, first_name: "Ann" }, text });
const dayRel = (chat, d = new Date()) => `raw/telegram/chats/${chat}/${d.getUTCFullYear()}/` +
  `${String(d.getUTCMonth() + 1).padStart(2, "0")}/${String(d.getUTCDate()).padStart(2, "0")}.jsonl`;

test("content-free calls pass untouched and unlogged, even with a scanner that throws", async () => {
  const s = await setup({ over: { scanner: { filter() { throw new Error("must not be asked"); } } } });
  try {
    await s.bot.api.deleteWebhook();
    await s.bot.api.setWebhook("https://hooks.invalid/x");
    await s.bot.api.deleteMyCommands();
    await s.bot.api.sendChatAction(CHAT, "typing");
    await s.bot.api.logOut();
    await s.bot.api.close();
    await s.bot.api.getMe();
    assert.deepEqual(s.tg.requests.map((r) => r.method),
      ["deleteWebhook", "setWebhook", "deleteMyCommands", "sendChatAction", "logOut", "close", "getMe"]);
    assert.deepEqual(await s.sent(), []);
    assert.deepEqual(s.stderr, []);
  } finally { await s.done(); }
});

test("one alert per secret and chat for 10 minutes: reused at 599,999 ms, a new one at exactly 600,000 ms", async () => {
  const s = await setup();
  const realNow = Date.now;
  let now = realNow();
  Date.now = () => now;
  try {
    const key = plantedKey();
    await s.bot.api.sendMessage(CHAT, `first ${key}`);
    now += 599_999;
    await s.bot.api.sendMessage(CHAT, `again ${key}`);
    await s.bot.api.sendMessage(CHAT + 1, `other chat ${key}`);
    now += 1;
    await s.bot.api.sendMessage(CHAT, `ten minutes later ${key}`);
    const sent = await s.sent();
    const al = s.alerts();
    assert.equal(al.length, 3, "first, other chat, ten minutes later");
    const of = (chat) => sent.filter((e) => e.chat_id === String(chat)).map((e) => e.dlp.alerts);
    assert.deepEqual(of(CHAT), [[al[0].id], [al[0].id], [al[2].id]]);
    assert.deepEqual(of(CHAT + 1), [[al[1].id]]);
    assert.deepEqual(al.map((a) => a.chat_id), [String(CHAT), String(CHAT + 1), String(CHAT)]);
  } finally { Date.now = realNow; await s.done(); }
});

test("an alert's action follows the call (block / redact) and its field names the nested member", async () => {
  const s = await setup({ over: { scanner: blockingScanner() } });
  try {
    const pem = `-----BEGIN RSA PRIVATE KEY-----\n${rand(64)}\n-----END RSA PRIVATE KEY-----`;
    await s.bot.api.sendMessage(CHAT, `the key:\n${pem}`);
    await s.bot.api.sendMessage(CHAT, "pick one", { reply_markup: { inline_keyboard: [[
      { text: "plain", callback_data: "a" }, { text: `key ${plantedKey()}`, callback_data: "b" }]] } });
    const sent = await s.sent();
    const [block, redact] = s.alerts();
    assert.deepEqual([block.rule, block.action, block.field], ["private-key", "block", "text"]);
    assert.equal(redact.action, "redact");
    assert.equal(redact.field, "reply_markup.inline_keyboard[0][1].text");
    assert.deepEqual(sent.map((e) => e.dlp.action), ["block", "redact"]);
    assert.deepEqual(sent[0].dlp.rules, ["private-key"]);
  } finally { await s.done(); }
});

test("message:sent's text is the call's first string content field (caption, question), absent without one", async () => {
  const s = await setup();
  try {
    await s.bot.api.sendPhoto(CHAT, "https://img.invalid/p.png", { caption: "a caption" });
    await s.bot.api.sendPoll(CHAT, "which one?", [{ text: "a" }, { text: "b" }]);
    await s.bot.api.sendLocation(CHAT, 1.5, 2.5);
    const sent = await s.sent();
    assert.deepEqual(sent.map((e) => [e.method, e.text]),
      [["sendPhoto", "a caption"], ["sendPoll", "which one?"], ["sendLocation", undefined]]);
  } finally { await s.done(); }
});

test("the replay file: tap/updates-<account>.seen (0700 directory, 0600 file, unsafe characters replaced)", async () => {
  const s = await setup({ accountId: "ops/bot 2" });
  try {
    await s.bot.handleUpdate(update(700, { message: msg("hi") }));
    await s.bot.handleUpdate(update(700, { message: msg("hi") }));
    assert.equal(statSync(join(s.root, "tap")).mode & 0o777, 0o700);
    const f = join(s.root, "tap", "updates-ops_bot_2.seen");
    assert.equal(statSync(f).mode & 0o777, 0o600);
    assert.equal(readFileSync(f, "utf8"), "700\n");
    const got = readAll(s.root, "raw").filter((e) => e.event === "message:received");
    assert.deepEqual(got.map((e) => e.duplicate ?? false), [false, true]);
  } finally { await s.done(); }
});

test("a replay file over 100,000 lines is cut to its last 50,000 on load; those are still recognised", async () => {
  const s = await setup();
  try {
    mkdirSync(join(s.root, "tap"), { mode: 0o700 });
    const f = join(s.root, "tap", "updates-default.seen");
    writeFileSync(f, Array.from({ length: 100_001 }, (_, i) => String(i + 1)).join("\n") + "\n");
    await s.bot.handleUpdate(update(100_001, { message: msg("kept: a replay") }));
    const kept = Array.from({ length: 50_000 }, (_, i) => String(i + 50_002)).join("\n") + "\n";
    assert.equal(readFileSync(f, "utf8"), kept);
    await s.bot.handleUpdate(update(1, { message: msg("dropped: new again") }));
    const got = readAll(s.root, "raw").filter((e) => e.event === "message:received");
    assert.deepEqual(got.map((e) => [e.update_id, e.duplicate ?? false]), [[100_001, true], [1, false]]);
    assert.equal(readFileSync(f, "utf8"), kept + "1\n");
  } finally { await s.done(); }
});

test("the reply is handed back without waiting for message:sent's append (its file locked by another writer)", async () => {
  const s = await setup();
  try {
    const rel = dayRel(CHAT);
    mkdirSync(join(s.root, rel, ".."), { recursive: true });
    let release;
    const gate = new Promise((r) => { release = r; });
    let locked;
    const isLocked = new Promise((r) => { locked = r; });
    const holder = withFileLock(join(s.root, rel + ".lock"), async () => { locked(); await gate; });
    await isLocked;
    const res = await s.bot.api.sendMessage(CHAT, "out while the log file is locked");
    assert.equal(typeof res.message_id, "number");
    assert.equal(s.tg.requests.length, 1);
    assert.throws(() => statSync(join(s.root, rel)), { code: "ENOENT" }, "message:sent cannot be on disk yet");
    release();
    await holder;
    const [ev] = await s.sent();
    assert.equal(ev.message_id, res.message_id);
    assert.equal(s.tap.degraded, null);
  } finally { await s.done(); }
});

test("deleteMessages cancels a held tail's release; flush() waits for a release that has started", async () => {
  const timers = fakeTimers();
  const s = await setup({ releaseMs: 3000, timers });
  try {
    const a = await s.bot.api.sendMessage(CHAT, "chapter 8");
    assert.equal(timers.pending.length, 1, "the tail `8` is held: a release is scheduled");
    await s.bot.api.deleteMessages(CHAT, [a.message_id, 12345]);
    assert.equal(timers.pending.length, 0, "deleteMessages cancelled it");
    const b = await s.bot.api.sendMessage(CHAT, "chapter 9");
    assert.equal(timers.pending.length, 1);
    await s.tap.flush(); // nothing else in flight: what the next flush() waits for is the release alone
    timers.fire();
    await s.tap.flush(); // the release edit: sent and logged before flush() resolves
    const last = s.tg.requests.at(-1);
    assert.deepEqual([last.method, last.body.message_id, last.body.text], ["editMessageText", b.message_id, "chapter 9"]);
    const sent = await s.sent();
    assert.equal(sent.at(-1).tap_release, true);
    assert.equal(s.tg.requests.filter((r) => r.method === "editMessageText").length, 1, "no release for the deleted one");
  } finally { await s.done(); }
});

test("the partition check's month is zero-padded: in January a file at yyyy/01 refuses the call", async () => {
  const s = await setup();
  const RealDate = Date;
  const jan = RealDate.UTC(2027, 0, 15, 12);
  class JanDate extends RealDate {
    constructor(...a) { if (a.length) super(...a); else super(jan); }
    static now() { return RealDate.now(); }
  }
  try {
    await s.tap.ready;
    mkdirSync(join(s.root, "raw", "telegram", "chats", String(CHAT), "2027"), { recursive: true });
    writeFileSync(join(s.root, "raw", "telegram", "chats", String(CHAT), "2027", "01"), "");
    globalThis.Date = JanDate;
    try {
      await assert.rejects(s.bot.api.sendMessage(CHAT, "must not leave"), /refused: event log cannot be written/);
    } finally { globalThis.Date = RealDate; }
    assert.equal(s.tg.requests.length, 0);
    assert.ok(s.stderr.some((l) => l.includes("2027/01 is not a directory")), s.stderr.join("\n"));
  } finally { globalThis.Date = RealDate; await s.done(); }
});
