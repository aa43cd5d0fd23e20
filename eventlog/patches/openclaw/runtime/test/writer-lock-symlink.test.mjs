// A dangling symbolic link planted where a lock file goes: O_EXCL sees it (EEXIST), every read follows it (ENOENT).
// acquireLock used to retry "released between open and read" at once, forever, ignoring its timeout — the gateway's
// event loop spun on it. It must wait like any held lock and time out.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, symlinkSync, lstatSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { acquireLock, LockTimeout } from "../writer-lock.mjs";

test("a dangling symlink as the lock: acquireLock times out, the link is left alone", { timeout: 20_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "lock-symlink-"));
  const lock = join(dir, "01.jsonl.lock");
  symlinkSync(join(dir, "nowhere"), lock);
  await assert.rejects(acquireLock(lock, 300), (err) => err instanceof LockTimeout && /unreadable lock file/.test(err.message));
  assert.ok(lstatSync(lock).isSymbolicLink()); // not ours: never followed, broken or replaced
});
