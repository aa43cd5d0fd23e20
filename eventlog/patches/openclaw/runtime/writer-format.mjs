// Event model v2 for the JS writer: validation, normalisation and the canonical one-line encoding of
// docs/log-format.md. The Python side (eventlog/schema.py) must produce the same bytes for the same parsed event;
// tests/vectors/store/ holds the golden vectors both test suites run.
import { createHash, getRandomValues } from "node:crypto";

export const VERSION = 2;
export const VERSIONS = [1, 2]; // what readers accept; the writer writes VERSION
// Top-level fields that hold what people wrote or who they are: committed to by a salted hash (writer-commit.mjs).
export const CONTENT_FIELDS = ["args", "forward", "from", "media", "note", "payload", "raw", "text", "title"];
export const SALT_RE = /^[0-9a-f]{32}$/;
export const MAX_LINE = 4 * 1024 * 1024;
export const REQUIRED = ["event", "channel", "chat_id", "ts"];
export const GENESIS_PREFIX = "openclaw-eventlog:v1:genesis:";

export const EVENT_RE = /^[a-z][a-z0-9_]*(?::[a-z][a-z0-9_]*)+$/;
export const CHANNEL_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/;
export const CHAT_ID_RE = /^[A-Za-z0-9_@-][A-Za-z0-9_@.-]{0,127}$/;
// OpenClaw's canonical account id (normalizeAccountId, src/routing/account-id.ts, openclaw 2026.9.6); "default" is its
// DEFAULT_ACCOUNT_ID, and an event without `account` belongs to it (docs/log-format.md, Layout).
export const ACCOUNT_RE = /^[a-z0-9_][a-z0-9_-]{0,63}$/;
export const DEFAULT_ACCOUNT = "default";
export const ULID_RE = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const TS_RE = /^(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:[0-5]\d)$/; // \d is ASCII-only in JS
const NORMAL_TS_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export class EventlogError extends Error {
  constructor(message, code = "EVENTLOG_ERROR") {
    super(message);
    this.name = "EventlogError";
    this.code = code;
  }
}

/** Input that is not a valid event (missing fields, hostile names, unencodable values, too large). */
export class BadEvent extends EventlogError {
  constructor(message) {
    super(message, "EVENTLOG_BAD_EVENT");
    this.name = "BadEvent";
  }
}

export function sha256hex(data) {
  return createHash("sha256").update(data).digest("hex");
}

/** hash(line): lowercase hex SHA-256 of the line's UTF-8 bytes without the newline. */
export const lineHash = sha256hex;

export function genesis(relpath) {
  return sha256hex(GENESIS_PREFIX + relpath);
}

// ---- random bytes: one getRandomValues per 4 KiB instead of one per salt and per id (each call crosses into OpenSSL)
const POOL = Buffer.alloc(4096);
let poolOff = POOL.length;
/** `n` (≤ 64) fresh random bytes as a view into the pool; use them before the next call. */
function randomView(n) {
  if (poolOff + n > POOL.length) { getRandomValues(POOL); poolOff = 0; }
  const v = POOL.subarray(poolOff, poolOff + n);
  poolOff += n;
  return v;
}
/** 16 random bytes as 32 lowercase hex characters (a line's salt). */
export function newSalt() {
  if (poolOff + 16 > POOL.length) { getRandomValues(POOL); poolOff = 0; }
  poolOff += 16;
  return POOL.toString("hex", poolOff - 16, poolOff);
}

// ---- ULID: 48-bit ms time + 80 random bits; within one ms the random part is incremented so ids sort in order.
// The 80 bits are kept as 16 base-32 digits (no BigInt arithmetic per id).
let lastMs = -1;
const lastRand = new Uint8Array(16);

export function newId(ms = Date.now()) {
  if (ms <= lastMs) {
    ms = lastMs;
    let i = 15; // + 1, carrying; all 80 bits set wraps to zero (as (rand + 1) mod 2^80)
    while (i >= 0 && lastRand[i] === 31) lastRand[i--] = 0;
    if (i >= 0) lastRand[i]++;
  } else {
    const b = randomView(10);
    for (let h = 0; h < 2; h++) { // 5 bytes = 40 bits = 8 digits, exact in a double
      let x = b[5 * h] * 2 ** 32 + ((b[5 * h + 1] << 24) >>> 0) + (b[5 * h + 2] << 16) + (b[5 * h + 3] << 8) + b[5 * h + 4];
      for (let d = 7; d >= 0; d--) { lastRand[8 * h + d] = x % 32; x = Math.floor(x / 32); }
    }
  }
  lastMs = ms;
  let out = "";
  for (let k = 9, t = ms; k >= 0; k--, t = Math.floor(t / 32)) out = CROCKFORD[t % 32] + out;
  for (let i = 0; i < 16; i++) out += CROCKFORD[lastRand[i]];
  return out;
}

// ---- timestamps
function daysInMonth(y, m) {
  return new Date(Date.UTC(y, m, 0)).getUTCDate(); // day 0 of the next month
}

/** RFC 3339 in any offset → UTC with milliseconds (`2026-11-30T04:24:25.123Z`); more precision is truncated. */
export function normalizeTs(value) {
  if (typeof value !== "string") throw new BadEvent("ts must be an RFC 3339 string");
  // Already normal (what toISOString gives, e.g. the tap's own clock): it is its own normal form when it names a real
  // instant (Date.parse round-trips: no 30 February, no 24:00) in years 0001–9999.
  if (value.length === 24 && NORMAL_TS_RE.test(value) && !value.startsWith("0000")) {
    const t = Date.parse(value);
    if (t === t && new Date(t).toISOString() === value) return value;
  }
  const m = TS_RE.exec(value);
  if (!m) throw new BadEvent(`ts is not RFC 3339: ${JSON.stringify(value.slice(0, 40))}`);
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  const ms = Number((m[7] || "0").slice(0, 3).padEnd(3, "0"));
  let offMin = 0;
  if (m[8] !== "Z" && m[8] !== "z") {
    const oh = Number(m[8].slice(1, 3));
    const om = Number(m[8].slice(4, 6));
    offMin = (m[8][0] === "+" ? 1 : -1) * (oh * 60 + om);
    if (Math.abs(offMin) >= 24 * 60) throw new BadEvent(`ts is not a valid time: ${JSON.stringify(value.slice(0, 40))}`);
  }
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 59) {
    throw new BadEvent(`ts is not a valid time: ${JSON.stringify(value.slice(0, 40))}`);
  }
  const t = new Date(0);
  t.setUTCFullYear(y, mo - 1, d); // setUTCFullYear keeps years < 100 literal (Date.UTC would map 99 → 1999)
  t.setUTCHours(h, mi - offMin, s, ms);
  const year = t.getUTCFullYear();
  if (year < 1 || year > 9999) throw new BadEvent(`ts is out of range: ${JSON.stringify(value.slice(0, 40))}`);
  const p = (n, w = 2) => String(n).padStart(w, "0");
  return `${p(year, 4)}-${p(t.getUTCMonth() + 1)}-${p(t.getUTCDate())}T${p(t.getUTCHours())}:` +
    `${p(t.getUTCMinutes())}:${p(t.getUTCSeconds())}.${p(t.getUTCMilliseconds(), 3)}Z`;
}

// ---- names
export function checkChatId(value) {
  if (typeof value === "number" && Number.isSafeInteger(value)) value = String(value);
  else if (typeof value === "bigint") value = value.toString();
  if (typeof value !== "string") throw new BadEvent("chat_id must be a string or an integer");
  if (!CHAT_ID_RE.test(value)) {
    const shown = JSON.stringify(value.slice(0, 40));
    throw new BadEvent(`chat_id not allowed (letters, digits, _ @ - . only, no leading '.', ≤128): ${shown}`);
  }
  return value;
}

export function checkChannel(value) {
  if (typeof value !== "string" || !CHANNEL_RE.test(value)) {
    throw new BadEvent(`channel must match [a-z0-9][a-z0-9_-]{0,31}: ${JSON.stringify(String(value).slice(0, 40))}`);
  }
  return value;
}

export function checkAccount(value) {
  if (typeof value !== "string" || !ACCOUNT_RE.test(value)) {
    throw new BadEvent(`account must match [a-z0-9_][a-z0-9_-]{0,63} (OpenClaw's account id): ${JSON.stringify(String(value).slice(0, 40))}`);
  }
  return value;
}

/** Validate an input event and fill `v` and `id` (the writer fills `prev`). Returns a new object. */
export function prepare(event) {
  if (event === null || typeof event !== "object" || Array.isArray(event)) {
    throw new BadEvent("an event must be a JSON object");
  }
  const missing = REQUIRED.filter((k) => !(k in event) || event[k] === undefined);
  if (missing.length) throw new BadEvent("missing required field(s): " + missing.join(", "));
  const out = { ...event };
  delete out.prev;
  if (out.v !== undefined && !VERSIONS.includes(out.v)) {
    throw new BadEvent(`unsupported event version v=${JSON.stringify(out.v)} (this writer writes v${VERSION})`);
  }
  out.v = VERSION;
  const salt = out.salt;
  delete out.salt;
  if (CONTENT_FIELDS.some((k) => out[k] !== undefined)) {
    // content present: the line keeps a salt (a valid given one is kept, like an id)
    if (salt === undefined) out.salt = newSalt();
    else if (typeof salt !== "string" || !SALT_RE.test(salt)) throw new BadEvent("salt must be 32 lowercase hex characters");
    else out.salt = salt;
  }
  if (typeof out.event !== "string" || !EVENT_RE.test(out.event)) {
    throw new BadEvent(`event must look like 'message:received': ${JSON.stringify(String(out.event).slice(0, 40))}`);
  }
  out.channel = checkChannel(out.channel);
  out.chat_id = checkChatId(out.chat_id);
  if ("account" in out) out.account = checkAccount(out.account);
  out.ts = normalizeTs(out.ts);
  if (out.id !== undefined) {
    if (typeof out.id !== "string" || !ULID_RE.test(out.id)) {
      throw new BadEvent(`id must be a ULID (26 Crockford base32 characters): ${JSON.stringify(String(out.id).slice(0, 40))}`);
    }
  } else {
    out.id = newId();
  }
  return out;
}

// ---- canonical encoding
/** Order keys by Unicode code point (what orjson's sorted keys give), not by UTF-16 unit as Array#sort does. */
export function compareCodePoints(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) {
      const xs = x >= 0xd800 && x <= 0xdfff;
      const ys = y >= 0xd800 && y <= 0xdfff;
      if (xs !== ys) return xs ? 1 : -1; // a surrogate starts a code point above U+FFFF
      return x - y;
    }
  }
  return a.length - b.length;
}

/** Sort a small array of keys in place by code point (insertion sort: objects in events have a handful of keys, and
 * Array#sort with a comparator allocates a work area per call — one per object of every event). */
export function sortKeys(keys) {
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i];
    let j = i - 1;
    while (j >= 0 && compareCodePoints(keys[j], k) > 0) { keys[j + 1] = keys[j]; j--; }
    keys[j + 1] = k;
  }
  return keys;
}

function encodeNumber(v) {
  if (!Number.isFinite(v)) throw new BadEvent(`event cannot be encoded: ${v} is not a JSON number`);
  if (Number.isInteger(v)) {
    if (!Number.isSafeInteger(v)) throw new BadEvent(`event cannot be encoded: integer ${v} is beyond 2^53`);
    return Object.is(v, -0) ? "0" : String(v);
  }
  const a = Math.abs(v);
  // orjson writes 1e-6 ≤ |v| < 1e-5 in exponent form where JS writes 0.00000x; both are the shortest round trip.
  if (a >= 1e-6 && a < 1e-5) return v.toExponential();
  return JSON.stringify(v);
}

let lastLong = ""; // the last long string encoded, and its JSON
let lastLongJson = '""';

function encodeValue(v, parts) {
  if (v !== null && typeof v === "object" && typeof v.toJSON === "function") v = v.toJSON();
  switch (typeof v) {
    case "string":
      if (v.length > 64) { // a message's text is usually in an event twice (text, payload.text): encoded once
        if (v !== lastLong) {
          if (!v.isWellFormed()) throw new BadEvent("event cannot be encoded: a string contains a lone surrogate");
          lastLongJson = JSON.stringify(v);
          lastLong = v;
        }
        parts.push(lastLongJson);
        return;
      }
      if (!v.isWellFormed()) throw new BadEvent("event cannot be encoded: a string contains a lone surrogate");
      parts.push(JSON.stringify(v));
      return;
    case "number":
      parts.push(encodeNumber(v));
      return;
    case "boolean":
      parts.push(v ? "true" : "false");
      return;
    case "bigint":
      if (v < INT64_MIN || v > INT64_MAX) throw new BadEvent("event cannot be encoded: integer beyond 64 bits");
      parts.push(v.toString());
      return;
    case "object":
      if (v === null) {
        parts.push("null");
      } else if (Array.isArray(v)) {
        parts.push("[");
        for (let i = 0; i < v.length; i++) {
          if (i) parts.push(",");
          const item = v[i];
          if (item === undefined || typeof item === "function" || typeof item === "symbol") parts.push("null");
          else encodeValue(item, parts);
        }
        parts.push("]");
      } else {
        // Like JSON.stringify, keys whose value is undefined (or a function) are left out.
        const keys = Object.keys(v).filter((k) => v[k] !== undefined && typeof v[k] !== "function"
          && typeof v[k] !== "symbol");
        if (keys.length > 32) keys.sort(compareCodePoints); else sortKeys(keys);
        parts.push("{");
        for (let i = 0; i < keys.length; i++) {
          if (i) parts.push(",");
          if (!keys[i].isWellFormed()) throw new BadEvent("event cannot be encoded: a key contains a lone surrogate");
          parts.push(JSON.stringify(keys[i]), ":");
          encodeValue(v[keys[i]], parts);
        }
        parts.push("}");
      }
      return;
    default:
      throw new BadEvent(`event cannot be encoded: ${typeof v} is not JSON`);
  }
}

/** Canonical line (string, without the newline): recursively sorted keys, no whitespace, raw UTF-8. */
export function encode(obj) {
  const parts = [];
  encodeValue(obj, parts);
  return parts.join("");
}

/** Encode a prepared event with its chain field; BadEvent for unencodable values or lines over 4 MiB. */
export function encodeWithPrev(event, prev) {
  event.prev = prev;
  const line = encode(event);
  const size = line.length * 3 > MAX_LINE ? Buffer.byteLength(line, "utf8") : 0; // ≤ 3 UTF-8 bytes per UTF-16 unit
  if (size > MAX_LINE) throw new BadEvent(`event is ${size} bytes; the limit is ${MAX_LINE}`);
  return line;
}

/** The directory of one partition (channel, account, chat): the default account keeps raw/<channel>/chats/. */
export function chatDir(channel, chatId, account = DEFAULT_ACCOUNT) {
  return account === DEFAULT_ACCOUNT ? `raw/${channel}/chats/${chatId}` : `raw/${channel}/accounts/${account}/chats/${chatId}`;
}

export function dayRelpath(channel, chatId, ts, account = DEFAULT_ACCOUNT) {
  return `${chatDir(channel, chatId, account)}/${ts.slice(0, 4)}/${ts.slice(5, 7)}/${ts.slice(8, 10)}.jsonl`;
}

/** The seal stream of one partition. */
export function sealRelpath(channel, chatId, account = DEFAULT_ACCOUNT) {
  return account === DEFAULT_ACCOUNT ? `seals/${channel}/${chatId}.jsonl` : `seals/${channel}/accounts/${account}/${chatId}.jsonl`;
}

/** (channel, chatId, "yyyy-mm-dd", account) of a day file's relative path, or null. */
export function parseRelpath(rel) {
  const p = rel.split("/");
  let account = DEFAULT_ACCOUNT;
  if (p.length === 9 && p[2] === "accounts" && p[4] === "chats") {
    account = p[3];
    if (account === DEFAULT_ACCOUNT || !ACCOUNT_RE.test(account)) return null; // the default account has one place
    p.splice(2, 2);
  }
  if (p.length !== 7 || p[0] !== "raw" || p[2] !== "chats") return null;
  if (!CHANNEL_RE.test(p[1]) || !CHAT_ID_RE.test(p[3])) return null;
  if (!/^\d{4}$/.test(p[4]) || !/^\d\d$/.test(p[5]) || !/^\d\d\.jsonl$/.test(p[6])) return null;
  const day = `${p[4]}-${p[5]}-${p[6].slice(0, 2)}`;
  const y = Number(p[4]), m = Number(p[5]), d = Number(p[6].slice(0, 2));
  if (m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return null;
  return { channel: p[1], chatId: p[3], day, account };
}

export function nowTs() {
  return new Date().toISOString(); // already UTC with milliseconds
}
