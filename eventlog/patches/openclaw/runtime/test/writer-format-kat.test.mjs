// Known answers for the JS writer's format (writer-format.mjs) from sources the project did not write, and the
// properties its fast paths must keep (issue 15, mutation testing):
// - ULID time part: the ULID spec (github.com/ulid/spec, README: `ulid(1469918176385)` → `01ARYZ6S41…`, largest
//   `7ZZZZZZZZZ…`), NoProto's docs (github.com/only-cliches/NoProto, ulid.rs: 1604965249484 → `01EPQP4CEC…`);
//   monotonic ids within one ms are the previous random part + 1 (the spec's "Monotonicity" section).
// - random parts (ULID, salts) use every digit value in every position (a lost byte or shift would not);
// - timestamps already in normal form: RFC 3339 §5.7 (mday ≤ days of the month, hour ≤ 23, no year 0000) — the fast
//   path must refuse what Date.parse rolls over (30 February → 2 March);
// - 64-bit integer bounds, the 4 MiB line limit counted in UTF-8 bytes (eventlog/schema.py: `len(line) > MAX_LINE`),
//   toJSON values, non-JSON members, more than 32 keys ordered by code point.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openEventLog } from "../writer.mjs";

const BAD = { name: "BadEvent" }; // the private module instances below have their own BadEvent class

// A private instance of the module: its ULID state (last ms, last random part) is not shared with other tests.
const fresh = (tag) => import(`../writer-format.mjs?kat=${tag}`);
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const rand80 = (id) => [...id.slice(10)].reduce((a, c) => a * 32n + BigInt(CROCKFORD.indexOf(c)), 0n);
const ev = (over = {}) => ({ event: "message:sent", channel: "telegram", chat_id: "42",
  ts: "2026-11-30T10:00:00.000Z", ...over });

test("ULID time part: the spec's and NoProto's known answers, 0 and the largest time", async () => {
  const { newId, ULID_RE } = await fresh("time");
  for (const [ms, want] of [[0, "0000000000"], [1469918176385, "01ARYZ6S41"], [1604965249484, "01EPQP4CEC"],
    [2 ** 48 - 1, "7ZZZZZZZZZ"]]) {
    const id = newId(ms);
    assert.equal(id.slice(0, 10), want, String(ms));
    assert.match(id, ULID_RE);
  }
});

test("ULID within one ms (or a clock going back): the same time, the random part + 1 each, carrying", async () => {
  const { newId } = await fresh("mono");
  const T = 1796083200000;
  const first = newId(T);
  let prev = rand80(first);
  for (let i = 0; i < 300; i++) { // ≥ 9 carries out of the last digit
    const id = newId(i % 3 ? T : T - 1000 * i);
    assert.equal(id.slice(0, 10), first.slice(0, 10), "the time of the last id is kept");
    const r = rand80(id);
    assert.equal(r, (prev + 1n) % 2n ** 80n, id);
    prev = r;
  }
  // a later ms starts a fresh random part under the new time
  const later = newId(T + 1);
  assert.notEqual(later.slice(0, 10), first.slice(0, 10));
});

test("random parts use every digit value in every position: ULIDs (base 32) and salts (hex), from one pool", async () => {
  const { newId, newSalt } = await fresh("dist");
  const idDigits = Array.from({ length: 16 }, () => new Set());
  const saltDigits = Array.from({ length: 32 }, () => new Set());
  const salts = new Set();
  const ids = new Set();
  for (let i = 0; i < 3000; i++) { // 26 bytes of the 4 KiB pool per round: the pool is refilled ~19 times
    const id = newId(1e12 + i);
    ids.add(id);
    for (let k = 0; k < 16; k++) idDigits[k].add(id[10 + k]);
    const s = newSalt();
    assert.match(s, /^[0-9a-f]{32}$/);
    salts.add(s);
    for (let k = 0; k < 32; k++) saltDigits[k].add(s[k]);
  }
  assert.equal(ids.size, 3000);
  assert.equal(salts.size, 3000, "no salt repeats");
  idDigits.forEach((d, k) => assert.equal(d.size, 32, `ULID random digit ${k}`));
  saltDigits.forEach((d, k) => assert.equal(d.size, 16, `salt digit ${k}`));
});

test("ids alone and salts alone across many pool refills: every one well-formed and distinct", async () => {
  // 10 bytes per id and 16 per salt do not divide the 4 KiB pool: some id and some salt straddle its end
  const { newId, newSalt, ULID_RE } = await fresh("pool");
  const ids = Array.from({ length: 1500 }, (_, i) => newId(2e12 + i));
  assert.ok(ids.every((id) => ULID_RE.test(id)), ids.find((id) => !ULID_RE.test(id)));
  assert.equal(new Set(ids.map((id) => id.slice(10))).size, ids.length);
  newId(3e12); // 6 bytes: the salts below start off the pool's 16-byte grid
  const salts = Array.from({ length: 1500 }, () => newSalt());
  assert.ok(salts.every((s) => /^[0-9a-f]{32}$/.test(s)));
  assert.equal(new Set(salts).size, salts.length);
});

test("timestamps in normal form: real instants are kept as they are; what Date.parse would roll over is refused",
  async () => {
    const { normalizeTs } = await fresh("ts");
    for (const ok of ["0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2024-02-29T23:59:59.999Z",
      "2026-11-30T04:24:25.123Z", "2000-02-29T00:00:00.000Z"]) assert.equal(normalizeTs(ok), ok);
    for (const bad of ["0000-01-01T00:00:00.000Z", "2026-02-30T00:00:00.000Z", "2026-11-31T00:00:00.000Z",
      "2026-11-30T24:00:00.000Z", "2025-02-29T00:00:00.000Z", "1900-02-29T00:00:00.000Z", "2026-11-30T23:60:00.000Z",
      "2026-11-30T23:00:60.000Z", "2026-00-10T00:00:00.000Z", "2026-11-00T00:00:00.000Z"]) {
      assert.throws(() => normalizeTs(bad), BAD, bad);
    }
    // 24 characters that are not the normal form: normalised, not passed through
    assert.equal(normalizeTs("2026-11-30t04:24:25.123z"), "2026-11-30T04:24:25.123Z");
    assert.equal(normalizeTs("2026-11-30T04:24:25.1+01:00"), "2026-11-30T03:24:25.100Z");
  });

test("encoding: 64-bit integer bounds, toJSON, non-JSON members, > 32 keys by code point, long strings", async () => {
  const { encode } = await fresh("enc");
  assert.equal(encode({ a: 2n ** 63n - 1n, b: -(2n ** 63n) }), '{"a":9223372036854775807,"b":-9223372036854775808}');
  for (const big of [2n ** 63n, -(2n ** 63n) - 1n]) assert.throws(() => encode({ a: big }), BAD, String(big));
  assert.equal(encode({ t: new Date(0), n: null, y: true, f: false }),
    '{"f":false,"n":null,"t":"1970-01-01T00:00:00.000Z","y":true}');
  assert.equal(encode({ a: [undefined, () => 1, Symbol("s"), 1], b: () => 1, c: Symbol("s"), d: undefined }),
    '{"a":[null,null,null,1]}');
  for (const bad of [() => 1, Symbol("s"), undefined]) assert.throws(() => encode(bad), BAD, String(bad));
  const many = {};
  const names = ["\u{1F600}", "\uFFFF", "\uE000", "z", "A", "é"];
  for (let i = 0; i < 40; i++) many[`k${String(i).padStart(2, "0")}`] = i;
  for (const n of names) many[n] = n;
  const keys = Object.keys(JSON.parse(encode(many)));
  const cp = (s) => [...s].map((c) => c.codePointAt(0));
  for (let i = 1; i < keys.length; i++) {
    const [a, b] = [cp(keys[i - 1]), cp(keys[i])];
    let c = 0;
    for (let j = 0; j < Math.min(a.length, b.length) && c === 0; j++) c = a[j] - b[j];
    assert.ok(c < 0 || (c === 0 && a.length < b.length), `${keys[i - 1]} before ${keys[i]}`);
  }
  assert.deepEqual(keys.slice(-3), ["\uE000", "\uFFFF", "\u{1F600}"]);
  // long strings (> 64 units) are checked and escaped like short ones, also when one repeats or alternates
  const long1 = "a\"b".repeat(30);
  const long2 = "\n".repeat(70);
  assert.equal(encode({ a: long1, b: long1, c: long2, d: long1 }),
    `{"a":${JSON.stringify(long1)},"b":${JSON.stringify(long1)},"c":${JSON.stringify(long2)},"d":${JSON.stringify(long1)}}`);
  assert.throws(() => encode({ a: "x".repeat(70) + "\uD800" }), BAD);
  assert.throws(() => encode({ ["x".repeat(70) + "\uDC00"]: 1 }), BAD);
});

test("the 4 MiB line limit is on UTF-8 bytes, the limit itself allowed: through append, nothing written when over",
  async () => {
    const root = mkdtempSync(join(tmpdir(), "evl-kat-"));
    const log = await openEventLog({ root, fsync: "never" });
    const MAX = 4 * 1024 * 1024;
    const rel = join(root, "raw/telegram/chats/42/2026/11/30.jsonl");
    const base = ev({ id: "01KB0000000000000000000001", salt: "00112233445566778899aabbccddeeff", text: "" });
    await log.append(base);
    const n0 = statSync(rel).size - 1; // the line without its newline; each "€" adds 3 bytes
    const fill = MAX - n0;
    const euros = Math.floor(fill / 3);
    const text = "€".repeat(euros) + "x".repeat(fill - 3 * euros); // exactly MAX bytes
    await log.append({ ...base, id: "01KB0000000000000000000002", text });
    assert.equal(statSync(rel).size, n0 + 1 + MAX + 1);
    await assert.rejects(log.append({ ...base, id: "01KB0000000000000000000003", text: text + "x" }), BAD);
    await assert.rejects(log.append({ ...base, id: "01KB0000000000000000000003", text: "€".repeat(1400000) }),
      BAD); // 1.4 M units: 4.2 MB of UTF-8
    assert.equal(statSync(rel).size, n0 + 1 + MAX + 1, "nothing written");
    const last = readFileSync(rel, "utf8").split("\n")[1];
    assert.equal(Buffer.byteLength(last), MAX);
    await log.close();
  });

test("prepare: versions, salts only with content, ids and chat ids kept or refused", async () => {
  const { prepare } = await fresh("prep");
  assert.equal(prepare(ev({ v: 1 })).v, 2);
  assert.equal(prepare(ev({ v: 2 })).v, 2);
  assert.equal(prepare(ev({ prev: "f".repeat(64) })).prev, undefined, "the chain field is the writer's");
  assert.equal(prepare(ev({ salt: "00112233445566778899aabbccddeeff" })).salt, undefined, "no content: no salt");
  assert.equal(prepare(ev({ text: "x", salt: "00112233445566778899aabbccddeeff" })).salt,
    "00112233445566778899aabbccddeeff");
  for (const field of ["args", "forward", "from", "media", "note", "payload", "raw", "text", "title"]) {
    assert.match(prepare(ev({ [field]: "x" })).salt, /^[0-9a-f]{32}$/, field);
  }
  assert.equal(prepare(ev({ text: undefined })).salt, undefined);
  for (const salt of ["00112233445566778899AABBCCDDEEFF", "0011", 7]) {
    assert.throws(() => prepare(ev({ text: "x", salt })), BAD, String(salt));
  }
  assert.equal(prepare(ev({ id: "7ZZZZZZZZZZZZZZZZZZZZZZZZZ" })).id, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
  for (const id of ["8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "01KB000000000000000000000I", 5]) {
    assert.throws(() => prepare(ev({ id })), BAD, String(id));
  }
  assert.equal(prepare(ev({ chat_id: 12345678901234567890n })).chat_id, "12345678901234567890");
  assert.equal(prepare(ev({ chat_id: -42 })).chat_id, "-42");
  for (const chat_id of [2 ** 60, 1.5, null, {}]) assert.throws(() => prepare(ev({ chat_id })), BAD, String(chat_id));
  assert.throws(() => prepare(ev({ channel: 7 })), BAD);
  assert.throws(() => prepare([ev()]), BAD);
  assert.throws(() => prepare(null), BAD);
});
