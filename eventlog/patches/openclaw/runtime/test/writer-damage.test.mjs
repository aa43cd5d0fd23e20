// The JS writer on files it did not write itself, or could only half write (issue 15 item 1: the writer-seal,
// writer-io and writer.mjs mutants the writer tests let live): a sealed day rewritten by an erasure (the golden
// vectors' file and erased file, computed by tests/vectors/store/make_v2_vectors.py independently of both writers),
// seals that claim more than the file has, unchained lines after the sealed part, last lines longer than one tail read
// (64 KiB) and day files longer than one measuring read (1 MiB), two writers creating the same day file at once, and
// an append whose line is written but whose seal update then fails.
import { test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { openEventLog, DamagedLog } from "../writer.mjs";
import { genesis, encodeWithPrev } from "../writer-format.mjs";
import { chainOk, readLines } from "./writer-helpers.mjs";
import { chainHash } from "../writer-commit.mjs";
import { sealRecord } from "../writer-seal.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const V2 = JSON.parse(readFileSync(join(here, "..", "..", "..", "..", "..", "tests", "vectors", "store", "v2.json"), "utf8"));
const tmp = () => mkdtempSync(join(tmpdir(), "writer-damage-"));
const CHAT = "-1001234567890";
const SEALS = `seals/telegram/${CHAT}.jsonl`;
const ev = (over = {}) => ({ event: "message:received", channel: "telegram", chat_id: CHAT,
  ts: "2026-11-30T23:59:59.000Z", text: "late", ...over });


/** A root holding the vector day file, sealed as written (or with `over` changing the seal record). */
async function sealedVectorDay(over = {}) {
  const root = tmp();
  const path = join(root, V2.relpath);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, V2.file);
  const lines = V2.file.split("\n").slice(0, -1);
  const log = await openEventLog({ root, fsync: "never" });
  await log.appendStream(SEALS, { ...sealRecord(V2.relpath, lines.length, Buffer.byteLength(V2.file), chainHash(lines.at(-1))),
    ...over });
  await log.close();
  return { root, path, lines };
}

const lastSeal = (root) => JSON.parse(readLines(join(root, SEALS)).at(-1));

test("a sealed day rewritten by an erasure (same chain, other sizes) is found again by counting lines", async () => {
  const { root, path, lines } = await sealedVectorDay();
  writeFileSync(path, V2.erased_file); // erasure of lines V2.erase: other bytes, other offsets, the same chain hashes
  assert.notEqual(Buffer.byteLength(V2.erased_file), Buffer.byteLength(V2.file));
  const log = await openEventLog({ root, fsync: "never" });
  const stored = await log.append(ev());
  assert.equal(stored.prev, chainHash(lines.at(-1)));
  assert.equal(chainOk(root, V2.relpath), lastSeal(root).last);
  assert.deepEqual([lastSeal(root).lines, lastSeal(root).bytes], [lines.length + 1, statSync(path).size]);
  // and a line a killed writer left after the (erased) sealed part is counted in too
  const extra = encodeWithPrev({ ...JSON.parse(readLines(path).at(-1)), id: "01KB00000000000000000000ZZ", text: "x", prev: undefined },
    chainHash(readLines(path).at(-1)));
  appendFileSync(path, extra + "\n");
  const log2 = await openEventLog({ root, fsync: "never" });
  await log2.append(ev({ text: "later" }));
  assert.deepEqual([lastSeal(root).lines, lastSeal(root).bytes], [lines.length + 3, statSync(path).size]);
  chainOk(root, V2.relpath);
  await log.close();
  await log2.close();
});

test("a seal the file no longer matches refuses the append and leaves the file as it was", async () => {
  const lines = V2.file.split("\n").slice(0, -1);
  const size = Buffer.byteLength(V2.file);
  const cases = [
    ["a whole last line cut off", {}, (p) => writeFileSync(p, lines.slice(0, -1).map((l) => l + "\n").join(""))],
    ["the seal claims one line more than the file has", { lines: lines.length + 1, bytes: size + 10 }, () => {}],
    ["the seal's bytes point inside a line and its count disagrees", { lines: lines.length - 1, bytes: size - 5 }, () => {}],
    ["the last sealed line edited in place", {}, (p) => writeFileSync(p, [...lines.slice(0, -1),
      lines.at(-1).replace('"event":"tap:start"', '"event":"tap:stop!"')].map((l) => l + "\n").join(""))],
    ["a line after the sealed part that does not chain on", {}, (p) => appendFileSync(p,
      encodeWithPrev({ ...JSON.parse(lines[0]), prev: undefined }, "0".repeat(64)) + "\n")],
    ["a line after the sealed part that is not JSON", {}, (p) => appendFileSync(p, "not json\n")],
    ["an empty line after the sealed part", {}, (p) => appendFileSync(p, "\n")],
    ["a second unchained line after a good one", {}, (p) => {
      const good = encodeWithPrev({ ...JSON.parse(lines[0]), prev: undefined, id: "01KB00000000000000000000ZY" }, chainHash(lines.at(-1)));
      appendFileSync(p, good + "\n" + encodeWithPrev({ ...JSON.parse(lines[0]), prev: undefined }, chainHash(lines[0])) + "\n");
    }],
  ];
  for (const [name, over, damage] of cases) {
    const { root, path } = await sealedVectorDay(over);
    damage(path);
    const before = readFileSync(path);
    const sealsBefore = readFileSync(join(root, SEALS));
    const log = await openEventLog({ root, fsync: "never" });
    await assert.rejects(log.append(ev()), DamagedLog, name);
    assert.deepEqual(readFileSync(path), before, name);
    assert.deepEqual(readFileSync(join(root, SEALS)), sealsBefore, name);
    await log.close();
  }
});

test("last lines longer than one tail read (64 KiB): a fresh writer chains on, repairs a long torn tail, checks seals",
  async () => {
    const root = tmp();
    const rel = "raw/telegram/chats/7/2026/11/29.jsonl";
    const e = (text, day = "29") => ({ event: "message:received", channel: "telegram", chat_id: "7",
      ts: `2026-11-${day}T10:00:00.000Z`, text });
    // one line alone in the file (the backwards read reaches offset 0), then lines of 1, 2 and 3 read chunks
    for (const [k, text] of [[0, "ж".repeat(40000)], [1, "a".repeat(65536 - 300)], [2, "b".repeat(70000)], [3, "ж".repeat(100000)],
      [4, "short"], [5, "c".repeat(65536 * 2 + 7)]]) {
      const log = await openEventLog({ root, fsync: "never" }); // fresh: no cached tail, the file is read backwards
      const stored = await log.append(e(text));
      const all = readLines(join(root, rel));
      assert.equal(all.length, k + 1);
      assert.equal(stored.prev, k === 0 ? genesis(rel) : chainHash(all[k - 1]), `line ${k}`);
      await log.close();
    }
    chainOk(root, rel);
    // a torn tail longer than a read chunk after a long line: moved aside whole, the chain goes on from the long line
    const torn = '{"event":"message:received","text":"' + "t".repeat(150000);
    appendFileSync(join(root, rel), torn);
    const lastGood = readLines(join(root, rel)).at(-1);
    const log = await openEventLog({ root, fsync: "never" });
    await log.append(e("after the tear"));
    const lines = readLines(join(root, rel)).map((l) => JSON.parse(l));
    assert.deepEqual(lines.slice(-2).map((l) => l.event), ["log:repair", "message:received"]);
    assert.equal(lines.at(-2).prev, chainHash(lastGood));
    assert.equal(lines.at(-2).torn_bytes, Buffer.byteLength(torn));
    const aside = readdirSync(dirname(join(root, rel))).filter((n) => n.includes(".torn-"));
    assert.equal(aside.length, 1);
    assert.equal(readFileSync(join(dirname(join(root, rel)), aside[0]), "utf8"), torn);
    // a new day seals this one (last line long); extending the sealed day checks the seal on that long line
    await log.append(e("c".repeat(80000), "30"));
    const seal = JSON.parse(readLines(join(root, "seals/telegram/7.jsonl")).at(-1));
    assert.deepEqual([seal.lines, seal.bytes, seal.last], [lines.length, statSync(join(root, rel)).size, chainOk(root, rel)]);
    await log.close();
    const log2 = await openEventLog({ root, fsync: "never" });
    await log2.append(e("d".repeat(70000)));
    const seal2 = JSON.parse(readLines(join(root, "seals/telegram/7.jsonl")).at(-1));
    assert.deepEqual([seal2.lines, seal2.bytes, seal2.last], [lines.length + 1, statSync(join(root, rel)).size, chainOk(root, rel)]);
    await log2.close();
  });

test("auto-seal measures a day file longer than one 1 MiB read exactly (no stale bytes of the previous read counted)",
  async () => {
    const root = tmp();
    const rel = "raw/telegram/chats/8/2026/11/29.jsonl";
    const log = await openEventLog({ root, fsync: "never" });
    const e = (text, day) => ({ event: "message:received", channel: "telegram", chat_id: "8", ts: `2026-11-${day}T10:00:00.000Z`, text });
    for (let i = 0; i < 6; i++) await log.append(e(String(i).repeat(300000), "29"));
    assert.ok(statSync(join(root, rel)).size > 1.5 * (1 << 20));
    await log.append(e("next day", "30"));
    const seal = JSON.parse(readLines(join(root, "seals/telegram/8.jsonl")).at(-1));
    assert.deepEqual([seal.file, seal.lines, seal.bytes, seal.last], [rel, 6, statSync(join(root, rel)).size, chainOk(root, rel)]);
    await log.close();
  });

test("two writers creating the same day file at once: one file, every line once, one chain from the genesis", async () => {
  const root = tmp();
  const a = await openEventLog({ root, fsync: "never" });
  const b = await openEventLog({ root, fsync: "never", lease: { idleMs: 0 } });
  const e = (who, i) => ({ event: "message:received", channel: "telegram", chat_id: "9", ts: "2026-11-30T10:00:00.000Z",
    text: `${who}${i}` });
  await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].flatMap((i) => [a.append(e("a", i)), b.append(e("b", i))]));
  const rel = "raw/telegram/chats/9/2026/11/30.jsonl";
  const texts = readLines(join(root, rel)).map((l) => JSON.parse(l).text);
  assert.deepEqual([...texts].sort(), [0, 1, 2, 3, 4, 5, 6, 7].flatMap((i) => [`a${i}`, `b${i}`]).sort());
  assert.equal(JSON.parse(readLines(join(root, rel))[0]).prev, genesis(rel));
  chainOk(root, rel);
  // no torn tails; a's lease (idle 200 ms) may still hold the lock here, depending on which writer appended last
  assert.deepEqual(readdirSync(dirname(join(root, rel))).filter((n) => !/\.(lock|want)$/.test(n)), ["30.jsonl"]);
  await a.close();
  await b.close();
  assert.deepEqual(readdirSync(dirname(join(root, rel))), ["30.jsonl"]);
});

test("an append whose line is written but whose seal update fails: rejected, never written twice, counted later",
  async () => {
    const { root, path, lines } = await sealedVectorDay();
    const lockAsDir = join(root, SEALS + ".lock"); // the seal stream's lock cannot be taken: reading it fails (EISDIR)
    mkdirSync(lockAsDir);
    const log = await openEventLog({ root, fsync: "never" });
    await assert.rejects(log.append(ev({ text: "written, seal failed" })), (err) => err.code === "EISDIR" && err.afterWrite === true);
    const after = readLines(path);
    assert.equal(after.length, lines.length + 1);
    assert.equal(after.filter((l) => JSON.parse(l).text === "written, seal failed").length, 1);
    assert.equal(lastSeal(root).lines, lines.length); // the seal did not move
    rmdirSync(lockAsDir);
    await log.append(ev({ text: "next" })); // the same writer: no stale cached tail, the orphan line counted into the seal
    assert.deepEqual([lastSeal(root).lines, lastSeal(root).bytes, lastSeal(root).last],
      [lines.length + 2, statSync(path).size, chainOk(root, V2.relpath)]);
    await log.close();
  });

test("a day file holding only a torn first line: moved aside, the first whole line chains from the genesis", async () => {
  const root = tmp();
  const rel = "raw/telegram/chats/11/2026/11/30.jsonl";
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), '{"event":"message:rec'); // a writer killed inside the very first line: no newline at all
  const log = await openEventLog({ root, fsync: "never" });
  await log.append({ event: "message:received", channel: "telegram", chat_id: "11", ts: "2026-11-30T10:00:00.000Z", text: "x" });
  const lines = readLines(join(root, rel)).map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.event), ["log:repair", "message:received"]);
  assert.equal(lines[0].prev, genesis(rel));
  chainOk(root, rel);
  await log.close();
});

test("an append that fails before writing (the day path is a directory) rejects with that error, nothing written",
  async () => {
    const root = tmp();
    const rel = "raw/telegram/chats/12/2026/11/30.jsonl";
    mkdirSync(join(root, rel), { recursive: true });
    const log = await openEventLog({ root, fsync: "never" });
    const e = { event: "message:received", channel: "telegram", chat_id: "12", ts: "2026-11-30T10:00:00.000Z", text: "x" };
    await assert.rejects(log.append(e), (err) => err.code === "EISDIR");
    assert.deepEqual(readdirSync(join(root, rel)), []);
    await log.close();
  });

test("a chat's first day file seals nothing and so writes no checkpoint (the head moves only with a seal)", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  await log.append({ event: "message:received", channel: "telegram", chat_id: "13", ts: "2026-11-30T10:00:00.000Z", text: "x" });
  assert.deepEqual(readdirSync(root), ["raw"]);
  await log.append({ event: "message:received", channel: "telegram", chat_id: "13", ts: "2026-12-01T10:00:00.000Z", text: "y" });
  assert.deepEqual(readLines(join(root, "seals/checkpoints.jsonl")).length, 1); // the 30th sealed: one checkpoint
  await log.close();
});
