// The writer in its worker thread (writer-thread.mjs, what the gateway's tap runs): the same bytes as the in-thread
// writer, the same errors, loud failure when the thread dies (pending and later appends reject, the tap refuses
// sends), locks let go, and a process that never closes the writer still exits once its appends settled.
// The whole writer suite also runs against the thread: EVENTLOG_WRITER_THREAD=1 node --test test/writer*.test.mjs
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { BadEvent, openEventLog, threadFromEnv } from "../writer.mjs";
import { WriterThreadDead } from "../writer-thread.mjs";
import { botWithTap, createTap, fakeTelegram } from "./tap-helpers.mjs";
import { createScanner, loadKey, loadRules } from "../dlp.mjs";
import { chainOk } from "./writer-helpers.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const tmp = () => mkdtempSync(join(tmpdir(), "writer-thread-test-"));
const REL = "raw/telegram/chats/42/2026/11/30.jsonl";

/** Fixed ids and salts so two writers must produce the same bytes; content of every kind the encoder handles. */
function events() {
  const out = [];
  for (let i = 0; i < 40; i++) {
    const id = `01KB0000000000000000000${String(i).padStart(3, "0")}`.slice(0, 26);
    out.push({ event: i % 2 ? "message:sent" : "message:received", channel: "telegram", chat_id: i % 3 ? "42" : 42,
      ts: i % 5 ? "2026-11-30T10:00:00+03:00" : "2026-11-30T10:00:00.123456Z", id,
      ...(i % 4 ? { text: `привет 🎉 "q" \\ ${i}`, salt: i.toString(16).padStart(32, "0") } : {}),
      payload: i % 4 ? { chat_id: 42, text: "x".repeat(i * 50), n: [1.5, -0, 1e-6, 2 ** 53 - 1, null, true] } : undefined,
      big: 1234567890123456789n, when: new Date(Date.UTC(2026, 10, 30)), nested: { b: 1, a: { "\u{10000}": 1, "\uffff": 2 } } });
  }
  return out;
}

const filesOf = (root) => {
  const out = {};
  const walk = (d, rel) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(join(d, e.name), r);
      else if (!e.name.endsWith(".lock") && !r.startsWith("heads/")) out[r] = readFileSync(join(d, e.name), "utf8");
    }
  };
  walk(root, "");
  return out;
};

test("thread and in-thread writers write the same bytes (days, streams, appendMany) and return the same stored events",
  async () => {
    const roots = [tmp(), tmp()];
    const results = [];
    for (const [i, thread] of [[0, false], [1, true]]) {
      const log = await openEventLog({ root: roots[i], fsync: "never", thread });
      const evs = events();
      const stored = [];
      for (const e of evs.slice(0, 10)) stored.push(await log.append(e));
      stored.push(...await Promise.all(evs.slice(10, 30).map((e) => log.append(e)))); // one group commit
      stored.push(...await log.appendMany(evs.slice(30)));
      stored.push(await log.appendStream("dlp/alerts.jsonl", { event: "dlp:alert", channel: "telegram", chat_id: "42",
        ts: "2026-11-30T10:00:00Z", id: "01KB0000000000000000000999", rule: "r" }));
      results.push(stored);
      await log.close();
      if (thread) await log.terminate();
    }
    assert.deepEqual(filesOf(roots[1]), filesOf(roots[0]));
    assert.ok(Object.keys(filesOf(roots[0])).includes(REL));
    chainOk(roots[1], REL);
    assert.deepEqual(results[1], results[0]);
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  });

test("errors come back with their class and fields; a value that cannot be handed over is a BadEvent", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never", thread: true });
  try {
    await assert.rejects(log.append({ event: "bad" }), (e) => e instanceof BadEvent && e.code === "EVENTLOG_BAD_EVENT"
      && /missing required field/.test(e.message));
    const good = { event: "a:b", channel: "telegram", chat_id: "1", ts: "2026-11-30T10:00:00Z" };
    await assert.rejects(log.appendMany([good, { ...good, ts: "yesterday" }]), (e) => e instanceof BadEvent && e.index === 1);
    await assert.rejects(log.append({ ...good, f: () => 1 }), (e) => e instanceof BadEvent && /handed to the writer/.test(e.message));
    await assert.rejects(log.appendStream("../x.jsonl", good), /not a stream path/);
    assert.equal(existsSync(join(root, "raw")), false, "nothing written by a refused event");
  } finally { await log.terminate(); rmSync(root, { recursive: true, force: true }); }
});

test("the thread dies: appends in flight and every later one reject loudly, its locks are let go", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never", thread: true, lease: { idleMs: 600000 } });
  const e = { event: "a:b", channel: "telegram", chat_id: "42", ts: "2026-11-30T10:00:00Z" };
  await log.append(e);
  assert.ok(existsSync(join(root, REL + ".lock")), "the lease holds the lock");
  const inFlight = Array.from({ length: 50 }, () => log.append(e));
  const settled = Promise.allSettled(inFlight);
  await log.worker.terminate(); // what an uncaught fault or out-of-memory in the thread comes to
  const results = await settled;
  for (const r of results) {
    if (r.status === "rejected") assert.ok(r.reason instanceof WriterThreadDead && r.reason.code === "EVENTLOG_WRITER_DEAD");
  }
  const landed = readFileSync(join(root, REL), "utf8").split("\n").length - 1;
  assert.equal(landed, 1 + results.filter((r) => r.status === "fulfilled").length, "every resolved append is on disk");
  await assert.rejects(log.append(e), (err) => err instanceof WriterThreadDead && /writer thread exited/.test(err.message));
  for (let i = 0; i < 100 && existsSync(join(root, REL + ".lock")); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(!existsSync(join(root, REL + ".lock")), "the dead thread's lock is removed");
  rmSync(root, { recursive: true, force: true });
});

test("the thread dies under the tap: the next outbound call is refused, nothing reaches Telegram", async () => {
  const root = tmp();
  const tg = await fakeTelegram();
  try {
    const log = await openEventLog({ root, fsync: "never", thread: true });
    const rules = loadRules();
    const errs = [];
    const tap = createTap({ deps: { root, log, rulesVersion: rules.version,
      scanner: createScanner({ rules, key: loadKey(root) }) }, stderr: (l) => errs.push(l) });
    const { bot } = botWithTap(tg, tap);
    await bot.api.sendMessage(4242, "first");
    await tap.flush();
    assert.equal(tg.requests.length, 1);
    await log.worker.terminate();
    await bot.api.sendMessage(4242, "second"); // already out: its message:sent append fails, the tap is degraded
    await tap.flush();
    assert.ok(errs.some((l) => /cannot append message:sent/.test(l) && /EVENTLOG_WRITER_DEAD/.test(l)), errs.join("\n"));
    await assert.rejects(bot.api.sendMessage(4242, "third"), /event log cannot be written/);
    assert.equal(tg.requests.length, 2, "the third call never left");
  } finally { await tg.close(); rmSync(root, { recursive: true, force: true }); }
});

test("a process that appends and never closes the threaded writer exits by itself, with its lines and no lock", async () => {
  const root = tmp();
  const writerUrl = new URL("../writer.mjs", import.meta.url).href;
  const child = spawn(process.execPath, ["--input-type=module", "-e", `
    const { openEventLog } = await import(${JSON.stringify(writerUrl)});
    const log = await openEventLog({ root: ${JSON.stringify(root)}, fsync: "batch", thread: true,
      lease: { idleMs: 600000 } });
    for (let i = 0; i < 20; i++) log.append({ event: "a:b", channel: "telegram", chat_id: "42",
      ts: "2026-11-30T10:00:00Z", n: i }).catch((e) => { console.error(e); process.exitCode = 3; });`],
  { stdio: "inherit" });
  const code = await new Promise((r) => child.on("exit", r)); // the test runner's timeout catches a hang
  assert.equal(code, 0);
  assert.equal(readFileSync(join(root, REL), "utf8").split("\n").length - 1, 20, "appends in flight kept it alive");
  chainOk(root, REL);
  assert.ok(!existsSync(join(root, REL + ".lock")), "the lease's lock is removed at exit");
  rmSync(root, { recursive: true, force: true });
});

test("the writer thread's modules do no synchronous file I/O (only the exit handler's unlinkSync)", () => {
  for (const [f, allowed] of [["writer-thread.mjs", ["unlinkSync("]], ["writer-worker.mjs", []]]) {
    const src = readFileSync(join(here, "..", f), "utf8");
    assert.deepEqual(src.match(/\b\w+Sync\s*\(/g) ?? [], allowed, `${f} calls a *Sync function`);
  }
});

test("terminate() with appends in flight: each one settles (written, or rejected as WriterThreadDead), none hangs",
  async () => {
    const root = tmp();
    const log = await openEventLog({ root, fsync: "batch", thread: true });
    const e = { event: "a:b", channel: "telegram", chat_id: "42", ts: "2026-11-30T10:00:00Z" };
    const inFlight = Array.from({ length: 30 }, () => log.append(e));
    await log.terminate();
    const results = await Promise.allSettled(inFlight);
    const ok = results.filter((r) => r.status === "fulfilled").length;
    for (const r of results) if (r.status === "rejected") assert.ok(r.reason instanceof WriterThreadDead, String(r.reason));
    const lines = existsSync(join(root, REL)) ? readFileSync(join(root, REL), "utf8").split("\n").length - 1 : 0;
    assert.ok(lines >= ok, "every resolved append is on disk");
    await assert.rejects(log.append(e), WriterThreadDead);
    rmSync(root, { recursive: true, force: true });
  });

test("$EVENTLOG_WRITER_THREAD turns the thread on only when it is exactly 1 (the one reader, shared by tap.mjs)", () => {
  assert.equal(threadFromEnv({ EVENTLOG_WRITER_THREAD: "1" }), true);
  for (const v of [undefined, "", "0", "true", "yes", " 1", "1 "]) {
    assert.equal(threadFromEnv(v === undefined ? {} : { EVENTLOG_WRITER_THREAD: v }), false, String(v));
  }
  assert.match(readFileSync(join(here, "..", "tap.mjs"), "utf8"), /threadFromEnv\(process\.env\)/);
  assert.doesNotMatch(readFileSync(join(here, "..", "tap.mjs"), "utf8"), /EVENTLOG_WRITER_THREAD ===/);
});
