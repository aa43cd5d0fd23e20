// The lock lease of the JS writer and the lock records of docs/log-format.md ("Locking"): pid + start time, garbage
// contents, pid reuse, a waiter that gets the lock from a busy lease holder, release on idle / close / exit.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { openEventLog, withFileLock } from "../writer.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const tmp = () => mkdtempSync(join(tmpdir(), "evl-lease-"));
const ev = (over = {}) => ({ event: "message:sent", channel: "telegram", chat_id: "42",
  ts: "2026-11-30T10:00:00.000Z", text: "hi", ...over });
const REL = "raw/telegram/chats/42/2026/11/30.jsonl";
const lines = (p) => readFileSync(p, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const until = async (cond, what, ms = 60000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};
const old = (p) => utimesSync(p, new Date(Date.now() - 60000), new Date(Date.now() - 60000));

test("garbage lock contents are stale once 2 s old: never a crash, never a block for ever", async () => {
  const root = tmp();
  const lock = join(root, "f.lock");
  for (const junk of ["0\n", "-1\n", "12345678901234567890\n", "junk", "", "4194305\n", "1 2 3\n", "\u0661\u0662\n"]) {
    writeFileSync(lock, junk);
    old(lock);
    assert.equal(await withFileLock(lock, async () => "got it", 10000), "got it", JSON.stringify(junk));
    assert.ok(!existsSync(lock));
  }
  // fresh junk is respected for 2 s (a writer between create and write looks like this), then broken
  writeFileSync(lock, "0\n");
  assert.equal(await withFileLock(lock, async () => "later", 20000), "later");
});

test("a lock whose pid was reused by another process (start time differs) is stale", async () => {
  const root = tmp();
  const lock = join(root, "f.lock");
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
  try {
    await until(() => existsSync(`/proc/${child.pid}/stat`), "the child");
    const stat = readFileSync(`/proc/${child.pid}/stat`, "latin1");
    const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    writeFileSync(lock, `${child.pid} ${Number(start) + 1}\n`); // same pid, another process's start time
    assert.equal(await withFileLock(lock, async () => "broken", 10000), "broken");
    writeFileSync(lock, `${child.pid} ${start}\n`); // the live holder itself: respected
    const waiting = withFileLock(lock, async () => 1, 1000);
    await until(() => existsSync(`${lock}.want`), "the waiter's .want");
    await assert.rejects(waiting, { name: "LockTimeout" });
    assert.ok(!existsSync(`${lock}.want`), "a waiter that gives up takes its .want back");
  } finally {
    child.kill();
  }
});

test("lease: the lock is kept across appends and let go when idle", async () => {
  const root = tmp();
  // idle 1 s: long enough that a loaded machine does not release it between the append and the check below
  const log = await openEventLog({ root, fsync: "never", lease: { idleMs: 1000 } });
  await log.append(ev());
  const lock = join(root, REL + ".lock");
  assert.ok(existsSync(lock), "held after the append");
  await until(() => !existsSync(lock), "the idle release");
  await until(() => log.leases.leases.size === 0, "the idle lease forgotten (no entry per file ever written)");
  await log.append(ev({ text: "again" })); // taken again, chain continues
  assert.deepEqual(lines(join(root, REL)).map((e) => e.text), ["hi", "again"]);
  await log.close();
  assert.ok(!existsSync(lock));
});

test("lease: a waiting writer in another process gets the lock while this one appends without pause", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  await log.append(ev({ text: "first" }));
  const writerUrl = new URL("../writer.mjs", import.meta.url).href;
  // another process appends 20 events one at a time (each takes and releases the lock: no lease, idleMs 0)
  const child = spawn(process.execPath, ["--input-type=module", "-e", `
    const { openEventLog } = await import(${JSON.stringify(writerUrl)});
    const log = await openEventLog({ root: ${JSON.stringify(root)}, fsync: "never", lease: { idleMs: 0 } });
    for (let i = 0; i < 20; i++) await log.append({ event: "message:sent", channel: "telegram", chat_id: "42",
      ts: "2026-11-30T10:00:00Z", text: "child" });
    process.stdout.write("done");`], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d) => { out += d; });
  const exited = new Promise((r) => child.on("exit", r));
  let n = 0;
  let done = false;
  exited.then(() => { done = true; });
  while (!done) { // a busy lease holder: appends back to back, never idle
    await log.append(ev({ text: "parent" }));
    n++;
  }
  assert.equal(await exited, 0);
  assert.equal(out, "done");
  await log.close();
  const evs = lines(join(root, REL));
  assert.equal(evs.filter((e) => e.text === "child").length, 20);
  assert.equal(evs.filter((e) => e.text === "parent").length, n);
  const texts = evs.map((e) => e.text);
  assert.ok(texts.slice(texts.indexOf("child")).includes("parent"), "the parent kept appending meanwhile");
});

test("lease: a process that exits while holding it leaves no lock behind", async () => {
  const root = tmp();
  const writerUrl = new URL("../writer.mjs", import.meta.url).href;
  const child = spawn(process.execPath, ["--input-type=module", "-e", `
    const { openEventLog } = await import(${JSON.stringify(writerUrl)});
    const log = await openEventLog({ root: ${JSON.stringify(root)}, fsync: "never", lease: { idleMs: 600000 } });
    await log.append({ event: "message:sent", channel: "telegram", chat_id: "42", ts: "2026-11-30T10:00:00Z" });
    process.exit(0);`], { stdio: "inherit" });
  assert.equal(await new Promise((r) => child.on("exit", r)), 0);
  assert.equal(lines(join(root, REL)).length, 1);
  assert.ok(!existsSync(join(root, REL + ".lock")));
});
