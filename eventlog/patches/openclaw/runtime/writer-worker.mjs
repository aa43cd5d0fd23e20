// The writer thread (writer-thread.mjs starts it): runs writer.mjs's EventLog unchanged, so validation, encoding, the
// commitment and chain hashes, the locks and every fs call happen here, off the gateway's event loop.
// Protocol (structured clone over the worker's port):
//   in:  {s: seq, op: "append"|"appendMany"|"appendStream"|"close", a: argument, r: relpath (appendStream)}
//   out: {t: "ready"} | {t: "ready", e: error} once, then {t: "r", b: [[seq, result] | [seq, null, error], …]} per
//        loop turn (one message for a whole group commit), {t: "lock", p, h} for each lock taken/let go,
//        {t: "warn", line}.
// A result is the stored event's writer-filled fields ({v, id, ts, chat_id, prev[, salt]}, or an array of them): the
// content stays on this side; the main thread puts the fields onto its own shallow copy of the event.
import { parentPort, workerData } from "node:worker_threads";
import { openEventLog } from "./writer.mjs";

const post = (m) => parentPort.postMessage(m);

/** An error as plain data (the main thread rebuilds BadEvent, LockTimeout, DamagedLog … from `name`). */
export function errorData(err) {
  if (!err || typeof err !== "object") return { name: "Error", message: String(err) };
  const out = { name: String(err.name ?? "Error"), message: String(err.message ?? err) };
  for (const k of ["code", "index", "afterWrite", "errno", "syscall", "path"]) {
    if (err[k] !== undefined && (typeof err[k] !== "object")) out[k] = err[k];
  }
  return out;
}

const fields = (p) => (p.salt === undefined
  ? { v: p.v, id: p.id, ts: p.ts, chat_id: p.chat_id, prev: p.prev }
  : { v: p.v, id: p.id, ts: p.ts, chat_id: p.chat_id, prev: p.prev, salt: p.salt });
const many = (list) => list.map(fields);

let out = [];
function flush() {
  const b = out;
  out = [];
  post({ t: "r", b });
}
function reply(entry) {
  if (out.length === 0) setImmediate(flush); // everything that settles in this turn goes back as one message
  out.push(entry);
}

let log;
try {
  log = await openEventLog({
    ...workerData, thread: false, warn: (line) => post({ t: "warn", line }),
    lease: { ...workerData.lease, onHeld: (p, h) => post({ t: "lock", p, h }) },
  });
} catch (err) {
  post({ t: "ready", e: errorData(err) });
}
if (log) {
  parentPort.on("message", (m) => {
    let p;
    try {
      switch (m.op) {
        case "append": p = log.append(m.a).then(fields); break;
        case "appendMany": p = log.appendMany(m.a).then(many); break;
        case "appendStream": p = log.appendStream(m.r, m.a).then((x) => (Array.isArray(x) ? many(x) : fields(x))); break;
        case "close": p = log.close().then(() => null); break;
        default: throw new Error(`writer thread: unknown operation ${m.op}`);
      }
    } catch (err) {
      p = Promise.reject(err);
    }
    p.then((r) => reply([m.s, r]), (err) => reply([m.s, null, errorData(err)]));
  });
  post({ t: "ready" });
}
