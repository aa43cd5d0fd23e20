// Releasing a held-back streaming-preview tail (tap-release.mjs, docs/patchset.md "Streaming previews" item 3):
// OpenClaw's real grammY, the real writer and DLP engine, a loopback Bot API; time is driven by an injected clock
// (no sleeps). Run: node --test eventlog/patches/openclaw/runtime/test/tap-release.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import {
  allBytes, botWithTap, createTap, fakeTelegram, fakeTimers, grammy, leaksPiece, plantedKey, rand, readAll, realDeps, tempRoot, TOKEN,
} from "./tap-helpers.mjs";
import { loadRules } from "../dlp.mjs";
import {
  DEFAULT_RELEASE_MS, holdPrefixesOf, holdRulesOf, releaseMsFrom, tailReleasable, createReleaser, withheldRule,
  withheldSpans, withheldSeverity, maskWithheld,
} from "../tap-release.mjs";
import { mask, nearSeverity } from "../dlp.mjs";

const CHAT = 515151;
const PREFIXES = holdPrefixesOf(loadRules());
const HOLD_RULES = holdRulesOf(loadRules());

async function setup({ releaseMs = 3000, gate = null } = {}) {
  const root = tempRoot();
  const tg = await fakeTelegram();
  const timers = fakeTimers();
  const lines = [];
  const deps = realDeps(root).then((d) => ({ ...d, holdPrefixes: PREFIXES, holdRules: HOLD_RULES }));
  const tap = createTap({ deps, stderr: (l) => lines.push(l), releaseMs, timers });
  let bot;
  if (gate) {
    // like OpenClaw's throttler: a transformer installed before ours (so it runs after it), here able to hold a call
    const { Bot } = grammy();
    bot = new Bot(TOKEN, { client: { apiRoot: tg.url }, botInfo: { id: 7000001, is_bot: true, first_name: "T",
      username: "tap_test_bot", can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: true } });
    bot.api.config.use(gate);
    bot.api.config.use(tap.transformer({ site: "ingress" }));
  } else bot = botWithTap(tg, tap).bot;
  const send = botWithTap(tg, tap, { site: "send" }).bot;
  return { root, tg, tap, bot, send, timers, stderr: lines,
    texts: () => tg.requests.filter((r) => r.method !== "getMe").map((r) => [r.method, r.body.text]),
    sent: async () => { await tap.flush(); return readAll(root, "raw").filter((e) => e.event === "message:sent"); },
    fire: async () => { const n = timers.fire(); await tap.flush(); return n; },
    done: async () => { await tg.close(); rmSync(root, { recursive: true, force: true }); } };
}

test("a streamed reply ending in a number: the held tail is released after the quiet period, logged as a call", async () => {
  const s = await setup();
  try {
    const m = await s.bot.api.sendMessage(CHAT, "The answer");
    await s.bot.api.editMessageText(CHAT, m.message_id, "The answer is 42", { link_preview_options: { is_disabled: true } });
    assert.deepEqual(s.texts().at(-1), ["editMessageText", "The answer is "], "the preview holds the digits back");
    assert.equal(s.timers.pending.length, 1);
    assert.equal(s.timers.pending[0].ms, 3000);
    assert.ok(s.timers.unrefs >= 1, "the release timer never keeps the gateway alive");
    assert.equal(await s.fire(), 1);
    const last = s.tg.requests.at(-1);
    assert.equal(last.method, "editMessageText");
    assert.deepEqual(last.body, { chat_id: CHAT, message_id: m.message_id, text: "The answer is 42",
      link_preview_options: { is_disabled: true } });
    const ev = (await s.sent()).at(-1);
    assert.equal(ev.tap_release, true);
    assert.equal(ev.site, "ingress");
    assert.equal(ev.method, "editMessageText");
    assert.equal(ev.text, "The answer is 42");
    assert.deepEqual(ev.outcome, { ok: true });
    assert.equal(ev.dlp, undefined, "filtered whole: nothing held, nothing found");
    assert.equal(s.timers.pending.length, 0);
    assert.equal(s.tap.releases.size, 0, "no state left behind");
    assert.equal(await s.fire(), 0, "released once");
  } finally { await s.done(); }
});

test("`key is sk`, `token eyJ`, HTML: released; the first preview held back too (release edits the sent message)", async () => {
  const s = await setup();
  try {
    const a = await s.bot.api.sendMessage(CHAT, "your key is sk");
    const b = await s.bot.api.sendMessage(CHAT, "start");
    await s.bot.api.editMessageText(CHAT, b.message_id, "<b>token</b> eyJ", { parse_mode: "HTML" });
    const c = await s.bot.api.sendMessage(CHAT, "see page <i>12</i>", { parse_mode: "HTML" });
    assert.deepEqual(s.texts().map((x) => x[1]), ["your key is ", "start", "<b>token</b> ", "see page <i></i>"]);
    assert.equal(await s.fire(), 3);
    const rel = s.tg.requests.slice(-3).map((r) => r.body).sort((x, y) => x.message_id - y.message_id);
    assert.deepEqual(rel, [
      { chat_id: CHAT, message_id: a.message_id, text: "your key is sk" },
      { chat_id: CHAT, message_id: b.message_id, text: "<b>token</b> eyJ", parse_mode: "HTML" },
      { chat_id: CHAT, message_id: c.message_id, text: "see page <i>12</i>", parse_mode: "HTML" },
    ]);
    assert.equal((await s.sent()).filter((e) => e.tap_release).length, 3);
  } finally { await s.done(); }
});

test("a newer preview cancels the pending release; a send-site edit or deleting the message does too", async () => {
  const s = await setup();
  try {
    const m = await s.bot.api.sendMessage(CHAT, "The answer is 4");
    assert.equal(s.timers.pending.length, 1);
    await s.bot.api.editMessageText(CHAT, m.message_id, "The answer is 42, and that is all.");
    assert.equal(s.timers.pending.length, 0, "nothing held in the latest preview: nothing to release");
    const n = await s.bot.api.sendMessage(CHAT, "chapter 7");
    await s.send.api.editMessageText(CHAT, n.message_id, "chapter 7 (final)");
    const d = await s.bot.api.sendMessage(CHAT, "chapter 8");
    await s.bot.api.deleteMessage(CHAT, d.message_id);
    const before = s.tg.requests.length;
    assert.equal(await s.fire(), 0);
    assert.equal(s.tg.requests.length, before, "no release was sent");
    assert.equal(s.tap.releases.size, 0);
  } finally { await s.done(); }
});

test("a stalled key is released as a redaction with one near_format alert; a complete one is released redacted", async () => {
  // issue 25: a held-back tail with key material no finding covers used to stay withheld for good (the reply ended at
  // "your key is "); the release now shows [REDACTED:<rule of the hold-back prefix>] in its place and alerts once
  const s = await setup();
  try {
    const key = plantedKey();
    const m1 = await s.bot.api.sendMessage(CHAT, "go");
    await s.bot.api.editMessageText(CHAT, m1.message_id, `your key is ${key.slice(0, 16)}`);
    const aws = `AKIA${rand(6, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")}`;
    const m2 = await s.bot.api.sendMessage(CHAT, `AWS id ${aws}`);
    const m3 = await s.bot.api.sendMessage(CHAT, "card 4111 1111 1111");
    assert.equal(s.timers.pending.length, 3, "every held tail gets a release");
    const m4 = await s.bot.api.sendMessage(CHAT, "go");
    await s.bot.api.editMessageText(CHAT, m4.message_id, `Your key is ${key}`);
    const m5 = await s.bot.api.sendMessage(CHAT, `first ${key} then page 12`);
    assert.equal(s.timers.pending.length, 5);
    await s.fire();
    const last = (m) => s.tg.requests.filter((r) => r.body.message_id === m.message_id).at(-1).body.text;
    assert.equal(last(m1), "your key is [REDACTED:anthropic-api-key]");
    assert.equal(last(m2), "AWS id [REDACTED:aws-access-key-id]");
    assert.equal(last(m3), "card [REDACTED:payment-card]");
    const rel = s.tg.requests.filter((r) => r.body.message_id === m4.message_id || r.body.message_id === m5.message_id)
      .map((r) => r.body.text);
    assert.deepEqual(rel, ["Your key is ", "Your key is [REDACTED:anthropic-api-key]",
      "first [REDACTED:anthropic-api-key] then page 12"]);
    const bodies = s.tg.requests.map((r) => r.raw).join("\n");
    assert.equal(leaksPiece(bodies, key), null);
    for (let i = 8; i <= key.length; i++) assert.ok(!bodies.includes(key.slice(0, i)), `${i}-char prefix shown`);
    assert.ok(!bodies.includes("4111 1111 1111") && !bodies.includes(aws));
    const ev = (await s.sent()).filter((e) => e.tap_release);
    assert.equal(ev.length, 5);
    assert.ok(ev.every((e) => e.dlp?.action === "redact"));
    const alerts = readAll(s.root, "dlp").filter((e) => e.event === "dlp:alert");
    const withheld = alerts.filter((a) => a.withheld);
    assert.deepEqual(withheld.map((a) => [a.rule, a.tier, a.severity, a.action]).sort(), [
      ["anthropic-api-key", "near_format", "high", "redact"], ["aws-access-key-id", "near_format", "high", "redact"],
      ["payment-card", "near_format", "medium", "redact"]]);
    for (const a of withheld) assert.ok(/^[0-9a-f]{64}$/.test(a.payload.fingerprint) && !a.payload.masked.includes(key.slice(0, 8)));
    // the complete key: confirmed, one alert (its release and the same key in m5 within ALERT_REPEAT_MS reuse it)
    const full = alerts.filter((a) => !a.withheld);
    assert.deepEqual(full.map((a) => [a.rule, a.tier]), [["anthropic-api-key", "confirmed"]], JSON.stringify(full.map((a) => [a.rule, a.tier, a.message_id])));
    assert.equal(leaksPiece(allBytes(s.root), key), null);
  } finally { await s.done(); }
});

test("withheld tails: spans, the rule of the prefix, severity and mask as in dlp.mjs", () => {
  assert.deepEqual(withheldSpans("your key is sk-ant-api03-AbC", 16, [], { prefixes: PREFIXES }), [[12, 28]]);
  assert.deepEqual(withheldSpans("the key is sk", 2, [], { prefixes: PREFIXES }), []);
  assert.deepEqual(withheldSpans("is sk-secretbody", 13, [{ start: 3, end: 10 }], { prefixes: PREFIXES }), [[10, 16]]);
  assert.deepEqual(withheldSpans("short", 9, [], { prefixes: PREFIXES }), [[0, 5]]);
  const rule = (t) => withheldRule(t, HOLD_RULES)?.rule ?? null;
  assert.equal(rule("sk-ant-api03-AbC"), "anthropic-api-key");
  assert.equal(rule("sk-proj-AbCdEf"), "openai-project-key");
  assert.equal(rule("AKIAABCD"), "aws-access-key-id");
  assert.equal(rule(":AAbc123"), "telegram-bot-token");
  assert.equal(rule("-----BEGIN RSA PRIV"), "private-key");
  assert.equal(rule("4111 1111 1111"), "payment-card");
  assert.equal(rule("plain words"), null);
  for (const sev of ["critical", "high", "medium", "low"]) assert.equal(withheldSeverity(sev), nearSeverity(sev));
  for (const t of ["sk-ant-api03-AbC", "😀😀😀😀😀x", "ab"]) assert.equal(maskWithheld(t), mask(t));
});

test("race: OpenClaw's next edit arriving while the release is in flight lands after it", async () => {
  let hold = null;
  let arrived = null;
  const arrivedP = new Promise((r) => { arrived = r; });
  const gate = async (prev, method, payload, signal) => {
    if (hold && method === "editMessageText") { arrived(); await hold; }
    return prev(method, payload, signal);
  };
  const s = await setup({ gate });
  try {
    const m = await s.bot.api.sendMessage(CHAT, "The answer is 4");
    let open;
    hold = new Promise((r) => { open = r; });
    s.timers.fire(); // the release starts and waits in the "throttler"
    await arrivedP;
    hold = null;
    const next = s.bot.api.editMessageText(CHAT, m.message_id, "The answer is 42.");
    await new Promise((r) => setImmediate(r));
    assert.equal(s.tg.requests.length, 1, "OpenClaw's edit waits for the release in flight");
    open();
    await next;
    await s.tap.flush();
    assert.deepEqual(s.texts(), [["sendMessage", "The answer is "], ["editMessageText", "The answer is 4"],
      ["editMessageText", "The answer is 42."]]);
    assert.equal(s.timers.pending.length, 0);
  } finally { await s.done(); }
});

test("\"message is not modified\" and a refused release are logged with their outcome; nothing throws", async () => {
  const gate = async (prev, method, payload, signal) => {
    if (method === "editMessageText") return { ok: false, error_code: 400, description: "Bad Request: message is not modified" };
    return prev(method, payload, signal);
  };
  const s = await setup({ gate });
  try {
    const m = await s.bot.api.sendMessage(CHAT, "page 12");
    await assert.rejects(s.bot.api.editMessageText(CHAT, m.message_id, "page 12"), /not modified/);
    assert.equal(s.timers.pending.length, 1, "a preview Telegram already shows still gets its tail released");
    await s.fire();
    const ev = (await s.sent()).filter((e) => e.tap_release);
    assert.equal(ev.length, 1);
    assert.deepEqual(ev[0].outcome, { ok: false, error_code: 400, description: "Bad Request: message is not modified" });
    assert.deepEqual(s.stderr, []);
  } finally { await s.done(); }
});

test("releaseMs 0 turns releasing off; $EVENTLOG_PREVIEW_RELEASE_MS is parsed strictly", async () => {
  const s = await setup({ releaseMs: 0 });
  try {
    await s.bot.api.sendMessage(CHAT, "the answer is 42");
    assert.equal(s.timers.pending.length, 0);
  } finally { await s.done(); }
  const err = [];
  assert.equal(releaseMsFrom({}, (l) => err.push(l)), DEFAULT_RELEASE_MS);
  assert.equal(releaseMsFrom({ EVENTLOG_PREVIEW_RELEASE_MS: "0" }), 0);
  assert.equal(releaseMsFrom({ EVENTLOG_PREVIEW_RELEASE_MS: " 5000 " }), 5000);
  assert.equal(releaseMsFrom({ EVENTLOG_PREVIEW_RELEASE_MS: "2s" }, (l) => err.push(l)), DEFAULT_RELEASE_MS);
  assert.equal(err.length, 1);
  assert.match(err[0], /EVENTLOG_PREVIEW_RELEASE_MS="2s" is not a number of ms; using 3000/);
  assert.ok(DEFAULT_RELEASE_MS > 1000, "longer than OpenClaw's draft throttle (DEFAULT_THROTTLE_MS = 1000)");
});

test("tailReleasable: public prefixes and short digit runs yes, key material no", () => {
  const yes = [["the answer is 42", 2], ["key is sk", 2], ["key is sk-", 3], ["key is sk-ant-", 7], ["token eyJ", 3],
    ["bot123456:A", 2], ["AKIA", 4], ["-----BEGIN", 10], ["call 555 1234", 8], ["id 12345678", 8], ["x", 0]];
  for (const [t, h] of yes) assert.equal(tailReleasable(t, h, [], { prefixes: PREFIXES }), true, t);
  const no = [["key is sk-ant-api03-AbC", 16], ["key is sk-proj", 7], ["AKIAIOSF", 8], ["token eyJhbGci", 8],
    ["card 4111 1111 1", 11], ["id 123456789", 9], ["ghp_abc", 7], ["-----BEGIN RSA", 14]];
  for (const [t, h] of no) assert.equal(tailReleasable(t, h, [], { prefixes: PREFIXES }), false, t);
  // without the rules' literals only digit runs pass (fail closed)
  assert.equal(tailReleasable("key is sk", 2, [], { prefixes: [] }), false);
  // HTML: tags and entities are not content; a finding's span is redacted, so it never shows
  assert.equal(tailReleasable("page <b>12</b>", 9, [], { html: true, prefixes: PREFIXES }), true);
  assert.equal(tailReleasable("a &amp; sk-x", 4, [], { html: true, prefixes: PREFIXES }), false);
  assert.equal(tailReleasable("is sk-secretbody", 13, [{ start: 3, end: 16 }], { prefixes: PREFIXES }), true);
  assert.equal(tailReleasable("is sk-secretbody", 13, [{ start: 3, end: 10 }], { prefixes: PREFIXES }), false);
  assert.equal(tailReleasable("short", 9, [], { prefixes: PREFIXES }), false, "a held count beyond the text");
});

test("releaser: a call entering while a release runs waits; cancel and a newer token win", async () => {
  const timers = fakeTimers();
  const r = createReleaser({ quietMs: 10, timers });
  const log = [];
  let open;
  const t1 = await r.enter("k");
  r.settle("k", t1, () => { log.push("release-start"); return new Promise((res) => { open = res; }).then(() => log.push("release-end")); });
  timers.fire();
  await new Promise((res) => setImmediate(res));
  const entering = r.enter("k").then((t) => { log.push("entered"); return t; });
  await new Promise((res) => setImmediate(res));
  assert.deepEqual(log, ["release-start"]);
  open();
  const t2 = await entering;
  assert.deepEqual(log, ["release-start", "release-end", "entered"]);
  const t3 = await r.enter("k"); // a second call for the message overtakes the first
  r.settle("k", t2, () => log.push("stale"));
  assert.equal(timers.pending.length, 0, "the older call cannot schedule");
  r.settle("k", t3, () => log.push("fresh"));
  r.cancel("k");
  assert.equal(timers.fire(), 0);
  assert.equal(r.size, 0);
});

test("a near-format key in a final reply (send site) is redacted before send and its alert says tier near_format", async () => {
  const s = await setup();
  try {
    const key = `sk-ant-api03-${rand(90)}`; // issue 25: the exact rule wants 93 + AA
    await s.send.api.sendMessage(CHAT, `Here is the key: ${key}`);
    assert.equal(s.tg.requests.at(-1).body.text, "Here is the key: [REDACTED:anthropic-api-key]");
    const ev = (await s.sent()).at(-1);
    assert.equal(ev.text, "Here is the key: [REDACTED:anthropic-api-key]");
    const alerts = readAll(s.root, "dlp").filter((e) => e.event === "dlp:alert");
    assert.deepEqual(alerts.map((a) => [a.rule, a.tier, a.severity, a.action]),
      [["anthropic-api-key", "near_format", "high", "redact"]]);
    assert.equal(leaksPiece(allBytes(s.root), key), null);
  } finally { await s.done(); }
});
