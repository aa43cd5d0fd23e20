// The writer thread (writer-thread.mjs / writer-worker.mjs) where the thread tests did not look (issue 15 survivors):
// a file-system error keeps its code, errno, syscall and path across the thread; a failure to open the log in the
// thread is that error, not "exited while starting"; the thread's warnings reach `warn`; after terminate() appends
// say so; and a lock the thread let go is never removed by this side later (it may be another writer's by then).
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openEventLog, withFileLock } from "../writer.mjs";
import { WriterThreadDead } from "../writer-thread.mjs";

const tmp = () => mkdtempSync(join(tmpdir(), "writer-thread-edges-"));
const ev = (day) => ({ event: "message:received", channel: "telegram", chat_id: "42", ts: `2026-11-${day}T10:00:00Z` });
const REL = (day) => `raw/telegram/chats/42/2026/11/${day}.jsonl`;

test("a file-system error comes back through the thread with its code, errno, syscall and path", async () => {
  const root = tmp();
  mkdirSync(join(root, REL("30")), { recursive: true }); // the day file is a directory
  const log = await openEventLog({ root, fsync: "never", thread: true });
  try {
    await assert.rejects(log.append(ev("30")), (e) => {
      assert.deepEqual([e.code, e.errno, e.syscall, e.path], ["EISDIR", -21, "open", join(root, REL("30"))]);
      return true;
    });
  } finally { await log.terminate(); }
});

test("the log cannot be opened in the thread (root is a file): openEventLog rejects with that error", async () => {
  const root = join(tmp(), "root");
  writeFileSync(root, "not a directory");
  await assert.rejects(openEventLog({ root, fsync: "never", thread: true }), (e) => {
    assert.equal(e.code, "EEXIST", String(e));
    assert.equal(e.syscall, "mkdir");
    return true;
  });
});

test("a warning in the thread (a failed auto-seal) reaches warn on this side", async () => {
  const root = tmp();
  const lines = [];
  const log = await openEventLog({ root, fsync: "never", thread: true, warn: (l) => lines.push(l) });
  try {
    await log.append(ev("29"));
    mkdirSync(join(root, "seals/telegram/42.jsonl"), { recursive: true }); // the seal stream cannot be written
    await log.append(ev("30")); // a new day: auto-seal of the 29th fails, the append itself succeeds
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(lines[0], /auto-seal of telegram\/42 before 2026-11-30 failed: .*EISDIR/);
  } finally { await log.terminate(); }
});

test("after terminate() every append rejects: WriterThreadDead saying the writer was terminated", async () => {
  const log = await openEventLog({ root: tmp(), fsync: "never", thread: true });
  await log.append(ev("30"));
  await log.terminate();
  await assert.rejects(log.append(ev("30")), (e) => e instanceof WriterThreadDead && e.code === "EVENTLOG_WRITER_DEAD"
    && /the event-log writer was terminated/.test(e.message));
});

test("a lock the thread let go, now held by someone else, is not removed when the thread is terminated", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never", thread: true, lease: { idleMs: 600000 } });
  await log.append(ev("30"));
  const lock = join(root, REL("30") + ".lock");
  assert.ok(existsSync(lock), "the thread's lease holds the day's lock");
  await log.close(); // the thread lets go of it
  assert.equal(existsSync(lock), false);
  await withFileLock(lock, async () => {
    const mine = readFileSync(lock, "utf8");
    await log.terminate();
    assert.equal(existsSync(lock) && readFileSync(lock, "utf8"), mine, "terminate() removed a lock it no longer held");
  });
});
