// Format v2 content commitments for the JS writer (eventlog/commitment.py is the other side; docs/log-format.md,
// "Content commitments"). A line with content carries its plaintext and a 16-byte `salt`; its commitment form is the
// same event without `salt`, each content field k replaced by {"c": sha256hex(salt || utf8(k) || 0x00 || canonical(v))}.
// The chain hash of a line is SHA-256 of its commitment form, so erasing a line (writing its commitment form in its
// place) keeps the chain. A line without a salt (v1, no content, erased) is its own commitment form.
import { createHash } from "node:crypto";
import {
  BadEvent, CONTENT_FIELDS, MAX_LINE, SALT_RE, compareCodePoints, encode, encodeWithPrev, sha256hex, sortKeys,
} from "./writer-format.mjs";

export { CONTENT_FIELDS } from "./writer-format.mjs";
const CONTENT = new Set(CONTENT_FIELDS);
const ZERO = Buffer.from([0]);

function commit(salt, key, valueText) {
  return createHash("sha256").update(salt).update(key, "utf8").update(ZERO).update(valueText, "utf8").digest("hex");
}

/** [line, commitment form or null when the line is its own] of a prepared event with its chain field. One encoding
 * pass: each top-level member is encoded once and used by both (the form differs only in its content members). */
export function encodeForms(event, prev) {
  if (event.salt === undefined) return [encodeWithPrev(event, prev), null];
  event.prev = prev;
  const salt = Buffer.from(event.salt, "hex");
  const keys = Object.keys(event).filter((k) => event[k] !== undefined && typeof event[k] !== "function"
    && typeof event[k] !== "symbol"); // as encode() does for any object
  if (keys.length > 32) keys.sort(compareCodePoints); else sortKeys(keys);
  const line = [];
  const form = [];
  for (const k of keys) {
    if (!k.isWellFormed()) throw new BadEvent("event cannot be encoded: a key contains a lone surrogate");
    const name = JSON.stringify(k);
    const value = encode(event[k]);
    const member = name + ":" + value;
    line.push(member);
    if (k === "salt") continue;
    form.push(CONTENT.has(k) ? `${name}:{"c":"${commit(salt, k, value)}"}` : member);
  }
  // braces joined in, not concatenated around: the line is one flat string (a cons string is copied again to encode it)
  if (line.length) { line[0] = "{" + line[0]; line[line.length - 1] += "}"; } else line.push("{}");
  const text = line.join(",");
  // a UTF-16 unit is at most 3 UTF-8 bytes: only a line that could be over the limit is measured
  const size = text.length * 3 > MAX_LINE ? Buffer.byteLength(text, "utf8") : 0;
  if (size > MAX_LINE) throw new BadEvent(`event is ${size} bytes; the limit is ${MAX_LINE}`);
  return [text, "{" + form.join(",") + "}"];
}

/** Top-level members of a canonical JSON object line: [rawKey, valueStart, valueEnd] (string indices). */
function members(s) {
  const out = [];
  let i = 1;
  const n = s.length;
  if (s[0] !== "{" || s[n - 1] !== "}") return null;
  if (n === 2) return out;
  while (i < n) {
    if (s[i] !== '"') return null;
    let j = i + 1;
    while (j < n && s[j] !== '"') j += s[j] === "\\" ? 2 : 1;
    const rawKey = s.slice(i, j + 1);
    if (s[j + 1] !== ":") return null;
    const vs = j + 2;
    let k = vs;
    let depth = 0;
    for (; k < n; k++) {
      const c = s[k];
      if (c === '"') {
        k++;
        while (k < n && s[k] !== '"') k += s[k] === "\\" ? 2 : 1;
      } else if (c === "{" || c === "[") depth++;
      else if (c === "}" || c === "]") {
        if (depth === 0) break;
        depth--;
      } else if (c === "," && depth === 0) break;
    }
    if (k >= n) return null;
    out.push([rawKey, vs, k]);
    i = k + 1;
    if (s[k] === "}") break;
  }
  return out;
}

/** The chain hash of one stored line (string or Buffer, without the newline). Works on the line's own bytes, never
 * on a re-encoding of parsed values, so numbers JS cannot hold exactly (1.0, integers beyond 2^53) hash the same. */
export function chainHash(line) {
  const buf = typeof line === "string" ? null : line;
  if (buf ? !buf.includes('"salt":"') : !line.includes('"salt":"')) return sha256hex(line);
  const s = buf ? buf.toString("utf8") : line;
  const ms = members(s);
  const saltM = ms?.find((m) => m[0] === '"salt"');
  const vM = ms?.find((m) => m[0] === '"v"');
  if (!saltM || !vM || s.slice(vM[1], vM[2]) !== "2") return sha256hex(line); // v1: its own form, even with a "salt"
  const saltText = s.slice(saltM[1], saltM[2]);
  if (!/^"[0-9a-f]{32}"$/.test(saltText)) return sha256hex(line);
  const salt = Buffer.from(saltText.slice(1, -1), "hex");
  const parts = [];
  for (const [rawKey, vs, ve] of ms) {
    if (rawKey === '"salt"') continue;
    const key = JSON.parse(rawKey);
    parts.push(rawKey + ":" + (CONTENT.has(key) ? `{"c":"${commit(salt, key, s.slice(vs, ve))}"}` : s.slice(vs, ve)));
  }
  return sha256hex("{" + parts.join(",") + "}");
}

export { SALT_RE };
