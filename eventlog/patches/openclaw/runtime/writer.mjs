// The JS event-log writer used by the runtime tap inside the OpenClaw gateway: a port of eventlog/writer.py that
// implements docs/log-format.md byte for byte (same lines, same chain, same lock files, same seals).
//
// API (all I/O is async on libuv's thread pool: the gateway's event loop never waits on the disk itself):
//   import { openEventLog, resolveRoot } from "./writer.mjs";
//   const log = await openEventLog({ root: resolveRoot(process.env), fsync: "batch" });
//   const stored = await log.append(event);          // → the stored event: v, id, ts (normalised), prev filled
//   await log.appendStream("dlp/alerts.jsonl", alert); // a non-partitioned chained stream under the root
//   await log.appendMany([e1, e2]);                  // validated all-or-nothing before anything is written
//   await log.close();                               // closes the cached file descriptors (optional; reopened on use)
// `event` needs event, channel, chat_id, ts; everything else is kept. Bad input rejects with BadEvent (nothing
// written). The returned promise settles once the line is durable under the fsync policy:
//   always — one synchronous-I/O write per event (the file is opened O_DSYNC: write + fdatasync in one system call);
//            a resolved append survives power loss.
//   batch  — group commit (default): appends that arrive while a write is in flight are written together with one
//            O_DSYNC write(); a resolved append survives power loss, concurrent appends share the sync.
//   never  — write() only; a resolved append survives a crash of the gateway, not of the machine (the kernel's
//            writeback window, ~30 s on Linux defaults).
// Errors: BadEvent (input; code EVENTLOG_BAD_EVENT), LockTimeout (30 s), DamagedLog (appending to a sealed day that no
// longer matches its seal), or the fs error itself (EACCES, ENOSPC …) — the append rejects, nothing half-written stays
// visible as a line (a torn tail is repaired by the next append, in either language).
// Directories are created 0700 and files 0600, and the parent directory is fsynced after creating either (except
// under `never`). Across processes (the Python CLI, another gateway) the `<file>.lock` protocol of the format doc
// keeps each file's chain linear; inside this process, one queue per file does.
import { randomBytes } from "node:crypto";
import { constants as C } from "node:fs";
import { mkdir, open, stat, unlink } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import {
  BadEvent, DEFAULT_ACCOUNT, EventlogError, dayRelpath, genesis, lineHash, newId, nowTs, parseRelpath, prepare, sealRelpath,
} from "./writer-format.mjs";
import { chainHash, encodeForms } from "./writer-commit.mjs";
import { openFd, readLastLine, writeAll } from "./writer-io.mjs";
import { LeaseTable } from "./writer-lock.mjs";
import { checkAgainstSeal, sealBefore, sealRecord, sealedRecord } from "./writer-seal.mjs";
import { checkpoint } from "./writer-head.mjs";

export { BadEvent, EventlogError } from "./writer-format.mjs";
export { DamagedLog, LockTimeout, withFileLock } from "./writer-io.mjs";
export const FSYNC_POLICIES = ["always", "batch", "never"];
// Events are encoded once, before the lock, with this stand-in for `prev`; the real hash (same length) is put in under
// the lock. Random per process, so no value inside an event can be mistaken for it.
const PLACEHOLDER = randomBytes(32).toString("hex");
// Open handles kept per file (a file is never replaced, only appended to or truncated by a repair), so an append
// costs the lock, one stat, the write (and fsync) — not an open/close pair too.
const MAX_HANDLES = 32;

/** UTF-8 bytes of `line` + "\n" without building `line + "\n"` (a copy of the whole line as a string). */
function lineBytes(line) {
  const n = Buffer.byteLength(line, "utf8");
  const buf = Buffer.allocUnsafe(n + 1);
  buf.write(line, 0, n, "utf8");
  buf[n] = 10;
  return buf;
}

/** --root is the caller's; then $EVENTLOG_ROOT, $OPENCLAW_STATE_DIR/eventlog, ~/.openclaw/eventlog (as in Python). */
export function resolveRoot(env = process.env) {
  const home = env.HOME || homedir();
  // like Python's Path.expanduser().absolute(): a leading ~ is HOME, a relative path is taken from the cwd
  const abs = (p) => resolve(p === "~" || p.startsWith("~/") ? home + p.slice(1) : p);
  if (env.EVENTLOG_ROOT) return abs(env.EVENTLOG_ROOT);
  if (env.OPENCLAW_STATE_DIR) return join(abs(env.OPENCLAW_STATE_DIR), "eventlog");
  return join(abs(home), ".openclaw", "eventlog");
}

class EventLog {
  constructor(root, fsync, autoseal, warn, lease) {
    this.warn = warn;
    // The partition locks are leased: held across consecutive appends, let go when idle, asked, or on close().
    this.leases = new LeaseTable(lease);
    this.unsealed = new Map(); // relpath → lease gen in which the day was seen unsealed (no seal stat per append)
    this.root = root;
    this.fsync = fsync;
    this.autoseal = autoseal;
    this.tails = new Map(); // relpath → {ino, size, last}: skips re-reading the tail when nobody else wrote
    this.queues = new Map(); // relpath → {items: [], running: bool}
    this.sealCache = new Map();
    this.handles = new Map(); // relpath → {fh, ino}, most recently used last
    this.knownDirs = new Set(); // directories seen to exist: no stat per append
    this.resealed = false; // a sealed day was resealed: checkpoint after the lock is released
  }

  /** Append one event to its chat/day file → Promise of the stored event. */
  async append(event) {
    const prepared = prepare(event);
    const forms = encodeForms(prepared, PLACEHOLDER);
    return this.enqueue(dayRelpath(prepared.channel, prepared.chat_id, prepared.ts, prepared.account), prepared, forms);
  }

  /** Validate all, then append each to its file → Promise of the stored events (in input order). */
  async appendMany(events) {
    const items = events.map((ev, i) => {
      try {
        const prepared = prepare(ev);
        const forms = encodeForms(prepared, PLACEHOLDER);
        return [dayRelpath(prepared.channel, prepared.chat_id, prepared.ts, prepared.account), prepared, forms];
      } catch (e) {
        if (e instanceof BadEvent) e.index = i;
        throw e;
      }
    });
    return Promise.all(items.map(([rel, p, line]) => this.enqueue(rel, p, line)));
  }

  /** Append to a non-partitioned chained stream under the root (dlp/alerts.jsonl, seals/…). */
  async appendStream(relpath, event) {
    if (typeof relpath !== "string" || relpath.startsWith("raw/") || relpath.startsWith("/") ||
        relpath.split("/").some((p) => p === ".." || p === "." || p === "") || !relpath.endsWith(".jsonl")) {
      throw new EventlogError(`not a stream path: ${relpath}`);
    }
    const list = Array.isArray(event) ? event : [event];
    const prepared = list.map((ev) => { const p = prepare(ev); return [p, encodeForms(p, PLACEHOLDER)]; });
    const stored = await Promise.all(prepared.map(([p, line]) => this.enqueue(relpath, p, line)));
    return Array.isArray(event) ? stored : stored[0];
  }

  enqueue(rel, prepared, [line, form]) {
    // The line's bytes are made now, one event at a time; under the lock only its chain field is filled in (in place,
    // at the placeholder's offset), so a group commit of many events is a short stretch of work on the event loop.
    const buf = lineBytes(line);
    const at = buf.indexOf(PLACEHOLDER, 0, "latin1");
    return new Promise((resolve, reject) => {
      let q = this.queues.get(rel);
      if (!q) this.queues.set(rel, (q = { items: [], running: false }));
      q.items.push({ prepared, buf, at, form, resolve, reject });
      if (!q.running) {
        q.running = true;
        this.drain(rel, q);
      }
    });
  }

  async drain(rel, q) {
    while (q.items.length) {
      const batch = q.items.splice(0, q.items.length); // group commit: everything that queued up meanwhile
      try {
        await this.writeGroup(rel, batch);
        for (const it of batch) it.resolve(it.prepared);
      } catch (err) {
        for (const it of batch) it.reject(err);
      }
    }
    q.running = false;
  }

  async fsyncDir(dir) {
    if (this.fsync === "never") return;
    const fh = await open(dir, C.O_RDONLY | C.O_DIRECTORY);
    try { await fh.sync(); } finally { await fh.close(); }
  }

  /** Create missing parents 0700, fsyncing each new one's parent. → true if any was made. */
  async ensureDirs(rel) {
    const missing = [];
    let d = dirname(join(this.root, rel));
    for (;;) {
      try { if ((await stat(d)).isDirectory()) break; } catch (e) { if (e.code !== "ENOENT") throw e; }
      missing.push(d);
      const up = dirname(d);
      if (up === d) break;
      d = up;
    }
    for (const dir of missing.reverse()) {
      try { await mkdir(dir, 0o700); } catch (e) { if (e.code === "EEXIST") continue; throw e; }
      await this.fsyncDir(dirname(dir));
    }
    return missing.length > 0;
  }

  async openFile(path) {
    // libuv adds O_CLOEXEC itself. Under always/batch the file is opened O_DSYNC: each write() returns once its data
    // and the file's new size are on stable storage (what write + fdatasync gives), one thread-pool round trip
    // instead of two.
    const flags = C.O_RDWR | C.O_APPEND | (this.fsync === "never" ? 0 : C.O_DSYNC);
    try { return [await openFd(path, flags), false]; } catch (e) { if (e.code !== "ENOENT") throw e; }
    let fh;
    try {
      fh = await openFd(path, flags | C.O_CREAT | C.O_EXCL, 0o600);
    } catch (e) {
      if (e.code === "EEXIST") return [await openFd(path, flags), false];
      throw e;
    }
    await this.fsyncDir(dirname(path));
    return [fh, true];
  }

  /** The open handle for `rel` and the path's current stat; reopened when the path no longer names that file. */
  async handleFor(rel, path) {
    let st = null;
    try { st = await stat(path); } catch (e) { if (e.code !== "ENOENT") throw e; }
    const cached = this.handles.get(rel);
    if (cached && st && cached.ino === st.ino) {
      this.handles.delete(rel); // re-insert: Map order is the LRU order
      this.handles.set(rel, cached);
      return [cached.fh, st, false];
    }
    if (cached) {
      this.handles.delete(rel);
      await cached.fh.close().catch(() => {});
    }
    const [fh, created] = await this.openFile(path);
    st = await fh.stat();
    this.handles.set(rel, { fh, ino: st.ino });
    if (this.handles.size > MAX_HANDLES) {
      const [oldRel, old] = this.handles.entries().next().value;
      this.handles.delete(oldRel);
      await old.fh.close().catch(() => {});
    }
    return [fh, st, created];
  }

  async writeGroup(rel, items) {
    const path = join(this.root, rel);
    const dir = dirname(path);
    let created = false;
    if (!this.knownDirs.has(dir)) created = await this.ensureDirs(rel);
    try {
      created = (await this.writeLocked(rel, path, items)) || created;
    } catch (err) {
      // ENOENT comes only from opening the lock or the file, before anything is written: the directory went away
      // (deleted by hand) while we believed it existed. Make it again, once.
      if (err.code !== "ENOENT" || err.afterWrite || !this.knownDirs.has(dir)) throw err;
      this.knownDirs.delete(dir);
      created = await this.ensureDirs(rel);
      created = (await this.writeLocked(rel, path, items)) || created;
    }
    if (this.resealed) {
      // a sealed day was extended and resealed: move the head (failures are reported, the events are durable)
      this.resealed = false;
      await checkpoint(this).catch((err) => this.warn(`openclaw-eventlog: checkpoint failed: ${err?.message ?? err}`));
    }
    if (created && this.autoseal && rel.startsWith("raw/")) {
      const p = parseRelpath(rel);
      // The events are durable by now: a failed auto-seal must not turn their append into an error (the tap would
      // refuse sends for it). It is reported; `eventlog seal` does the same work later.
      if (p) {
        await sealBefore(this, p.channel, p.chatId, p.day, p.account).catch((err) => this.warn(
          `openclaw-eventlog: auto-seal of ${p.channel}/${p.chatId} before ${p.day} failed: ${err?.message ?? err}`));
      }
    }
  }

  /** Under the file's lock: chain, repair, seal check, write, fsync. → true if the file was created.
   * While the lease on the lock is held without a break (same `gen`), nobody else can have touched the file, its
   * tail or its seal: the append is the write (and fsync) alone. */
  async writeLocked(rel, path, items) {
    const dir = dirname(path);
    return this.leases.run(path + ".lock", async (gen) => {
      const t = this.tails.get(rel);
      const h = this.handles.get(rel);
      const leased = t && h && t.gen === gen && h.ino === t.ino;
      const [fh, st0, fileCreated] = leased ? [h.fh, { ino: t.ino, size: t.size }, false]
        : await this.handleFor(rel, path);
      let st = st0;
      this.knownDirs.add(dir);
      let written = false;
      try {
        const extra = [];
        let prev = leased ? t.last : await this.chainTail(fh, st, rel, extra);
        if (extra.length) st = await fh.stat(); // a torn tail was cut off
        const isDay = rel.startsWith("raw/");
        let sealed = null;
        if (isDay && !fileCreated && this.unsealed.get(rel) !== gen) {
          sealed = await sealedRecord(this, rel);
          if (sealed) sealed = { ...sealed, lines: sealed.lines + await checkAgainstSeal(fh, rel, sealed) };
          else {
            if (this.unsealed.size >= 10000) this.unsealed.clear(); // a cache: bounded, refilled on demand
            this.unsealed.set(rel, gen);
          }
        }
        const lines = [];
        for (const it of [...extra, ...items]) {
          it.prepared.prev = prev;
          it.buf.write(prev, it.at, 64, "latin1"); // over the placeholder (or an earlier try's prev): same length
          // the chain covers the commitment form (content replaced by salted hashes), so erasure keeps it
          prev = lineHash(it.form === null ? it.buf.subarray(0, -1) : it.form.replace(PLACEHOLDER, prev));
          lines.push(it.buf);
        }
        const data = lines.length === 1 ? lines[0] : Buffer.concat(lines);
        if (this.fsync === "always") {
          for (const b of lines) await writeAll(fh, b); // O_DSYNC: each line durable before the next is written
        } else {
          await writeAll(fh, data); // batch: O_DSYNC, the whole group durable at once; never: page cache only
        }
        written = true;
        // Under the lock nobody else appends: the new size is known without another stat.
        this.tails.set(rel, { ino: st.ino, size: st.size + data.length, last: prev, gen });
        if (sealed) {
          // The day was sealed and still matched its seal: extend the seal inside the same critical section.
          const p = parseRelpath(rel);
          await this.appendStream(sealRelpath(p.channel, p.chatId, p.account),
            sealRecord(rel, sealed.lines + lines.length, st.size + data.length, prev));
          this.resealed = true;
        }
      } catch (err) {
        this.tails.delete(rel);
        this.unsealed.delete(rel);
        const h = this.handles.get(rel);
        this.handles.delete(rel);
        if (h) await h.fh.close().catch(() => {});
        if (written && err && typeof err === "object") err.afterWrite = true; // never retried: no double lines
        throw err;
      }
      return fileCreated;
    });
  }

  /** Let go of the leased locks and close the cached file handles (the writer stays usable: both are taken again on
   * demand). */
  async close() {
    await this.leases.releaseAll();
    const all = [...this.handles.values()];
    this.handles.clear();
    await Promise.all(all.map((h) => h.fh.close().catch(() => {})));
  }

  /** The hash to chain from; a torn tail is moved aside first and its log:repair event put into `extra`. */
  async chainTail(fh, st, rel, extra) {
    const cached = this.tails.get(rel);
    if (cached && cached.ino === st.ino && cached.size === st.size) return cached.last;
    if (st.size === 0) return genesis(rel);
    const [last, end] = await readLastLine(fh, st.size);
    if (end !== st.size) extra.push(await this.repair(fh, rel, end, st.size));
    return last === null ? genesis(rel) : chainHash(last);
  }

  async repair(fh, rel, end, size) {
    const path = join(this.root, rel);
    const torn = Buffer.alloc(size - end);
    await fh.read(torn, 0, torn.length, end);
    const movedTo = `${path.split("/").pop()}.torn-${newId()}`;
    const aside = join(dirname(path), movedTo);
    const afh = await open(aside, C.O_WRONLY | C.O_CREAT | C.O_EXCL, 0o600);
    try {
      await writeAll(afh, torn);
      await afh.sync();
    } catch (err) { // ENOSPC …: no empty or partial copy left behind; the torn tail stays where it was
      await afh.close().catch(() => {});
      await unlink(aside).catch(() => {});
      throw err;
    }
    await afh.close();
    await fh.truncate(end);
    await fh.sync();
    await this.fsyncDir(dirname(path));
    const p = parseRelpath(rel);
    const repair = {
      event: "log:repair", channel: p ? p.channel : "eventlog", chat_id: p ? p.chatId : "stream", ts: nowTs(),
      torn_bytes: torn.length, torn_sha256: lineHash(torn), moved_to: movedTo,
    };
    if (p && p.account !== DEFAULT_ACCOUNT) repair.account = p.account; // an account's file holds its events only
    const prepared = prepare(repair);
    const [line, form] = encodeForms(prepared, PLACEHOLDER);
    const buf = lineBytes(line);
    return { prepared, buf, at: buf.indexOf(PLACEHOLDER, 0, "latin1"), form };
  }

}

/** Whether the writer runs in its own thread by default: $EVENTLOG_WRITER_THREAD is exactly "1" (the one place it is read;
 * tap.mjs asks here too). */
export function threadFromEnv(env = process.env) {
  return env.EVENTLOG_WRITER_THREAD === "1";
}

/** Open a writer on `root` (created 0700 if missing). fsync: always | batch (default) | never.
 * thread: run the writer in a worker thread (writer-thread.mjs; same API and promises, the event loop only hands the
 * event over). Default: $EVENTLOG_WRITER_THREAD=1 (also how the gateway's tap decides). */
export async function openEventLog({
  root = resolveRoot(process.env), fsync = "batch", autoseal = true,
  warn = (line) => process.stderr.write(line + "\n"), lease = {}, thread = threadFromEnv(),
} = {}) {
  if (!FSYNC_POLICIES.includes(fsync)) {
    throw new EventlogError(`fsync policy must be one of ${FSYNC_POLICIES.join(", ")}: ${fsync}`);
  }
  if (typeof root !== "string" || !root) throw new EventlogError("root must be a directory path");
  if (thread) {
    const { openThreadedEventLog } = await import("./writer-thread.mjs");
    return openThreadedEventLog({ root, fsync, autoseal, warn, lease });
  }
  await mkdir(root, { recursive: true, mode: 0o700 });
  return new EventLog(root, fsync, autoseal, warn, lease);
}
