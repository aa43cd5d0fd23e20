// The tap's fail-closed paths (issue 15 item 1: mutants of tap-core.mjs that the tap tests let live). A missing
// scanner, a scanner fault on a bot-settings call, a fault while the alert stream or the log cannot be written: the
// call is refused every time, nothing reaches Telegram, the alert names the failure and never the content.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { allBytes, botWithTap, createTap, fakeTelegram, readAll, realDeps, tempRoot } from "./tap-helpers.mjs";

const CHAT = 515151;
const REFUSED = /refused: DLP scanner error/;

async function setup(over) {
  const root = tempRoot();
  const tg = await fakeTelegram();
  const lines = [];
  const deps = realDeps(root).then((d) => ({ ...d, ...over }));
  const tap = createTap({ deps, stderr: (l) => lines.push(l) });
  const { bot, inner } = botWithTap(tg, tap);
  return { root, tg, tap, bot, inner, stderr: lines,
    done: async () => { await tg.close(); rmSync(root, { recursive: true, force: true }); } };
}
const alerts = (root) => readAll(root, "dlp").filter((e) => e.event === "dlp:alert");
const sent = (root) => (existsSync(join(root, "raw")) ? readAll(root, "raw") : []).filter((e) => e.event === "message:sent");
const faulty = (msg) => ({ filter() { throw new Error(msg); } });

test("no scanner (the rules failed to load): refused, the alert carries the load error, message:sent records it", async () => {
  const s = await setup({ scanner: null, scannerError: new Error("rules.json: Unexpected token") });
  try {
    await assert.rejects(s.bot.api.sendMessage(CHAT, "the text must not leave"), REFUSED);
    assert.equal(s.tg.requests.length, 0);
    assert.equal(s.inner.length, 0, "the call never reached the next transformer");
    const [al] = alerts(s.root);
    assert.deepEqual([al.rule, al.action, al.severity, al.source, al.error, al.chat_id, al.method],
      ["scanner-error", "block", "critical", "tap", "rules.json: Unexpected token", String(CHAT), "sendMessage"]);
    await s.tap.flush();
    const [ev] = sent(s.root);
    assert.equal(ev.id, al.log_event, "the alert points at the message:sent line");
    assert.deepEqual(ev.outcome, { ok: false, description: "refused by openclaw-eventlog: DLP scanner error" });
    assert.deepEqual(ev.dlp, { action: "block", rules: ["scanner-error"], alerts: [al.id] });
    assert.equal(ev.chat_id, String(CHAT));
    assert.equal(ev.text, undefined);
    assert.ok(!allBytes(s.root).includes("must not leave"), "the refused text is nowhere on disk");
  } finally { await s.done(); }
});

test("no scanner and no error recorded: still refused, the alert says there is no scanner", async () => {
  const s = await setup({ scanner: null, scannerError: undefined });
  try {
    await assert.rejects(s.bot.api.sendMessage(CHAT, "x"), REFUSED);
    assert.equal(s.tg.requests.length, 0);
    assert.equal(alerts(s.root)[0].error, "no DLP scanner");
    await s.bot.api.getMe(); // content-free calls pass without a scanner (the gateway can start and poll)
    await s.bot.api.sendChatAction(CHAT, "typing");
    assert.deepEqual(s.tg.requests.map((r) => r.method), ["getMe", "sendChatAction"]);
  } finally { await s.done(); }
});

test("a scanner fault on a bot-settings call: refused, the alert has no log event and no message:sent is written", async () => {
  const s = await setup({ scanner: faulty("boom ".repeat(100)) });
  try {
    await assert.rejects(s.bot.api.setMyDescription("my description"), REFUSED);
    assert.equal(s.tg.requests.length, 0);
    const [al] = alerts(s.root);
    assert.equal(al.log_event, null);
    assert.equal(al.chat_id, "unknown");
    assert.equal(al.error, "boom ".repeat(100).slice(0, 200), "the error is cut to 200 characters");
    await s.tap.flush();
    assert.deepEqual(sent(s.root), []);
  } finally { await s.done(); }
});

test("a scanner fault while the alert stream cannot be written: still refused with the scanner error", async () => {
  const s = await setup({ scanner: faulty("injected") });
  try {
    mkdirSync(join(s.root, "dlp", "alerts.jsonl"), { recursive: true }); // a directory where the stream file goes
    await assert.rejects(s.bot.api.sendMessage(CHAT, "hello"), REFUSED);
    assert.equal(s.tg.requests.length, 0);
    await s.tap.flush();
    assert.equal(sent(s.root)[0].outcome.ok, false, "the log still records the refusal");
  } finally { await s.done(); }
});

test("a scanner fault while the log cannot be written: still refused with the scanner error", async () => {
  const s = await setup({ scanner: faulty("injected") });
  try {
    mkdirSync(join(s.root, "raw", "telegram"), { recursive: true });
    writeFileSync(join(s.root, "raw", "telegram", "chats"), "not a directory");
    await assert.rejects(s.bot.api.sendMessage(CHAT, "hello"), REFUSED);
    assert.equal(s.tg.requests.length, 0);
    assert.equal(alerts(s.root)[0].rule, "scanner-error");
  } finally { await s.done(); }
});

test("with a working scanner a bot-settings call goes out (no chat: no partition check, no message:sent)", async () => {
  const s = await setup({});
  try {
    await s.bot.api.setMyDescription("a bot that helps");
    assert.deepEqual(s.tg.requests.map((r) => [r.method, r.body.description]), [["setMyDescription", "a bot that helps"]]);
    await s.tap.flush();
    assert.deepEqual(sent(s.root), []);
  } finally { await s.done(); }
});

test("Telegram unreachable: the error reaches the caller and message:sent records the failed call", async () => {
  const s = await setup({});
  try {
    await s.tg.close();
    await assert.rejects(s.bot.api.sendMessage(CHAT, "hello"));
    await s.tap.flush();
    const [ev] = sent(s.root);
    assert.equal(ev.outcome.ok, false);
    assert.equal(ev.text, "hello");
    assert.equal(ev.direction, "out");
  } finally { await s.done(); }
});

test("the day's month directory is a file: refused before anything leaves (the partition check looks at yyyy/mm)", async () => {
  const s = await setup({});
  try {
    const d = new Date();
    const year = join(s.root, "raw", "telegram", "chats", String(CHAT), String(d.getUTCFullYear()));
    mkdirSync(year, { recursive: true });
    writeFileSync(join(year, String(d.getUTCMonth() + 1).padStart(2, "0")), "not a directory");
    await assert.rejects(s.bot.api.sendMessage(CHAT, "hello"), /event log cannot be written/);
    assert.equal(s.tg.requests.length, 0);
    assert.ok(s.stderr.some((l) => l.includes("is not a directory")));
  } finally { await s.done(); }
});

test("a file higher up the partition path (raw/telegram/chats): refused before anything leaves, with a working scanner",
  async () => {
    const s = await setup({});
    try {
      mkdirSync(join(s.root, "raw", "telegram"), { recursive: true });
      writeFileSync(join(s.root, "raw", "telegram", "chats"), "not a directory");
      await assert.rejects(s.bot.api.sendMessage(CHAT, "hello"), /event log cannot be written/);
      assert.equal(s.tg.requests.length, 0);
      assert.ok(s.stderr.some((l) => l.includes(`sendMessage to chat ${CHAT} refused`)), s.stderr.join("\n"));
    } finally { await s.done(); }
  });

test("a partition path broken after a good call: the check is cached for 1 s only, then refuses again", async () => {
  const s = await setup({});
  const realNow = Date.now;
  try {
    await s.bot.api.sendMessage(CHAT, "first");
    await s.tap.flush();
    assert.equal(s.tg.requests.length, 1);
    // the month directory replaced by a file: the next check (after the 1 s cache) must see it
    const d = new Date();
    const month = join(s.root, "raw", "telegram", "chats", String(CHAT), String(d.getUTCFullYear()),
      String(d.getUTCMonth() + 1).padStart(2, "0"));
    rmSync(month, { recursive: true, force: true });
    writeFileSync(month, "not a directory");
    const shift = 1500; // the clock moves on instead of the test sleeping
    Date.now = () => realNow() + shift;
    await assert.rejects(s.bot.api.sendMessage(CHAT, "second"), /event log cannot be written/);
    assert.equal(s.tg.requests.length, 1, "the second call never left");
  } finally {
    Date.now = realNow;
    await s.done();
  }
});

test("an append that failed with the partition path intact (the day file is a directory): the next call is refused",
  async () => {
    const s = await setup({});
    try {
      const d = new Date();
      const dayFile = join(s.root, "raw", "telegram", "chats", String(CHAT), String(d.getUTCFullYear()),
        String(d.getUTCMonth() + 1).padStart(2, "0"), `${String(d.getUTCDate()).padStart(2, "0")}.jsonl`);
      mkdirSync(dayFile, { recursive: true }); // the yyyy/mm chain is fine; the append itself fails (EISDIR)
      await s.bot.api.sendMessage(CHAT, "first"); // went out; its message:sent cannot be written
      await s.tap.flush();
      assert.equal(s.tg.requests.length, 1);
      assert.ok(s.tap.degraded, "the failed append leaves the tap degraded");
      assert.ok(s.stderr.some((l) => l.includes("cannot append message:sent")), s.stderr.join("\n"));
      await assert.rejects(s.bot.api.sendMessage(CHAT, "second"), /event log cannot be written/);
      assert.equal(s.tg.requests.length, 1, "nothing leaves that the log cannot record");
      assert.ok(s.stderr.some((l) => /refused: event log unusable: EISDIR/.test(l)), s.stderr.join("\n"));
    } finally { await s.done(); }
  });
