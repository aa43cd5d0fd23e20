// The lock records of docs/log-format.md ("Locking"), judged from the outside: what a lock file must contain for a
// waiter to respect it or break it AT ONCE (a dead holder) rather than after the 2 s garbage rule or never; the pid
// bounds; this process's own records; the `.break` directory of a concurrent breaker (fresh: respected, > 10 s old:
// removed); errors that are not "the lock exists"; the lease let go after a failed append; descriptors closed.
// Every wait here is a lock timeout given as a parameter (a few hundred ms) or a waited-for event; no sleeps.
// Issue 15 (mutation testing): each case kills mutants of writer-lock.mjs / writer-io.mjs that the older tests let by.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import {
  existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { LockTimeout, openEventLog, withFileLock } from "../writer.mjs";

const tmp = () => mkdtempSync(join(tmpdir(), "evl-lockproto-"));
const startOf = (pid) => { // field 22 of /proc/<pid>/stat (proc(5)): the start time in clock ticks after boot
  const s = readFileSync(`/proc/${pid}/stat`, "latin1");
  return s.slice(s.lastIndexOf(")") + 2).split(" ")[19];
};
const ago = (p, ms) => utimesSync(p, new Date(Date.now() - ms), new Date(Date.now() - ms));
// A waiter's timeout far below the 2 s garbage rule: a lock broken within it was judged "dead holder", not "junk".
const SHORT = 700;
const got = (lock, ms = SHORT) => withFileLock(lock, async () => readFileSync(lock, "latin1"), ms);
const refused = (lock, ms = 250) => assert.rejects(withFileLock(lock, async () => "taken", ms), LockTimeout);

/** pid and start time of a process that has exited (and been reaped). */
async function deadProcess() {
  const child = spawn(process.execPath, ["-e", "process.stdin.resume(); process.stdin.on('end', () => process.exit(0))"],
    { stdio: ["pipe", "ignore", "inherit"] });
  await new Promise((r) => child.once("spawn", r));
  const start = startOf(child.pid);
  const exited = new Promise((r) => child.once("exit", r));
  child.stdin.end();
  await exited;
  return { pid: child.pid, start };
}

test("this process's lock record is exactly '<pid> <start>\\n', start = field 22 of /proc/self/stat", async () => {
  const lock = join(tmp(), "f.lock");
  assert.equal(await got(lock), `${process.pid} ${startOf(process.pid)}\n`);
  assert.ok(!existsSync(lock), "released after the function");
  // released when the function throws too, and the error is the function's
  await assert.rejects(withFileLock(lock, async () => { throw new Error("inside"); }), /inside/);
  assert.ok(!existsSync(lock));
});

test("a dead holder's record, with or without its start time, is broken at once (not by the 2 s junk rule)",
  async () => {
    const lock = join(tmp(), "f.lock");
    const dead = await deadProcess();
    for (const rec of [`${dead.pid} ${dead.start}\n`, `${dead.pid}\n`, `${dead.pid} ${dead.start}`, "4194304\n"]) {
      writeFileSync(lock, rec); // 4194304 = PID_MAX_LIMIT: still a pid, and no such process here (pid_max is lower)
      assert.match(await got(lock), new RegExp(`^${process.pid} `), JSON.stringify(rec));
      assert.ok(!existsSync(lock));
    }
  });

test("a live holder is waited for: a record with its start time, an old-format record, and this very process", async () => {
  const lock = join(tmp(), "f.lock");
  const child = spawn(process.execPath, ["-e", "process.stdin.resume(); process.stdin.on('end', () => process.exit(0))"],
    { stdio: ["pipe", "ignore", "inherit"] });
  await new Promise((r) => child.once("spawn", r));
  try {
    const own = startOf(process.pid);
    for (const rec of [`${child.pid} ${startOf(child.pid)}\n`, `${child.pid}\n`, `${process.pid}\n`,
      `${process.pid} ${own}\n`]) {
      writeFileSync(lock, rec);
      await refused(lock);
      assert.equal(readFileSync(lock, "latin1"), rec, "a live holder's lock is left alone");
      assert.ok(!existsSync(lock + ".want"), "the waiter that gave up took its .want back");
    }
    // pid 1 (init of this pid namespace: always running) is a pid like any other, even in an old, aged lock file
    writeFileSync(lock, "1\n");
    ago(lock, 2500);
    await refused(lock);
    assert.equal(readFileSync(lock, "latin1"), "1\n");
    // this process's pid with another start time is a former process with the same pid: dead, broken at once
    writeFileSync(lock, `${process.pid} ${Number(own) + 1}\n`);
    assert.equal(await got(lock), `${process.pid} ${own}\n`);
  } finally {
    child.stdin.end();
  }
});

test("not a pid (0, PID_MAX_LIMIT + 1, 8 digits): junk, respected while fresh, broken once older than 2 s", async () => {
  const lock = join(tmp(), "f.lock");
  for (const junk of ["0\n", "4194305\n", "12345678\n", "", "1 x\n"]) {
    writeFileSync(lock, junk);
    ago(lock, 1500); // junk younger than 2 s: a writer between create and write looks like this
    await refused(lock);
    assert.equal(readFileSync(lock, "latin1"), junk, JSON.stringify(junk));
    ago(lock, 2500);
    assert.match(await got(lock), new RegExp(`^${process.pid} `), JSON.stringify(junk));
  }
});

test("a concurrent breaker's .break directory: a fresh one is respected, one older than 10 s is removed", async () => {
  const root = tmp();
  const lock = join(root, "f.lock");
  const dead = await deadProcess();
  writeFileSync(lock, `${dead.pid} ${dead.start}\n`);
  mkdirSync(lock + ".break");
  await refused(lock); // someone else is breaking this lock: not ours to break too
  assert.ok(existsSync(lock) && statSync(lock + ".break").isDirectory());
  ago(lock + ".break", 9000);
  await refused(lock);
  assert.ok(existsSync(lock + ".break"), "9 s is not stale yet");
  ago(lock + ".break", 11000); // that breaker died: its directory goes, then the dead holder's lock is broken
  assert.match(await got(lock, 2000), new RegExp(`^${process.pid} `));
  assert.ok(!existsSync(lock + ".break"));
});

test("an error other than 'the lock exists' is raised at once, not waited on", async () => {
  const root = tmp();
  await assert.rejects(withFileLock(join(root, "missing-dir", "f.lock"), async () => 1, 60000), { code: "ENOENT" });
  writeFileSync(join(root, "file"), "");
  await assert.rejects(withFileLock(join(root, "file", "f.lock"), async () => 1, 60000), { code: "ENOTDIR" });
});

const REL = "raw/telegram/chats/42/2026/11/30.jsonl";
const ev = (over = {}) => ({ event: "message:sent", channel: "telegram", chat_id: "42",
  ts: "2026-11-30T10:00:00.000Z", text: "hi", ...over });

test("a failed append lets go of its lease at once (the next append starts from the files, not a cache)", async () => {
  const root = tmp();
  // a lease that would be held for a minute after a successful append
  const log = await openEventLog({ root, fsync: "never", lease: { idleMs: 60000 } });
  await log.append(ev({ ts: "2026-11-29T10:00:00.000Z" }));
  await log.append(ev()); // seals the 29th
  const day29 = join(root, "raw/telegram/chats/42/2026/11/29.jsonl");
  assert.ok(existsSync(day29 + ".lock") || existsSync(join(root, REL + ".lock")));
  // damage the sealed day: the next append to it is refused with DamagedLog, and its lock must not stay held
  writeFileSync(day29, readFileSync(day29, "utf8").replace('"text":"hi"', '"text":"ho"'));
  await assert.rejects(log.append(ev({ ts: "2026-11-29T11:00:00.000Z" })), { name: "DamagedLog" });
  assert.ok(!existsSync(day29 + ".lock"), "the lock of the refused append was let go");
  assert.ok(existsSync(join(root, REL + ".lock")), "the other day's lease is still held (idle 60 s)");
  await log.close();
  assert.ok(!existsSync(join(root, REL + ".lock")), "close() lets go of every lease");
});

const openFds = () => readdirSync("/proc/self/fd").length;

test("close() closes every descriptor the writer opened, also after a failed append", async () => {
  const root = tmp();
  const warm = await openEventLog({ root: join(root, "warm"), fsync: "batch" });
  await warm.append(ev()); // the first use loads what the process keeps open anyway (thread pool, modules)
  await warm.close();
  const before = openFds();
  const log = await openEventLog({ root, fsync: "batch" });
  for (const chat of ["1", "2", "3"]) await log.append(ev({ chat_id: chat }));
  await log.appendStream("dlp/alerts.jsonl", ev({ event: "dlp:alert" }));
  assert.ok(openFds() > before, "the writer keeps its files open between appends");
  await log.close();
  assert.equal(openFds(), before, "every descriptor closed");
  // a failed append (the day's seal stream cannot be appended to) closes the day file's descriptor too
  await log.append(ev({ chat_id: "9", ts: "2026-11-29T10:00:00.000Z" }));
  await log.append(ev({ chat_id: "9" }));
  const day29 = join(root, "raw/telegram/chats/9/2026/11/29.jsonl");
  writeFileSync(day29, readFileSync(day29, "utf8").replace('"text":"hi"', '"text":"ho"'));
  await assert.rejects(log.append(ev({ chat_id: "9", ts: "2026-11-29T11:00:00.000Z" })), { name: "DamagedLog" });
  await log.close();
  assert.equal(openFds(), before, "no descriptor left open after the failed append");
});
