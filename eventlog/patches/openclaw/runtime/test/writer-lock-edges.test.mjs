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
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
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
  // nobody cannot write V8 coverage into the runner's directory ($NODE_V8_COVERAGE, root's): the child writes it to
  // a directory of its own and it is copied over, so the mutation runner sees the code only this child executes
  const covOut = process.env.NODE_V8_COVERAGE;
  const covChild = covOut ? mkdtempSync(join(tmpdir(), "evl-lock-eperm-cov-")) : null;
  if (covChild) chmodSync(covChild, 0o777);
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", child], { encoding: "utf8", timeout: 60_000,
    env: covChild ? { ...process.env, NODE_V8_COVERAGE: covChild } : process.env });
  if (covChild) {
    mkdirSync(covOut, { recursive: true }); // made by this process only when it exits
    for (const f of readdirSync(covChild)) copyFileSync(join(covChild, f), join(covOut, f));
  }
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { alive: true, out: "LockTimeout", uid: 65534 });
  assert.equal(readFileSync(lock, "utf8"), "1\n", "the other user's lock was broken");
});

test("a lock record that cannot be written (EFBIG): the append fails with it and leaves no lock file", async () => {
  const root = mkdtempSync(join(tmpdir(), "evl-lock-efbig-"));
  const dir = join(root, "raw/telegram/chats/42/2026/11");
  mkdirSync(dir, { recursive: true });
  // The child's file-size limit is set to 0 (prlimit(1)) only around its append, and lifted before it exits, so its
  // own files (V8 coverage under the mutation runner) can still be written. SIGXFSZ is ignored (inherited through
  // exec): write() fails with EFBIG instead.
  const child = `
    const { openEventLog } = await import(${JSON.stringify(WRITER_MJS)});
    const log = await openEventLog({ root: ${JSON.stringify(root)}, fsync: "never", thread: false });
    const lines = (async function* () { let b = ""; for await (const d of process.stdin) { b += d; let i;
      while ((i = b.indexOf("\\n")) >= 0) { yield b.slice(0, i); b = b.slice(i + 1); } } })();
    process.stdout.write("ready\\n");
    await lines.next();
    try {
      await log.append({ event: "message:received", channel: "telegram", chat_id: "42", ts: "2026-11-30T10:00:00Z" });
      process.stdout.write("appended\\n");
    } catch (e) { process.stdout.write(e.code + "\\n"); }
    await lines.next();
    process.exit(0);`;
  const p = spawn("/bin/sh", ["-c", 'trap "" XFSZ; exec "$0" --input-type=module -e "$1"', process.execPath, child],
    { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((r) => p.once("exit", r));
  let out = "";
  p.stdout.on("data", (d) => { out += d; });
  const waitFor = (word) => new Promise((resolve, reject) => {
    const on = () => { if (out.includes(word)) { p.stdout.off("data", on); resolve(); } };
    p.stdout.on("data", on);
    p.once("exit", (code) => reject(new Error(`child exited (${code}): ${out}`)));
    on();
  });
  const prlimit = (v) => {
    const r = spawnSync("prlimit", ["--pid", String(p.pid), `--fsize=${v}`], { encoding: "utf8" });
    assert.equal(r.status, 0, `prlimit(1) is required for this test: ${r.error ?? ""}${r.stderr}`);
  };
  await waitFor("ready");
  prlimit("0:unlimited");
  p.stdin.write("go\n");
  await waitFor("\nE");
  prlimit("unlimited:unlimited");
  p.stdin.write("exit\n");
  assert.equal(await exited, 0);
  assert.equal(out, "ready\nEFBIG\n");
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
