// The JS writer against the shared golden vectors (tests/vectors/store/, also run by pytest) and the format doc:
// byte-identical lines, chain + genesis, names, timestamps, permissions, torn-tail repair, lock protocol, seals.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, statSync, readdirSync, existsSync, appendFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  BadEvent, encodeWithPrev, genesis, lineHash, newId, normalizeTs, checkChatId, checkChannel, prepare,
  compareCodePoints, ULID_RE, GENESIS_PREFIX, dayRelpath, parseRelpath,
} from "../writer-format.mjs";
import { openEventLog, resolveRoot, withFileLock, LockTimeout, DamagedLog } from "../writer.mjs";
import { chainOk, readLines } from "./writer-helpers.mjs";
import { chainHash, encodeForms, CONTENT_FIELDS } from "../writer-commit.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const VECTORS = join(here, "..", "..", "..", "..", "..", "tests", "vectors", "store");
const ENC = JSON.parse(readFileSync(join(VECTORS, "encoding.json"), "utf8"));
const NAMES = JSON.parse(readFileSync(join(VECTORS, "names.json"), "utf8"));
const TS = JSON.parse(readFileSync(join(VECTORS, "timestamps.json"), "utf8"));
const V2 = JSON.parse(readFileSync(join(VECTORS, "v2.json"), "utf8"));
const tmp = () => mkdtempSync(join(tmpdir(), "writer-test-"));
const ev = (over = {}) => ({ event: "message:received", channel: "telegram", chat_id: "42",
  ts: "2026-11-30T10:00:00.000Z", text: "hi", ...over });


test("vectors: v1 lines keep their encoding and are their own commitment form", () => {
  for (const c of ENC.lines) {
    const { v, ...rest } = c.event;
    const line = encodeWithPrev({ ...rest, v }, c.prev); // the canonical encoding itself is unchanged
    assert.equal(line, c.line, c.name);
    assert.equal(chainHash(line), c.hash, c.name);
    assert.equal(chainHash(Buffer.from(line)), c.hash, c.name);
  }
  assert.equal(GENESIS_PREFIX, ENC.genesis_prefix);
  assert.equal(genesis(ENC.relpath), ENC.genesis);
  assert.deepEqual(CONTENT_FIELDS, V2.content_fields);
});

test("vectors v2: line, commitment form, chain hash; erased lines hash the same", () => {
  for (const c of V2.lines) {
    const [line, form] = encodeForms(prepare(c.event), c.prev);
    assert.equal(line, c.line, c.name);
    assert.equal(form ?? line, c.form, c.name);
    assert.equal(chainHash(line), c.hash, c.name);
    assert.equal(chainHash(Buffer.from(line)), c.hash, c.name);
    assert.equal(chainHash(c.erased), c.hash, c.name);
  }
});

test("vectors v2: the writer produces the vector file byte for byte", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  for (const c of V2.lines) await log.append(c.event);
  assert.equal(readFileSync(join(root, V2.relpath), "utf8"), V2.file);
});

test("vectors v2: the writer chains on after erased lines and after v1 lines (mixed file)", async () => {
  let root = tmp();
  const path = join(root, V2.relpath);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, V2.erased_file);
  let log = await openEventLog({ root, fsync: "never" });
  const stored = await log.append({ ...V2.lines[0].event, id: newId() });
  assert.equal(stored.prev, V2.lines.at(-1).hash);
  root = tmp();
  const mixed = join(root, V2.relpath);
  mkdirSync(dirname(mixed), { recursive: true });
  writeFileSync(mixed, V2.mixed.v1_lines.map((l) => l + "\n").join(""));
  log = await openEventLog({ root, fsync: "never" });
  for (const c of V2.mixed.v2) await log.append(c.event);
  assert.equal(readFileSync(mixed, "utf8"), V2.mixed.file);
});

test("chainHash works on the line's bytes: numbers JS cannot hold exactly hash like Python wrote them", () => {
  // a Python-written line with an integral float and an integer beyond 2^53 inside content
  const line = '{"channel":"telegram","chat_id":"1","event":"x:y","id":"01KB0000000000000000000001","prev":"p",' +
    '"raw":{"big":18014398509481985,"f":1.0},"salt":"00112233445566778899aabbccddeeff","ts":"2026-11-30T10:00:00.000Z","v":2}';
  const salt = Buffer.from("00112233445566778899aabbccddeeff", "hex");
  const c = createHash("sha256").update(Buffer.concat([salt, Buffer.from("raw\0"),
    Buffer.from('{"big":18014398509481985,"f":1.0}')])).digest("hex");
  const form = line.replace('{"big":18014398509481985,"f":1.0}', `{"c":"${c}"}`)
    .replace(',"salt":"00112233445566778899aabbccddeeff"', "");
  assert.equal(chainHash(line), createHash("sha256").update(form).digest("hex"));
});

test("vectors: chat ids, channels and timestamps", () => {
  for (const c of NAMES.chat_id_ok) assert.equal(checkChatId(c), c);
  for (const c of NAMES.chat_id_bad) assert.throws(() => checkChatId(c), BadEvent, JSON.stringify(c));
  for (const c of NAMES.channel_ok) assert.equal(checkChannel(c), c);
  for (const c of NAMES.channel_bad) assert.throws(() => checkChannel(c), BadEvent, JSON.stringify(c));
  for (const [given, want] of TS.ok) assert.equal(normalizeTs(given), want, given);
  for (const given of TS.bad) assert.throws(() => normalizeTs(given), BadEvent, given);
  for (const [given, rel] of TS.paths) {
    assert.equal(dayRelpath("telegram", "1", normalizeTs(given)), rel, given);
    assert.ok(parseRelpath(rel), rel);
  }
  assert.equal(checkChatId(-1001234567890), "-1001234567890"); // integers are stored as strings
});

test("encoding: code-point key order, escapes, numbers, undefined, bad values", () => {
  const line = encodeWithPrev(prepare(ev({ id: "01KB0000000000000000000001", "\u{1F600}": 1, "\uFFFF": 2,
    nested: [{ b: 1, a: [{ d: 1, c: 2 }] }], esc: "q\"b\\\b\t\n\f\r\u0001\u001f\u2028\u007f",
    nums: [0.5, 1e-6, 1.5e-6, 1e-5, 51.50735, -3, 0], skip: undefined })), "x");
  const obj = JSON.parse(line);
  assert.deepEqual(Object.keys(obj).slice(-3), ["v", "\uFFFF", "\u{1F600}"]); // U+FFFF < U+1F600 by code point
  assert.ok(line.includes('"nested":[{"a":[{"c":2,"d":1}],"b":1}]'));
  assert.ok(line.includes('"esc":"q\\"b\\\\\\b\\t\\n\\f\\r\\u0001\\u001f\u2028\u007f"'));
  assert.ok(line.includes('"nums":[0.5,1e-6,1.5e-6,0.00001,51.50735,-3,0]'));
  assert.ok(!line.includes("skip"));
  assert.ok(compareCodePoints("\uE000", "\u{10000}") < 0);
  for (const bad of [{ text: "\uD800x" }, { n: NaN }, { n: 2 ** 60 }, { n: Infinity }, { v: 3 }, { id: "nope" },
    { event: "Bad" }, { channel: "Tele gram" }, { chat_id: "../x" }, { ts: "2026-11-30" }, { text: "x".repeat(4194304) }]) {
    assert.throws(() => encodeWithPrev(prepare(ev(bad)), "x"), BadEvent, JSON.stringify(Object.keys(bad)));
  }
  for (const k of ["event", "channel", "chat_id", "ts"]) {
    const e = ev();
    delete e[k];
    assert.throws(() => prepare(e), /missing required field\(s\): /);
  }
});

test("ULIDs are unique and sort in creation order", () => {
  const ids = Array.from({ length: 20000 }, () => newId());
  assert.equal(new Set(ids).size, ids.length);
  assert.deepEqual([...ids].sort(), ids);
  assert.ok(ids.every((i) => ULID_RE.test(i)));
});

test("root resolution matches the Python side", () => {
  assert.equal(resolveRoot({ EVENTLOG_ROOT: "/a", OPENCLAW_STATE_DIR: "/b", HOME: "/h" }), "/a");
  assert.equal(resolveRoot({ OPENCLAW_STATE_DIR: "/b", HOME: "/h" }), "/b/eventlog");
  assert.equal(resolveRoot({ HOME: "/h" }), "/h/.openclaw/eventlog");
  assert.equal(resolveRoot({ EVENTLOG_ROOT: "~/logs", HOME: "/h" }), "/h/logs");
  assert.equal(resolveRoot({ EVENTLOG_ROOT: "rel/x", HOME: "/h" }), join(process.cwd(), "rel/x"));
  assert.equal(resolveRoot({ OPENCLAW_STATE_DIR: "~", HOME: "/h" }), "/h/eventlog");
});

for (const fsync of ["always", "batch", "never"]) {
  test(`append (${fsync}): stored event, 0600/0700, chain, concurrent appends stay linear`, async () => {
    const root = tmp();
    const log = await openEventLog({ root, fsync });
    const stored = await log.append(ev({ chat_id: -100777, ts: "2026-12-01T02:00:00+03:00" }));
    assert.equal(stored.chat_id, "-100777");
    assert.equal(stored.ts, "2026-11-30T23:00:00.000Z");
    assert.match(stored.id, ULID_RE);
    const rel = "raw/telegram/chats/-100777/2026/11/30.jsonl";
    assert.equal(stored.prev, genesis(rel));
    await Promise.all(Array.from({ length: 300 }, (_, i) => log.append(ev({ chat_id: -100777, text: `m${i}`,
      ts: "2026-11-30T23:00:01Z" }))));
    assert.equal(readLines(join(root, rel)).length, 301);
    chainOk(root, rel);
    assert.equal(statSync(join(root, rel)).mode & 0o777, 0o600);
    for (const d of ["raw", "raw/telegram/chats/-100777", "raw/telegram/chats/-100777/2026/11"]) {
      assert.equal(statSync(join(root, d)).mode & 0o777, 0o700, d);
    }
    // the lease: the lock stays held by this process after the appends, with its pid and start time, until close()
    assert.match(readFileSync(join(root, rel + ".lock"), "latin1"), new RegExp(`^${process.pid} \\d+\n$`));
    await log.close();
    assert.ok(!existsSync(join(root, rel + ".lock")));
  });
}

test("appendMany validates everything before writing anything", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  await assert.rejects(log.appendMany([ev(), ev({ chat_id: "a/b" })]), (e) => e instanceof BadEvent && e.index === 1);
  assert.deepEqual(readdirSync(root), []);
  const out = await log.appendMany([ev({ text: "a" }), ev({ text: "b", chat_id: "43" })]);
  assert.deepEqual(out.map((e) => e.text), ["a", "b"]);
});

test("appendStream: chained, non-partitioned, refuses paths outside", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  const a = await log.appendStream("dlp/alerts.jsonl", { event: "dlp:alert", channel: "telegram", chat_id: "42",
    ts: "2026-11-30T10:00:00Z", rule: "openai-key" });
  assert.equal(a.prev, genesis("dlp/alerts.jsonl"));
  await log.appendStream("dlp/alerts.jsonl", { ...a, id: undefined, rule: "x" });
  chainOk(root, "dlp/alerts.jsonl");
  for (const bad of ["raw/telegram/x.jsonl", "../x.jsonl", "/etc/x.jsonl", "dlp/../../x.jsonl", "dlp/alerts"]) {
    await assert.rejects(log.appendStream(bad, ev()), /not a stream path/);
  }
});

test("a torn tail is moved aside with a log:repair record, never glued to the next line", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "batch" });
  await log.append(ev({ text: "first" }));
  const rel = "raw/telegram/chats/42/2026/11/30.jsonl";
  const torn = '{"event":"message:rec';
  appendFileSync(join(root, rel), torn); // a crash mid-write by another process
  const fresh = await openEventLog({ root, fsync: "batch" });
  await fresh.append(ev({ text: "second" }));
  const lines = readLines(join(root, rel)).map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.event), ["message:received", "log:repair", "message:received"]);
  assert.equal(lines[1].torn_bytes, torn.length);
  assert.equal(lines[1].torn_sha256, lineHash(torn));
  assert.equal(readFileSync(join(root, dirname(rel), lines[1].moved_to), "utf8"), torn);
  assert.match(lines[1].moved_to, /^30\.jsonl\.torn-[0-9A-Z]{26}$/);
  chainOk(root, rel);
});

test("lock protocol: waits for a live holder, breaks a dead one's lock, times out", async () => {
  const root = tmp();
  const lock = join(root, "f.lock");
  writeFileSync(lock, "999999999\n"); // no such pid: stale
  assert.match(await withFileLock(lock, async () => readFileSync(lock, "utf8")), new RegExp(`^${process.pid} \\d+\n$`));
  assert.ok(!existsSync(lock));
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
  try {
    writeFileSync(lock, `${child.pid}\n`); // held by a live process
    await assert.rejects(withFileLock(lock, async () => 1, 300), LockTimeout);
    setTimeout(() => child.kill(), 200); // the holder dies: its lock becomes stale and is broken
    assert.equal(await withFileLock(lock, async () => "got it", 10000), "got it");
  } finally {
    child.kill();
  }
});

test("seals: a new day seals the earlier day; appending to a sealed day extends its seal, or refuses if damaged",
  async () => {
    const root = tmp();
    const log = await openEventLog({ root, fsync: "never" });
    await log.append(ev({ ts: "2026-11-29T10:00:00Z", text: "day 1a" }));
    await log.append(ev({ ts: "2026-11-29T11:00:00Z", text: "day 1b" }));
    await log.append(ev({ ts: "2026-11-30T10:00:00Z", text: "day 2" }));
    const day1 = "raw/telegram/chats/42/2026/11/29.jsonl";
    const seals = readLines(join(root, "seals/telegram/42.jsonl")).map((l) => JSON.parse(l));
    assert.equal(seals.length, 1);
    assert.deepEqual([seals[0].event, seals[0].file, seals[0].lines, seals[0].bytes, seals[0].last],
      ["seal:file", day1, 2, statSync(join(root, day1)).size, chainOk(root, day1)]);
    chainOk(root, "seals/telegram/42.jsonl");
    await log.append(ev({ ts: "2026-11-29T12:00:00Z", text: "late" })); // lands in the sealed day: seal extended
    const seals2 = readLines(join(root, "seals/telegram/42.jsonl")).map((l) => JSON.parse(l));
    assert.deepEqual([seals2.length, seals2[1].lines, seals2[1].last], [2, 3, chainOk(root, day1)]);
    // every seal appended a checkpoint naming the seal stream's new state (the head moves)
    const cps = readLines(join(root, "seals/checkpoints.jsonl")).map((l) => JSON.parse(l));
    const sealLines = readLines(join(root, "seals/telegram/42.jsonl"));
    assert.equal(cps.length, 2);
    assert.deepEqual(cps[1].streams["seals/telegram/42.jsonl"], { lines: 2,
      bytes: sealLines.reduce((a, l) => a + Buffer.byteLength(l) + 1, 0), last: chainHash(sealLines[1]) });
    assert.equal(cps[0].streams["seals/telegram/42.jsonl"].lines, 1);
    chainOk(root, "seals/checkpoints.jsonl");
    appendFileSync(join(root, day1), readLines(join(root, day1))[0] + "\n"); // damage: a duplicated line
    await assert.rejects(log.append(ev({ ts: "2026-11-29T13:00:00Z" })), DamagedLog);
  });

test("seals: lines after the sealed part (a writer killed before resealing) are accepted and counted into the new seal",
  async () => {
    const root = tmp();
    const log = await openEventLog({ root, fsync: "never" });
    await log.append(ev({ ts: "2026-11-29T10:00:00Z", text: "a" }));
    await log.append(ev({ ts: "2026-11-30T10:00:00Z", text: "b" }));  // seals the 29th with 1 line
    await log.append(ev({ ts: "2026-11-29T11:00:00Z", text: "late" }));  // extends it: seal record 2 says 2 lines
    const sealPath = join(root, "seals/telegram/42.jsonl");
    const recs = readLines(sealPath);
    writeFileSync(sealPath, recs.slice(0, -1).map((l) => l + "\n").join(""));  // the reseal never happened
    await log.close();
    const log2 = await openEventLog({ root, fsync: "never" });
    await log2.append(ev({ ts: "2026-11-29T12:00:00Z", text: "later" }));
    const last = JSON.parse(readLines(sealPath).at(-1));
    assert.equal(last.lines, 3);
    assert.equal(last.last, chainOk(root, "raw/telegram/chats/42/2026/11/29.jsonl"));
    await log2.close();
  });

test("the writer never does synchronous file I/O (the gateway's event loop must not wait on the disk)", () => {
  for (const f of ["writer.mjs", "writer-io.mjs", "writer-seal.mjs", "writer-format.mjs", "writer-lock.mjs", "writer-commit.mjs",
    "writer-head.mjs"]) {
    const src = readFileSync(join(here, "..", f), "utf8");
    // the one exception: the process 'exit' handler removes held leases (an exit handler cannot wait)
    const allowed = f === "writer-lock.mjs" ? ["unlinkSync("] : [];
    assert.deepEqual(src.match(/\b\w+Sync\s*\(/g) ?? [], allowed, `${f} calls a *Sync function`);
  }
});

test("a chat directory deleted while the writer runs is made again (cached handles and dirs are not trusted blindly)",
  async () => {
    const root = tmp();
    // checkMs 0: the lease re-checks its cached state on every append (by default once per LEASE_CHECK_MS, the window
    // in which files removed by hand under a busy writer are not noticed — docs/log-format.md, Locking)
    const log = await openEventLog({ root, fsync: "never", lease: { checkMs: 0 } });
    await log.append(ev({ text: "before" }));
    rmSync(join(root, "raw/telegram/chats/42"), { recursive: true });
    await log.append(ev({ text: "after" }));
    const rel = "raw/telegram/chats/42/2026/11/30.jsonl";
    assert.deepEqual(readLines(join(root, rel)).map((l) => JSON.parse(l).text), ["after"]);
    chainOk(root, rel); // a new file starts from the genesis again
    await log.close();
  });

test("seals: malformed seal records are ignored (the last well-formed one applies), never a crash", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  await log.append(ev({ ts: "2026-11-29T10:00:00Z", text: "a" }));
  await log.append(ev({ ts: "2026-11-30T10:00:00Z", text: "b" })); // seals the 29th
  const day1 = "raw/telegram/chats/42/2026/11/29.jsonl";
  for (const bad of [{ file: day1, lines: 1, last: "0".repeat(64) }, { file: day1, lines: "x", bytes: 1, last: "zz" },
    { file: 5, lines: 1, bytes: 1, last: "0".repeat(64) }]) {
    await log.appendStream("seals/telegram/42.jsonl", { event: "seal:file", channel: "telegram", chat_id: "42",
      ts: "2026-11-30T11:00:00Z", ...bad });
  }
  const stored = await log.append(ev({ ts: "2026-11-29T12:00:00Z", text: "late" })); // checks the well-formed seal
  assert.equal(stored.prev, chainHash(readLines(join(root, day1))[0]));
  chainOk(root, day1);
  const seals = readLines(join(root, "seals/telegram/42.jsonl")).map((l) => JSON.parse(l));
  assert.deepEqual([seals.at(-1).file, seals.at(-1).lines], [day1, 2]);
});
