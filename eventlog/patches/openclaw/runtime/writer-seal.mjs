// Seals for the JS writer (eventlog/seal.py is the other side): per closed day file, a chained record of its line
// count, size and last hash in seals/<channel>/<chat_id>.jsonl (another account's: seals/<channel>/accounts/<account>/…). A seal makes truncation, deletion of a whole file and
// edits of the last lines visible, which the chain alone cannot. `log` is the writer (root, sealCache, appendStream).
import { constants as C } from "node:fs";
import { open, readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { DEFAULT_ACCOUNT, chatDir, nowTs, parseRelpath, sealRelpath } from "./writer-format.mjs";
import { chainHash } from "./writer-commit.mjs";
import { DamagedLog, readLastLine } from "./writer-io.mjs";
import { checkpoint } from "./writer-head.mjs";

export async function sealedIndex(log, channel, chatId, account = DEFAULT_ACCOUNT) {
  const path = join(log.root, sealRelpath(channel, chatId, account));
  let st;
  try { st = await stat(path, { bigint: true }); } catch (e) { if (e.code === "ENOENT") return new Map(); throw e; }
  const hit = log.sealCache.get(path);
  if (hit && hit.size === st.size && hit.mtime === st.mtimeNs) return hit.index;
  const index = new Map();
  const lines = (await readFile(path, "utf8")).split("\n");
  lines.pop(); // only complete lines
  for (const ln of lines) {
    let rec;
    try { rec = JSON.parse(ln); } catch { continue; }
    if (rec && rec.event === "seal:file" && wellFormed(rec)) index.set(rec.file, rec); // malformed: verify reports it
  }
  log.sealCache.set(path, { size: st.size, mtime: st.mtimeNs, index });
  return index;
}

const posInt = (v) => Number.isSafeInteger(v) && v > 0;
function wellFormed(rec) {
  return typeof rec.file === "string" && parseRelpath(rec.file) !== null && posInt(rec.lines) && posInt(rec.bytes)
    && typeof rec.last === "string" && /^[0-9a-f]{64}$/.test(rec.last);
}

export async function sealedRecord(log, rel) {
  const p = parseRelpath(rel);
  return p ? (await sealedIndex(log, p.channel, p.chatId, p.account)).get(rel) ?? null : null;
}

/** The file must still begin with exactly what was sealed: line `lines` has chain hash `last`, found at byte `bytes`
 * or — when an erasure rewrote the day (same chain hashes, other sizes) and stopped before resealing — by counting
 * lines. Complete lines after the sealed part (a writer killed between extending a sealed day and resealing it leaves
 * them) must chain on from it; returns how many there are, to count into the new seal (docs/log-format.md, Seals). */
export async function checkAgainstSeal(fh, rel, sealed) {
  const st = await fh.stat();
  let ok = sealed.bytes <= st.size;
  if (ok) {
    const [last, end] = await readLastLine(fh, sealed.bytes);
    ok = end === sealed.bytes && last !== null && chainHash(last) === sealed.last;
  }
  let rest = null;
  if (ok) {
    rest = Buffer.alloc(st.size - sealed.bytes);
    if (rest.length) await fh.read(rest, 0, rest.length, sealed.bytes);
  } else {
    const all = Buffer.alloc(st.size);
    if (all.length) await fh.read(all, 0, all.length, 0);
    let pos = 0;
    let line = null;
    for (let i = 0; i < sealed.lines; i++) {
      const nl = all.indexOf(10, pos);
      if (nl < 0) { line = null; break; }
      line = all.subarray(pos, nl);
      pos = nl + 1;
    }
    ok = line !== null && chainHash(line) === sealed.last;
    rest = all.subarray(pos);
  }
  let n = 0;
  if (ok && rest.length) {
    let expected = sealed.last;
    let from = 0;
    for (let nl = rest.indexOf(10); ok && nl >= 0; from = nl + 1, nl = rest.indexOf(10, from)) {
      const line = rest.subarray(from, nl);  // lines after the sealed part must chain on from it
      try {
        ok = JSON.parse(line.toString("utf8"))?.prev === expected;
      } catch {
        ok = false;
      }
      expected = chainHash(line);
      n++;
    }
  }
  if (!ok) throw new DamagedLog(`${rel}: does not match its seal (run \`eventlog verify\`); refusing to append`);
  return n;
}

/** Auto-seal: a partition got a new day file, so seal its earlier day files that are not sealed yet. */
export async function sealBefore(log, channel, chatId, day, account = DEFAULT_ACCOUNT) {
  const index = await sealedIndex(log, channel, chatId, account);
  let since = null;
  for (const rel of index.keys()) {
    const p = parseRelpath(rel);
    if (p && (since === null || p.day > since)) since = p.day;
  }
  let sealed = false;
  for (const rel of await dayFiles(log, chatDir(channel, chatId, account))) {
    const d = parseRelpath(rel).day;
    if (d < day && (since === null || d > since) && !index.has(rel)) sealed = (await sealFile(log, rel)) || sealed;
  }
  if (sealed) await checkpoint(log); // every seal moves the head (docs/log-format.md, Head)
}

async function dayFiles(log, dir) {
  const base = join(log.root, dir);
  const ls = async (d, re) => (await readdir(d).catch(() => [])).filter((n) => re.test(n)).sort();
  const out = [];
  for (const y of await ls(base, /^\d{4}$/)) {
    for (const m of await ls(join(base, y), /^\d\d$/)) {
      for (const f of await ls(join(base, y, m), /^\d\d\.jsonl$/)) {
        const rel = `${dir}/${y}/${m}/${f}`;
        if (parseRelpath(rel)) out.push(rel);
      }
    }
  }
  return out;
}

async function sealFile(log, rel) {
  const path = join(log.root, rel);
  const p = parseRelpath(rel);
  return log.leases.run(path + ".lock", async () => {  // the writer's lease: this process may hold it already
    log.unsealed.delete(rel);
    let fh;
    try { fh = await open(path, C.O_RDONLY); } catch (e) { if (e.code === "ENOENT") return false; throw e; }
    try {
      const { lines, size, torn } = await measure(fh);
      if (torn || lines === 0) return false; // a torn tail is sealed after the next append repairs it
      const [last] = await readLastLine(fh, size);
      const lastHash = chainHash(last);
      const cur = (await sealedIndex(log, p.channel, p.chatId, p.account)).get(rel);
      if (cur && cur.lines === lines && cur.bytes === size && cur.last === lastHash) return false;
      await log.appendStream(sealRelpath(p.channel, p.chatId, p.account), sealRecord(rel, lines, size, lastHash));
      return true;
    } finally {
      await fh.close();
    }
  });
}

export function sealRecord(rel, lines, size, last) {
  const p = parseRelpath(rel);
  return { event: "seal:file", channel: p.channel, chat_id: p.chatId, ts: nowTs(), file: rel, lines, bytes: size, last };
}

/** Complete lines, bytes of complete lines, and whether a torn tail follows — streamed in 1 MiB reads. */
async function measure(fh) {
  const buf = Buffer.alloc(1 << 20);
  let pos = 0, lines = 0, lastEnd = 0;
  for (;;) {
    const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
    if (!bytesRead) break;
    let i = -1;
    while ((i = buf.indexOf(10, i + 1)) !== -1 && i < bytesRead) { lines++; lastEnd = pos + i + 1; }
    pos += bytesRead;
  }
  return { lines, size: lastEnd, torn: pos !== lastEnd };
}
