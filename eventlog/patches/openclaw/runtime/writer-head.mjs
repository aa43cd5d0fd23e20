// Checkpoints for the JS writer (eventlog/head.py is the other side; docs/log-format.md, "Head"). After every seal the
// writer appends to seals/checkpoints.jsonl a record of each covered stream (every partition's seal stream,
// dlp/alerts.jsonl, dlp/reviews.jsonl) that changed since the last checkpoint: its complete lines, their bytes and the
// chain hash of the last one. The head (`eventlog head`) is the chain hash of the checkpoint file's last line.
import { mkdir, open, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { ACCOUNT_RE, DEFAULT_ACCOUNT, nowTs } from "./writer-format.mjs";
import { chainHash } from "./writer-commit.mjs";
import { readLastLine, withFileLock } from "./writer-io.mjs";

export const CHECKPOINTS = "seals/checkpoints.jsonl";
const DLP_STREAMS = ["dlp/alerts.jsonl", "dlp/reviews.jsonl"];
const HEX64 = /^[0-9a-f]{64}$/;

async function coveredStreams(root) {
  const out = [];
  const ls = async (d) => (await readdir(d, { withFileTypes: true }).catch(() => []));
  const streams = async (dir) => (await ls(join(root, dir))).filter((e) => e.isFile() && e.name.endsWith(".jsonl"))
    .map((e) => `${dir}/${e.name}`).sort();
  for (const ch of (await ls(join(root, "seals"))).filter((e) => e.isDirectory()).map((e) => e.name).sort()) {
    out.push(...await streams(`seals/${ch}`));
    for (const acc of (await ls(join(root, "seals", ch, "accounts"))).filter((e) => e.isDirectory()).map((e) => e.name)
      .filter((a) => a !== DEFAULT_ACCOUNT && ACCOUNT_RE.test(a)).sort()) out.push(...await streams(`seals/${ch}/accounts/${acc}`));
  }
  for (const rel of DLP_STREAMS) {
    if ((await stat(join(root, rel)).catch(() => null))?.isFile()) out.push(rel);
  }
  return out;
}

function completeLines(buf) {
  const lines = [];
  let from = 0;
  for (let nl = buf.indexOf(10); nl >= 0; from = nl + 1, nl = buf.indexOf(10, from)) lines.push(buf.subarray(from, nl));
  return lines;
}

// Folded checkpoint state per checkpoint file, kept between checkpoints: the file only grows (it is never compacted —
// `verify --head` finds a head by its line), so each checkpoint reads only what was appended since the last one, not
// the whole file (one record per seal: tens of thousands of lines a year on a busy gateway, parsed on the event loop).
const foldCache = new Map(); // path → {ino, size (bytes of complete lines folded), lastLine (Buffer), state}

function foldInto(state, line) {
  let rec;
  try { rec = JSON.parse(line.toString("utf8")); } catch { return; }
  if (rec?.event !== "log:checkpoint" || typeof rec.streams !== "object" || rec.streams === null) return;
  for (const [rel, s] of Object.entries(rec.streams)) {
    if (Number.isSafeInteger(s?.lines) && Number.isSafeInteger(s?.bytes) && HEX64.test(s?.last ?? "")) state.set(rel, s);
  }
}

/** Folded state of every stream at the last checkpoint: rel → {lines, bytes, last}. Incremental: a file that is the
 * same inode, no shorter, and still has the cached last line where it was is read from there on; anything else (the
 * file replaced, truncated or edited) is folded again from the start. */
export async function folded(root) {
  const path = join(root, CHECKPOINTS);
  let fh;
  try { fh = await open(path, "r"); } catch (e) { if (e.code === "ENOENT") { foldCache.delete(path); return new Map(); } throw e; }
  try {
    const st = await fh.stat();
    let c = foldCache.get(path);
    if (c && (c.ino !== st.ino || st.size < c.size)) c = null;
    if (c && c.lastLine) {
      const back = Buffer.alloc(c.lastLine.length + 1);
      await fh.read(back, 0, back.length, c.size - back.length);
      if (!back.subarray(0, -1).equals(c.lastLine) || back.at(-1) !== 10) c = null;
    }
    if (!c) c = { ino: st.ino, size: 0, lastLine: null, state: new Map() };
    if (st.size > c.size) {
      const buf = Buffer.alloc(st.size - c.size);
      await fh.read(buf, 0, buf.length, c.size);
      const lines = completeLines(buf);
      for (const line of lines) foldInto(c.state, line);
      if (lines.length) {
        const last = lines.at(-1);
        c.lastLine = Buffer.from(last);
        c.size += last.byteOffset - buf.byteOffset + last.length + 1;
      }
    }
    foldCache.set(path, c);
    return new Map(c.state);
  } finally {
    await fh.close();
  }
}

/** {lines, bytes, last} of a stream's complete lines, read from the known prefix on when it is unchanged (an unchanged
 * size costs one stat; a grown stream, its last known line and what follows it). */
async function streamState(path, known) {
  const st = await stat(path).catch(() => null);
  if (!st) return null;
  if (known && known.bytes === st.size) return st.size ? known : null; // as eventlog/head.py: same size, same stream
  const fh = await open(path, "r");
  try {
    if (known && known.bytes < st.size) {
      const [prior, end] = await readLastLine(fh, known.bytes);
      if (end === known.bytes && prior !== null && chainHash(prior) === known.last) {
        const buf = Buffer.alloc(st.size - known.bytes);
        await fh.read(buf, 0, buf.length, known.bytes);
        const fresh = completeLines(buf);
        if (!fresh.length) return known;
        return { lines: known.lines + fresh.length, bytes: known.bytes + fresh.reduce((a, l) => a + l.length + 1, 0),
          last: chainHash(fresh.at(-1)) };
      }
    }
    const all = Buffer.alloc(st.size);
    if (all.length) await fh.read(all, 0, all.length, 0);
    const lines = completeLines(all);
    if (!lines.length) return null;
    return { lines: lines.length, bytes: lines.reduce((a, l) => a + l.length + 1, 0), last: chainHash(lines.at(-1)) };
  } finally {
    await fh.close();
  }
}

/** Append a checkpoint if any covered stream changed since the last one (`log` is the writer). A root without
 * `seals/` yet gets it, 0700 (the in-thread writer also fsyncs the root, as for every directory it makes; a
 * threaded writer's handle has no ensureDirs). */
export async function checkpoint(log) {
  if (typeof log.ensureDirs === "function") await log.ensureDirs(CHECKPOINTS);
  else await mkdir(join(log.root, "seals"), { recursive: true, mode: 0o700 });
  await withFileLock(join(log.root, CHECKPOINTS + ".hold"), async () => {
    const state = await folded(log.root);
    const changed = {};
    let any = false;
    for (const rel of await coveredStreams(log.root)) {
      const known = state.get(rel);
      const now = await streamState(join(log.root, rel), known);
      if (now && !(known && known.lines === now.lines && known.bytes === now.bytes && known.last === now.last)) {
        changed[rel] = { lines: now.lines, bytes: now.bytes, last: now.last };
        any = true;
      }
    }
    if (any) {
      await log.appendStream(CHECKPOINTS, { event: "log:checkpoint", channel: "system", chat_id: "eventlog",
        ts: nowTs(), streams: changed });
    }
  });
}
