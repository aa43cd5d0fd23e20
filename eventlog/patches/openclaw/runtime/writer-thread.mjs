// The JS writer in its own thread (openEventLog({thread: true}); the gateway's tap uses it): the same EventLog runs in
// a worker_threads worker (writer-worker.mjs) and this side only hands each event over. Why: in a flood of Bot API
// calls every call also waited behind the previous calls' log work on the event loop — validation, encoding, the
// commitment and chain hashes, the lock and fs completions (~100–190 µs of main-thread CPU per append). Handing an
// event over is one structured clone (the tap's events are plain JSON-like data).
//
// Same API and the same promises: an append settles when the writer in the thread has settled it, so what a resolved
// append means for each fsync policy is unchanged. Differences, all loud:
//   - the event must be structured-cloneable (plain objects, arrays, strings, numbers, booleans, null, bigint, Date);
//     a function or symbol value rejects with BadEvent instead of being left out;
//   - the stored event the promise gives is a shallow copy of the input with the writer's fields (v, id, ts, chat_id,
//     prev, salt), not the thread's object;
//   - if the thread dies (a bug, out of memory), every append in flight and every later one rejects with
//     WriterThreadDead (code EVENTLOG_WRITER_DEAD): the tap turns that into refused sends, nothing is dropped
//     silently. The locks the thread held are removed (they name this process, which is still alive).
// The thread never keeps the process alive by itself: it is ref'ed only while appends are in flight. Locks it holds
// when the process exits are removed by this side's exit handler, like the in-thread writer's.
import * as fs from "node:fs";
import { Worker } from "node:worker_threads";
import { BadEvent, EventlogError } from "./writer-format.mjs";
import { DamagedLog } from "./writer-io.mjs";
import { LockTimeout } from "./writer-lock.mjs";

const WORKER_URL = new URL("./writer-worker.mjs", import.meta.url);
const CLASSES = { BadEvent, DamagedLog, LockTimeout, EventlogError };

/** The writer thread is gone: nothing more can be appended through this writer. */
export class WriterThreadDead extends EventlogError {
  constructor(message) { super(message, "EVENTLOG_WRITER_DEAD"); this.name = "WriterThreadDead"; }
}

/** Rebuild an error the thread sent as data (errorData in writer-worker.mjs) with its class and fields. */
function revive(e) {
  const Cls = CLASSES[e.name];
  const err = Cls ? new Cls(e.message) : new Error(e.message);
  for (const k of ["code", "index", "afterWrite", "errno", "syscall", "path"]) if (e[k] !== undefined) err[k] = e[k];
  if (!Cls && e.name !== "Error") err.name = e.name;
  return err;
}

/** The input's shallow copy (taken at the call) with the writer's fields (what the in-thread writer's prepare() gives). */
function stored(o, f) {
  Object.assign(o, f);
  if (f.salt === undefined) delete o.salt;
  return o;
}

// Locks held by writer threads of this process: removed at exit (the thread's own exit handler may not run).
const HELD = new Set();
process.once("exit", () => {
  for (const p of HELD) { try { fs.unlinkSync(p); } catch { /* gone */ } }
});

class ThreadedEventLog {
  constructor(worker, root, fsync, warn) {
    this.worker = worker;
    this.root = root;
    this.fsync = fsync;
    this.warn = warn;
    this.calls = new Map(); // seq → {resolve, reject, shape, input}
    this.seq = 0;
    this.dead = null;
    this.held = new Set();
    worker.on("message", (m) => this.onMessage(m));
    worker.on("error", (err) => this.die(`failed: ${err?.message ?? err}`));
    worker.on("messageerror", (err) => this.die(`sent an unreadable message: ${err?.message ?? err}`));
    worker.on("exit", (code) => this.die(`exited (code ${code})`));
  }

  onMessage(m) {
    if (m.t === "r") {
      for (const [s, r, e] of m.b) {
        const c = this.calls.get(s);
        if (!c) continue;
        this.calls.delete(s);
        if (e) c.reject(revive(e));
        else if (c.shape === "one") c.resolve(stored(c.input, r));
        else if (c.shape === "many") c.resolve(r.map((f, i) => stored(c.input[i], f)));
        else c.resolve(undefined);
      }
      if (this.calls.size === 0) this.worker.unref();
    } else if (m.t === "lock") {
      if (m.h) { this.held.add(m.p); HELD.add(m.p); } else { this.held.delete(m.p); HELD.delete(m.p); }
    } else if (m.t === "warn") {
      this.warn(m.line);
    }
  }

  die(why) {
    this.dead ??= new WriterThreadDead(`openclaw-eventlog: the event-log writer thread ${why}; nothing more is appended`);
    for (const c of this.calls.values()) c.reject(this.dead);
    this.calls.clear();
    for (const p of this.held) { HELD.delete(p); fs.unlink(p, () => {}); }
    this.held.clear();
    this.worker.unref();
  }

  request(op, a, shape, r) {
    if (this.dead) return Promise.reject(this.dead);
    const s = ++this.seq;
    try {
      this.worker.postMessage({ s, op, a, r });
    } catch (err) { // DataCloneError: a function, symbol … in the event
      return Promise.reject(new BadEvent(`event cannot be handed to the writer thread: ${err?.message ?? err}`));
    }
    if (this.calls.size === 0) this.worker.ref(); // an append in flight keeps the process alive until it settles
    // the copy the stored event is made from is taken now, like the clone (a later change to the caller's object
    // changes neither)
    const input = shape === "one" ? { ...a } : shape === "many" ? a.map((e) => ({ ...e })) : null;
    return new Promise((resolve, reject) => {
      this.calls.set(s, { resolve, reject, shape, input });
    });
  }

  append(event) { return this.request("append", event, "one"); }

  appendMany(events) {
    if (!Array.isArray(events)) return Promise.reject(new BadEvent("appendMany takes an array of events"));
    return this.request("appendMany", events, "many");
  }

  appendStream(relpath, event) {
    return this.request("appendStream", event, Array.isArray(event) ? "many" : "one", relpath);
  }

  /** Let go of the leased locks and close the file handles (the writer stays usable), as the in-thread close(). */
  close() { return this.dead ? Promise.resolve() : this.request("close", null, "none"); }

  /** close(), then stop the thread (the writer is unusable afterwards). */
  async terminate() {
    await this.close().catch(() => {});
    this.dead ??= new WriterThreadDead("openclaw-eventlog: the event-log writer was terminated");
    await this.worker.terminate();
    this.die("was terminated"); // appends still in flight reject (the exit event may come later)
  }
}

/** Start the writer thread on an already checked root/fsync → the ThreadedEventLog once the thread has opened it. */
export async function openThreadedEventLog({ root, fsync, autoseal, warn, lease }) {
  const worker = new Worker(WORKER_URL, {
    workerData: { root, fsync, autoseal, lease: { ...lease } },
    // none of the process's flags: the writer needs none, and some are refused in a worker (`--input-type=module`)
    execArgv: [],
  });
  const ready = await new Promise((resolve, reject) => {
    const onExit = (code) => reject(new EventlogError(`the event-log writer thread exited while starting (code ${code})`));
    worker.once("error", reject);
    worker.once("exit", onExit);
    worker.once("message", (m) => {
      worker.off("error", reject);
      worker.off("exit", onExit);
      resolve(m);
    });
  });
  if (ready.e) {
    await worker.terminate();
    throw revive(ready.e);
  }
  const log = new ThreadedEventLog(worker, root, fsync, warn);
  worker.unref();
  return log;
}
