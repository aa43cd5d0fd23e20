// Checkpoints for the JS writer (eventlog/head.py is the other side; docs/log-format.md, "Head"). After every seal the
// writer appends to seals/checkpoints.jsonl a record of each covered stream (seals/<channel>/<chat>.jsonl,
// dlp/alerts.jsonl, dlp/reviews.jsonl) that changed since the last checkpoint: its complete lines, their bytes and the
// chain hash of the last one. The head (`eventlog head`) is the chain hash of the checkpoint file's last line.
import { open, readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { nowTs } from "./writer-format.mjs";
import { chainHash } from "./writer-commit.mjs";
import { withFileLock } from "./writer-io.mjs";

export const CHECKPOINTS = "seals/checkpoints.jsonl";
const DLP_STREAMS = ["dlp/alerts.jsonl", "dlp/reviews.jsonl"];
const HEX64 = /^[0-9a-f]{64}$/;

async function coveredStreams(root) {
  const out = [];
  const ls = async (d) => (await readdir(d, { withFileTypes: true }).catch(() => []));
  for (const ch of (await ls(join(root, "seals"))).filter((e) => e.isDirectory()).map((e) => e.name).sort()) {
    for (const f of (await ls(join(root, "seals", ch))).filter((e) => e.isFile() && e.name.endsWith(".jsonl"))
      .map((e) => e.name).sort()) out.push(`seals/${ch}/${f}`);
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

/** Folded state of every stream at the last checkpoint: rel → {lines, bytes, last}. */
async function folded(root) {
  let buf;
  try { buf = await readFile(join(root, CHECKPOINTS)); } catch (e) { if (e.code === "ENOENT") return new Map(); throw e; }
  const state = new Map();
  for (const line of completeLines(buf)) {
    let rec;
    try { rec = JSON.parse(line.toString("utf8")); } catch { continue; }
    if (rec?.event !== "log:checkpoint" || typeof rec.streams !== "object" || rec.streams === null) continue;
    for (const [rel, s] of Object.entries(rec.streams)) {
      if (Number.isSafeInteger(s?.lines) && Number.isSafeInteger(s?.bytes) && HEX64.test(s?.last ?? "")) state.set(rel, s);
    }
  }
  return state;
}

/** {lines, bytes, last} of a stream's complete lines, read from the known prefix on when it is unchanged. */
async function streamState(path, known) {
  const st = await stat(path).catch(() => null);
  if (!st) return null;
  const fh = await open(path, "r");
  try {
    if (known && known.bytes <= st.size) {
      const back = Math.min(known.bytes, 4 * 1024 * 1024 + 2);
      const buf = Buffer.alloc(st.size - known.bytes + back);
      if (buf.length) await fh.read(buf, 0, buf.length, known.bytes - back);
      const prior = completeLines(buf.subarray(0, back));
      if (prior.length && chainHash(prior.at(-1)) === known.last) {
        const fresh = completeLines(buf.subarray(back));
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

/** Append a checkpoint if any covered stream changed since the last one (`log` is the writer). */
export async function checkpoint(log) {
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
