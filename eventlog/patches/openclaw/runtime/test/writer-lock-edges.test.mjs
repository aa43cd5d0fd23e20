// The lock protocol where the single-user test run did not reach (issue 15, writer-lock.mjs survivors):
// - a holder that belongs to another user: kill(pid, 0) says EPERM, which means "alive" — the lock is respected.
//   The writer runs as nobody (uid 65534) in a child, the recorded holder is pid 1 (root's init). Needs root to
//   switch users: as another user this test is reported as skipped with that reason, never silently passed.
// - a lock record that cannot be written (the file-size limit is 0: write() fails with EFBIG, as it would with ENOSPC
//   on a full disk): the append fails with that error and no empty lock file is left behind for others to wait on.
// - a lease let go (close()) is forgotten by the exit handler: a process exiting later does not remove the lock
//   file, which by then may be another writer's.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { withFileLock } from "../writer.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const LOCK_MJS = pathToFileURL(join(here, "..", "writer-lock.mjs")).href;
const WRITER_MJS = pathToFileURL(join(here, "..", "writer.mjs")).href;

test("a lock held by another user's live process (kill → EPERM) is waited for, not broken", (t) => {
  if (process.getuid?.() !== 0) { t.skip("needs root to run the waiter as another user (uid 65534)"); return; }
  const dir = mkdtempSync(join(tmpdir(), "evl-lock-eperm-"));
  chmodSync(dir, 0o777);
  const lock = join(dir, "x.jsonl.lock");
  writeFileSync(lock, "1\n"); // an old-format record (no start time): only kill(pid, 0) can tell
  chmodSync(lock, 0o644);
  // imported as root (the module files may be private to root), then the process becomes nobody
  const child = `
    const { acquireLock, holderAlive } = await import(${JSON.stringify(LOCK_MJS)});
    process.setgid(65534); process.setuid(65534);
    const alive = await holderAlive("1\\n");
    let out;
    try { await acquireLock(${JSON.stringify(lock)}, 400); out = "acquired"; } catch (e) { out = e.name; }
    console.log(JSON.stringify({ alive, out, uid: process.getuid() }));`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", child], { encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { alive: true, out: "LockTimeout", uid: 65534 });
  assert.equal(readFileSync(lock, "utf8"), "1\n", "the other user's lock was broken");
});

test("a lock record that cannot be written (EFBIG): the append fails with it and leaves no lock file", () => {
  const root = mkdtempSync(join(tmpdir(), "evl-lock-efbig-"));
  const dir = join(root, "raw/telegram/chats/42/2026/11");
  mkdirSync(dir, { recursive: true });
  const child = `
    const { openEventLog } = await import(${JSON.stringify(WRITER_MJS)});
    const log = await openEventLog({ root: ${JSON.stringify(root)}, fsync: "never", thread: false });
    try {
      await log.append({ event: "message:received", channel: "telegram", chat_id: "42", ts: "2026-11-30T10:00:00Z" });
      console.log("appended");
    } catch (e) { console.log(e.code); }`;
  // SIGXFSZ ignored (inherited through exec), file size limit 0: every write to a file fails with EFBIG
  const r = spawnSync("/bin/sh", ["-c", 'trap "" XFSZ; ulimit -f 0; exec "$0" --input-type=module -e "$1"',
    process.execPath, child], { encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), "EFBIG");
  assert.deepEqual(readdirSync(dir).filter((n) => n.endsWith(".lock")), [], "an empty lock file was left behind");
  assert.equal(existsSync(join(dir, "30.jsonl")), false);
});

test("a process that let go of its lease does not remove the lock at exit (another writer holds it by then)", async () => {
  const root = mkdtempSync(join(tmpdir(), "evl-lock-exit-"));
  const child = `
    const { openEventLog } = await import(${JSON.stringify(WRITER_MJS)});
    const log = await openEventLog({ root: ${JSON.stringify(root)}, fsync: "never", thread: false, lease: { idleMs: 600000 } });
    await log.append({ event: "message:received", channel: "telegram", chat_id: "42", ts: "2026-11-30T10:00:00Z" });
    await log.close();
    process.stdout.write("dropped\\n");
    process.stdin.once("data", () => process.exit(0));`;
  const p = spawn(process.execPath, ["--input-type=module", "-e", child], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((r) => p.once("exit", r));
  await new Promise((resolve, reject) => {
    let out = "";
    p.stdout.on("data", (d) => { out += d; if (out.includes("dropped")) resolve(); });
    p.once("exit", (code) => reject(new Error(`child exited (${code}) before letting go: ${out}`)));
  });
  const lock = join(root, "raw/telegram/chats/42/2026/11/30.jsonl.lock");
  await withFileLock(lock, async () => {
    const mine = readFileSync(lock, "utf8");
    p.stdin.write("exit\n");
    assert.equal(await exited, 0);
    assert.equal(existsSync(lock) && readFileSync(lock, "utf8"), mine, "the exiting process removed a lock it had let go");
  });
});
