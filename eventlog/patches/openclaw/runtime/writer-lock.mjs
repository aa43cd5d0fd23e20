// The cross-process lock of docs/log-format.md ("Locking"; eventlog/lock.py is the other side — Node has no flock(2),
// so both languages share this O_EXCL protocol) and the lease the gateway's writer keeps on it.
//
// A lock file holds "<pid> <start>\n", start = field 22 of /proc/<pid>/stat (clock ticks after boot), so a reused pid
// does not keep a dead holder's lock alive. Contents that are not a lock record (empty, junk, 0, -1, 20 digits) are
// stale once the file is 2 s old. A waiter creates "<lock>.want"; a lease holder checks for it at most every
// LEASE_CHECK_MS while busy and lets go; an idle lease is released after LEASE_IDLE_MS, on close() and at process exit.
import * as fs from "node:fs";
import { constants as C } from "node:fs";
import { mkdir, open, readFile, rmdir, stat, unlink } from "node:fs/promises";
import { EventlogError } from "./writer-format.mjs";

const STALE_EMPTY_MS = 2000;
const STALE_BREAKER_MS = 10000;
const LOCK_TIMEOUT_MS = 30000;
const PID_MAX = 2 ** 22; // PID_MAX_LIMIT on 64-bit Linux
export const LEASE_IDLE_MS = 200; // an idle lease is let go after this long without an append
export const LEASE_CHECK_MS = 100; // a busy lease looks for a waiter's <lock>.want at most this often
const YIELD_MS = 60; // after letting go for a waiter: > a waiter's longest poll sleep (50 ms), so it gets the lock
const RECORD_RE = /^([0-9]{1,7})(?: ([0-9]{1,20}))?\n?$/;

export class LockTimeout extends EventlogError {
  constructor(message) { super(message, "EVENTLOG_LOCK_TIMEOUT"); this.name = "LockTimeout"; }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Start time of `pid` in clock ticks after boot; "" without /proc (not Linux); null if there is no such process. */
function parseStart(data) {
  const fields = data.slice(data.lastIndexOf(")") + 2).split(" ");
  return fields.length > 19 ? fields[19] : "";
}
let OWN_START = null; // read once, on the first lock
let HAVE_PROC = false;
async function lockRecord() {
  if (OWN_START === null) {
    try { OWN_START = parseStart(await readFile("/proc/self/stat", "latin1")); } catch { OWN_START = ""; }
    HAVE_PROC = OWN_START !== "";
  }
  return OWN_START ? `${process.pid} ${OWN_START}\n` : `${process.pid}\n`;
}

async function startTime(pid) {
  try { return parseStart(await readFile(`/proc/${pid}/stat`, "latin1")); } catch (e) {
    return e.code === "ENOENT" && HAVE_PROC ? null : "";
  }
}

function pidAlive(pid) {
  try { process.kill(pid, 0); return true; } catch (e) { return e.code === "EPERM"; }
}

async function readSmall(path) {
  try { return await readFile(path, "latin1"); } catch (e) { if (e.code === "ENOENT") return null; throw e; }
}

/** true/false: the record's holder is/is not running; null: not a lock record. */
export async function holderAlive(content) {
  await lockRecord();
  const m = RECORD_RE.exec(content);
  if (!m) return null;
  const pid = Number(m[1]);
  if (!(pid > 0 && pid <= PID_MAX)) return null;
  const recorded = m[2] ?? null;
  if (pid === process.pid) return recorded === null || !OWN_START || recorded === OWN_START;
  const current = await startTime(pid);
  if (current === null) return false;
  if (current === "" || recorded === null) return pidAlive(pid); // no /proc, or an old-format record
  return current === recorded;
}

async function isStale(path, content) {
  const alive = await holderAlive(content);
  if (alive === null) {
    try { return Date.now() - (await stat(path)).mtimeMs > STALE_EMPTY_MS; } catch { return false; }
  }
  return !alive;
}

async function breakLock(path, content) {
  const breaker = path + ".break";
  try {
    await mkdir(breaker, 0o700);
  } catch (e) {
    if (e.code !== "EEXIST") throw e;
    try { if (Date.now() - (await stat(breaker)).mtimeMs > STALE_BREAKER_MS) await rmdir(breaker); } catch { /* gone */ }
    return;
  }
  try {
    if ((await readSmall(path)) === content) await unlink(path).catch(() => {});
  } finally {
    await rmdir(breaker).catch(() => {});
  }
}

/** Take the lock file `path` (waiting, breaking stale locks, announcing the wait in `<path>.want`). */
export async function acquireLock(path, timeoutMs = LOCK_TIMEOUT_MS) {
  const record = await lockRecord();
  const deadline = Date.now() + timeoutMs;
  let delay = 1;
  let wanted = false;
  let raced = false;
  for (;;) {
    let fh = null;
    try {
      fh = await open(path, C.O_CREAT | C.O_EXCL | C.O_WRONLY, 0o600);
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    if (fh) {
      try {
        await fh.write(record);
      } catch (e) {
        await fh.close().catch(() => {});
        await unlink(path).catch(() => {}); // ENOSPC …: leave no empty lock behind
        throw e;
      }
      await fh.close();
      if (wanted) await unlink(path + ".want").catch(() => {});
      return;
    }
    const content = await readSmall(path);
    // released between our open and read: retry at once, once. Unreadable again (a dangling symbolic link planted
    // as the lock: O_EXCL sees it, a read follows it) it is waited on like a held lock, until the deadline.
    if (content === null && !raced) { raced = true; continue; }
    raced = false;
    if (content === null) {
      // neither ours to break nor to read: wait for it to go away
    } else if (await isStale(path, content)) {
      await breakLock(path, content);
    } else {
      wanted = true;
      await open(path + ".want", C.O_CREAT | C.O_WRONLY, 0o600).then((h) => h.close(), () => {});
    }
    if (Date.now() > deadline) {
      if (wanted) await unlink(path + ".want").catch(() => {});
      const holder = content === null ? "an unreadable lock file" : JSON.stringify(content);
      throw new LockTimeout(`could not lock ${path} within ${timeoutMs / 1000} s (held by ${holder})`);
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 50);
  }
}

/** One-shot: take the lock, run fn, release. */
export async function withFileLock(path, fn, timeoutMs = LOCK_TIMEOUT_MS) {
  await acquireLock(path, timeoutMs);
  try { return await fn(); } finally { await unlink(path).catch(() => {}); }
}

// Locks held by leases of this process, removed if the process exits while holding them ('exit' handlers can only
// do synchronous work: the one synchronous call of the writer, at exit).
const HELD = new Set();
process.once("exit", () => {
  for (const p of HELD) { try { fs.unlinkSync(p); } catch { /* gone */ } }
});

/** Leases on lock files: `run(lockPath, fn)` runs fn holding the lock, one fn at a time per lock in this process.
 * The lock stays held after fn until LEASE_IDLE_MS pass without another run, a waiter asks, or release(). `gen` of a
 * lease changes whenever the lock was let go: state cached under a lease is valid while gen is unchanged. */
export class LeaseTable {
  /** onHeld(lockPath, held): told whenever a lock is taken or let go (the writer thread reports its locks to the main
   * thread, which removes them if the process exits while the thread holds them). */
  constructor({ idleMs = LEASE_IDLE_MS, checkMs = LEASE_CHECK_MS, onHeld = null } = {}) {
    this.idleMs = idleMs;
    this.onHeld = onHeld;
    this.checkMs = checkMs;
    this.leases = new Map(); // lockPath → {held, gen, tail: Promise, timer, checkedAt}
    this.gens = 0;
  }

  lease(lockPath) {
    let l = this.leases.get(lockPath);
    if (!l) {
      l = { held: false, gen: 0, tail: Promise.resolve(), timer: null, checkedAt: 0, pending: 0 };
      this.leases.set(lockPath, l);
    }
    return l;
  }

  /** Serialise on the lease (in-process), then run fn with it. */
  async serial(l, fn) {
    const prev = l.tail;
    let done;
    l.tail = new Promise((r) => { done = r; });
    l.pending++;
    await prev;
    try { return await fn(); } finally { l.pending--; done(); }
  }

  /** The idle release; the entry is forgotten too unless a run is queued (a gateway touches new files every day). */
  async idle(lockPath, l) {
    await this.serial(l, () => this.drop(lockPath, l));
    if (!l.held && l.pending === 0 && this.leases.get(lockPath) === l) this.leases.delete(lockPath);
  }

  async run(lockPath, fn) {
    const l = this.lease(lockPath);
    return this.serial(l, async () => {
      if (l.timer) { clearTimeout(l.timer); l.timer = null; }
      if (l.held && Date.now() - l.checkedAt >= this.checkMs) {
        l.checkedAt = Date.now();
        let wanted = false;
        try { await stat(lockPath + ".want"); wanted = true; } catch { /* nobody waits */ }
        if (wanted) {
          await unlink(lockPath + ".want").catch(() => {}); // a waiter still waiting makes it again
          await this.drop(lockPath, l);
          await sleep(YIELD_MS);
        } else {
          l.gen = ++this.gens; // and the holder re-checks its cached state once per interval (files removed by hand)
        }
      }
      if (!l.held) {
        await acquireLock(lockPath);
        l.held = true;
        l.gen = ++this.gens;
        l.checkedAt = Date.now();
        HELD.add(lockPath);
        this.onHeld?.(lockPath, true);
      }
      try {
        return await fn(l.gen);
      } catch (err) {
        await this.drop(lockPath, l); // after any failure the next run starts from the files, not from a cache
        throw err;
      } finally {
        if (this.idleMs <= 0) {
          await this.drop(lockPath, l);
        } else if (l.held) {
          l.timer = setTimeout(() => { this.idle(lockPath, l).catch(() => {}); }, this.idleMs);
          l.timer.unref();
        }
      }
    });
  }

  async drop(lockPath, l) {
    if (l.timer) { clearTimeout(l.timer); l.timer = null; }
    if (!l.held) return;
    l.held = false;
    l.gen = 0;
    HELD.delete(lockPath);
    this.onHeld?.(lockPath, false);
    await unlink(lockPath).catch(() => {});
  }

  /** Let go of every lock held (waits for running fns). */
  async releaseAll() {
    await Promise.all([...this.leases.entries()].map(([p, l]) => this.serial(l, () => this.drop(p, l))));
  }
}
