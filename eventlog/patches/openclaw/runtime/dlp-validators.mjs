// Offline validators for the DLP engine (twin of eventlog/dlp/validators.py; shared vectors keep them identical).
// Each takes the candidate secret and returns true to keep it. No dependencies beyond node:zlib / node:buffer.
import { crc32 } from "node:zlib";
import { Buffer } from "node:buffer";

const B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

// IBAN length per country (ISO 13616 registry).
const IBAN_LENGTHS = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, BY: 28,
  CH: 21, CR: 22, CY: 28, CZ: 24, DE: 22, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18,
  FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27, GT: 28, HR: 21, HU: 28, IE: 22,
  IL: 23, IQ: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20,
  LU: 20, LV: 21, MC: 27, MD: 24, ME: 22, MK: 19, MR: 27, MT: 31, MU: 30, NL: 18, NO: 15,
  PK: 24, PL: 28, PS: 29, PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31, SE: 24,
  SI: 19, SK: 24, SM: 27, ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24,
  XK: 20,
};

const PLACEHOLDERS = new Set(`
password passwd pass pwd secret changeme change_me changeit example test testing dummy placeholder redacted hidden
your_password yourpassword your-password mypassword my_password mypass pa55word p@ssw0rd p@ssword
user username login token apikey api_key secretkey xxx xxxx xxxxx xxxxxx xxxxxxxx
admin guest root anonymous demo default foo bar foobar
`.split(/\s+/).filter(Boolean));

const digitsOf = (s) => s.replace(/[^0-9]/g, "");

// Code points walked by index: the string iterator (`for…of`, spread, `new Set(str)`) costs microseconds per short
// string in V8 here, which made the validators the slowest part of a scan with candidates. Same code points in the
// same order as the iterator (a lone surrogate is one code point), so every result is unchanged.
export function cpLength(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++, n++) if (s.codePointAt(i) > 0xffff) i++;
  return n;
}
// fewer than k distinct code points (a Set's size < k), stopping at the k-th: a Set of a whole 100-character token
// cost ~15 % of credential() on the long vendor keys that reach secret-assignment
function fewDistinct(s, k) {
  const seen = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.codePointAt(i);
    if (!seen.includes(c)) { if (seen.length + 1 >= k) return false; seen.push(c); }
    if (c > 0xffff) i++;
  }
  return true;
}
function uniform(s) { // at most one distinct code point (new Set(s).size <= 1)
  const f = s.codePointAt(0);
  for (let i = 0; i < s.length; i++) { const c = s.codePointAt(i); if (c !== f) return false; if (c > 0xffff) i++; }
  return true;
}

export function luhn(num) {
  let total = 0;
  for (let i = 0; i < num.length; i++) {
    let d = num.charCodeAt(num.length - 1 - i) - 48;
    if (i % 2 === 1) { d *= 2; if (d > 9) d -= 9; }
    total += d;
  }
  return total % 10 === 0;
}

function cardBrandOk(n) {
  const p2 = +n.slice(0, 2), p3 = +n.slice(0, 3), p4 = +n.slice(0, 4), ln = n.length;
  if (n[0] === "4") return ln === 13 || ln === 16 || ln === 19;
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return ln === 16;
  if (p4 >= 2200 && p4 <= 2204) return ln >= 16 && ln <= 19;
  if (p2 === 34 || p2 === 37) return ln === 15;
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649)) return ln >= 16 && ln <= 19;
  if (p4 >= 3528 && p4 <= 3589) return ln >= 16 && ln <= 19;
  if (p2 === 62) return ln >= 16 && ln <= 19;
  if ((p3 >= 300 && p3 <= 305) || p2 === 36 || p2 === 38) return ln >= 14 && ln <= 19;
  if ([50, 56, 57, 58, 63, 67].includes(p2)) return ln >= 12 && ln <= 19;
  return false;
}

export function card(s) {
  const n = digitsOf(s);
  return n.length >= 13 && n.length <= 19 && cardBrandOk(n) && luhn(n);
}

export function iban(s) {
  const t = s.replaceAll(" ", "");
  if (IBAN_LENGTHS[t.slice(0, 2)] !== t.length) return false;
  const moved = t.slice(4) + t.slice(0, 4);
  let rem = 0;
  for (let i = 0; i < moved.length; i++) { // [A-Z0-9] only (the rule's pattern)
    const c = moved.charCodeAt(i);
    const v = c <= 57 ? c - 48 : c - 55;
    rem = v > 9 ? (rem * 100 + v) % 97 : (rem * 10 + v) % 97;
  }
  return rem === 1;
}

function wsum(d, w) {
  let s = 0;
  for (let i = 0; i < w.length && i < d.length; i++) s += (d.charCodeAt(i) - 48) * w[i];
  return s;
}
const INN10 = [2, 4, 10, 3, 5, 9, 4, 6, 8];
const INN12A = [7, 2, 4, 10, 3, 5, 9, 4, 6, 8];
const INN12B = [3, 7, 2, 4, 10, 3, 5, 9, 4, 6, 8];
const dig = (s, i) => s.charCodeAt(i) - 48;

export const inn10 = (s) => s.length === 10 && (wsum(s, INN10) % 11) % 10 === dig(s, 9);
export const inn12 = (s) => s.length === 12 && (wsum(s, INN12A) % 11) % 10 === dig(s, 10)
  && (wsum(s, INN12B) % 11) % 10 === dig(s, 11);

export function snils(s) {
  const n = digitsOf(s);
  if (n.length !== 11) return false;
  let check = wsum(n, [9, 8, 7, 6, 5, 4, 3, 2, 1]) % 101;
  if (check === 100) check = 0;
  return check === +n.slice(9);
}

// 12- and 14-digit prefixes exceed 2^53 only for ОГРНИП (14 digits < 2^53 too), but BigInt keeps it exact regardless.
export const ogrn = (s) => s.length === 13 && Number((BigInt(s.slice(0, 12)) % 11n) % 10n) === dig(s, 12);
export const ogrnip = (s) => s.length === 15 && Number((BigInt(s.slice(0, 14)) % 13n) % 10n) === dig(s, 14);

export function githubCrc32(s) {
  const body = s.slice(4, -6), tail = s.slice(-6);
  let crc = crc32(Buffer.from(body, "utf8")) >>> 0;
  let out = "";
  while (crc) { out = B62[crc % 62] + out; crc = Math.floor(crc / 62); }
  return out.padStart(6, "0") === tail;
}

export function jwt(s) {
  const head = s.split(".", 1)[0];
  if (head.length % 4 === 1) return false;
  try {
    const obj = JSON.parse(Buffer.from(head, "base64url").toString("utf8"));
    return obj !== null && typeof obj === "object" && !Array.isArray(obj) && Object.hasOwn(obj, "alg");
  } catch {
    return false;
  }
}

function isPlaceholder(s) {
  const low = s.toLowerCase();
  if (PLACEHOLDERS.has(low) || uniform(low)) return true;
  if ("$<{%*[".includes(low[0]) || low.endsWith("...") || low.endsWith("…")) return true;
  return low.startsWith("your") || low.startsWith("my_") || low.startsWith("<") || low.startsWith("xxx")
    || low.includes("****");
}

function kind(c) { // a code point: lower (Latin, Cyrillic), upper, digit, other
  if ((c >= 0x61 && c <= 0x7a) || (c >= 0x430 && c <= 0x44f) || c === 0x451) return 0;
  if ((c >= 0x41 && c <= 0x5a) || (c >= 0x410 && c <= 0x42f) || c === 0x401) return 1;
  if (c >= 0x30 && c <= 0x39) return 2;
  return 3;
}
function kindCount(v) { // how many of the four kinds occur
  let m = 0;
  for (let i = 0; i < v.length; i++) { const c = v.codePointAt(i); m |= 1 << kind(c); if (c > 0xffff) i++; }
  return (m & 1) + ((m >> 1) & 1) + ((m >> 2) & 1) + ((m >> 3) & 1);
}

export const notPlaceholder = (s) => !isPlaceholder(s);

export function password(s) {
  if (isPlaceholder(s)) return false;
  return kindCount(s) >= 2;
}

const QUOTES = "\"'`";
const FAKE = ["fake", "example", "dummy", "placeholder", "changeme", "redacted", "xxxx", "****"];
const CODE = ["process.env", "getenv(", "os.environ", "env(", "config."];
const unquote = (s) => (s.length >= 2 && s[0] === s[s.length - 1] && QUOTES.includes(s[0]) ? s.slice(1, -1) : s);
const isIdent = (s) => /^[A-Za-z0-9_]*$/.test(s);
const hasFake = (low) => FAKE.some((w) => low.includes(w));

const PAIRS = [["{", "}"], ["<", ">"], ["[", "]"], ["%(", "s"]];
// Mirrors eventlog/dlp/validators.py _templated (same order of checks, same code-point semantics).
function templated(v) {
  const low = v.toLowerCase();
  if (!v || uniform(low) || low.includes("****") || low.includes("xxxx")) return true;
  if (v[0] === "$" && (isIdent(v.slice(1)) || v.slice(1, 2) === "{" || v.slice(1, 2) === "(")) return true;
  for (const [a, b] of PAIRS) if (v.startsWith(a) && v.endsWith(b)) return true;
  return CODE.some((w) => low.includes(w));
}

export const notTemplate = (s) => !templated(unquote(s));

// The documented placeholder passwords of a URL (docs/dlp.md); not `secret` (postgres://admin:secret@db is a password).
const URL_PLACEHOLDERS = new Set(`
password passwd pass pwd changeme change_me changeit yourpassword your_password your-password mypassword my_password
xxx xxxx xxxxx xxxxxx xxxxxxxx
`.split(/\s+/).filter(Boolean));
// printf/format directives standing in for a value: %s, %v, %d, %q, %1$s
const printf = (v) => cpLength(v) <= 4 && v[0] === "%" && "sdvq".includes(v[v.length - 1]);
export const urlPassword = (s) => !templated(s) && !printf(s) && !URL_PLACEHOLDERS.has(s.toLowerCase());

// Mirrors validators.py CUE_STOPWORDS / _code / password_cue (same lists, same order of checks).
const CUE_STOPWORDS = new Set(`
required incorrect invalid wrong correct expired empty missing weak strong short long same different valid below above
here there that this these those then than their your mine yours with from into also only still just about always never
being been were will would should must could have has had does done sent stored saved hashed encrypted protected
changed updated reset change update needed mandatory optional string text char varchar bool boolean integer number null
none undefined true false hidden field input label enter confirm show hide forgot forgotten current repeat retype login
logout submit cancel placeholder value values please following case-sensitive case-insensitive !vault
under over behind inside somewhere written printed kept located what which where when probably usually like
literally simply also
неверный неверен неверно неправильный верный правильный обязателен обязательно слишком пустой изменён изменен сброшен
такой такая тот этот здесь нужен нужно должен будет есть ваш мой твой новый старый текущий введите повторите забыли
скрыт который которую такой-же
`.split(/\s+/).filter(Boolean));
const CRED_PARTS = new Set("key keys pass password passwd pwd secret secrets token tokens hash salt".split(" "));
const CODE_MARKS = ["()", "&lt;", "&gt;", "&quot;", "&amp;", "&#", "||", "&&", "??", "=>", "process.env", "os.environ",
  "getenv", "env("];
const CODE_STARTS = ["#{", "${", "{{", "<%", "@{", "$_", "$this", "config.", "request.", "req.", "params.", "props.",
  "this.", "self.", "enc["]; // enc[: a SOPS-encrypted value, not the plaintext

const ROUTE = /^[a-z0-9\/_\-.:{}]*$/; // a URL path (/api/users/:id); base64 has capitals

// An identifier of more than one word with a credential word among them: split at _ - and lower→upper boundaries,
// lower-cased (ASCII identifiers only reach here). Parts are sliced, not built a character at a time, and only those of
// a CRED_PARTS length (3-8) are lower-cased and looked up: a 100-character key of 30 parts made this the costliest
// step of credential().
function credIdent(v) {
  let parts = 0, found = false, start = 0;
  const part = (a, b) => {
    if (b <= a) return;
    parts++;
    if (!found && b - a >= 3 && b - a <= 8 && CRED_PARTS.has(v.slice(a, b).toLowerCase())) found = true;
  };
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c === 0x5f || c === 0x2d) { part(start, i); start = i + 1; continue; }
    if (c >= 0x41 && c <= 0x5a && i > 0) {
      const p = v.charCodeAt(i - 1);
      if (p >= 0x61 && p <= 0x7a) { part(start, i); start = i; }
    }
  }
  part(start, v.length);
  return parts > 1 && found;
}

function code(v) {
  const low = v.toLowerCase();
  if (CODE_MARKS.some((m) => low.includes(m)) || CODE_STARTS.some((m) => low.startsWith(m))
    || v.endsWith("(")) return true;
  if (v[0] === "/" && ROUTE.test(v)) return true;
  if ("$@:".includes(v[0]) && isIdent(v.slice(1))) return true;
  const parts = v.split(".");
  if (parts.length > 1 && parts.every((p) => p.length > 0 && p.length <= 32 && isIdent(p) && !/[0-9]/.test(p))) return true;
  if (isIdent(v.replaceAll("-", "_"))) return credIdent(v);
  return false;
}

export function passwordCue(s) {
  const v = unquote(s);
  if (cpLength(v) < 4 || fewDistinct(v, 3) || v.endsWith(":") || !hasAlnum(v)) return false;
  const low = v.toLowerCase();
  if (CUE_STOPWORDS.has(low) || isPlaceholder(v) || templated(v) || printf(v) || code(v)) return false;
  return !hasFake(low);
}

function hasAlnum(v) {
  for (let i = 0; i < v.length; i++) { const c = v.codePointAt(i); if (kind(c) < 3) return true; if (c > 0xffff) i++; }
  return false;
}

export function credential(s) {
  const quoted = s.length >= 2 && s[0] === s[s.length - 1] && QUOTES.includes(s[0]);
  const v = unquote(s);
  if (cpLength(v) < 6 || fewDistinct(v, 5) || isPlaceholder(v) || templated(v) || !hasAlnum(v)) return false;
  if (CUE_STOPWORDS.has(v.toLowerCase())) return false; // a label or prose word ("Password: Forgot your password?")
  if (hasFake(v.toLowerCase()) || v.startsWith("-----BEGIN")) return false; // a PEM block is the private-key rule's
  if (printf(v) || code(v)) return false;
  return kindCount(v) >= 2 || (quoted && cpLength(v) >= 8);
}

export function tokenValue(s) {
  const v = unquote(s);
  return cpLength(v) >= 8 && !isPlaceholder(v) && !templated(v) && !code(v) && !hasFake(v.toLowerCase())
    && kindCount(v) >= 2;
}

export function userpass(s) {
  const v = s.replace(/["']/g, "");
  const i = v.indexOf(":");
  if (i < 0) return false;
  if (templated(v)) return false;
  const user = v.slice(0, i), pw = v.slice(i + 1);
  const secret = pw || user;
  if (cpLength(secret) < 4 || [user, pw].some((x) => x && templated(x))) return false;
  return !isPlaceholder(secret) && !hasFake(secret.toLowerCase());
}

// A generic-shaped vendor key (Mistral's 32, Cohere's 40 characters) is random base62: an ASCII upper-case letter, a
// lower-case letter and a digit (twin of validators.py mixed_alnum).
export function mixedAlnum(s) {
  let m = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) m |= 1; else if (c >= 0x61 && c <= 0x7a) m |= 2; else if (c >= 0x30 && c <= 0x39) m |= 4;
  }
  return m === 7;
}

// Discord bot token <id>.<timestamp>.<hmac>: the first part is the unpadded base64 of the bot's user id in ASCII
// decimal, 17 to 20 digits, never starting with 0 (twin of validators.py discord_bot_token). The rule's pattern only
// lets [A-Za-z0-9_-] through, so Node's lenient base64url decoder and Python's strict one see the same input.
export function discordBotToken(s) {
  const head = s.split(".", 1)[0];
  if (head.length % 4 === 1) return false;
  const raw = Buffer.from(head, "base64url");
  if (raw.length < 17 || raw.length > 20 || raw[0] === 0x30) return false;
  for (const b of raw) if (b < 0x30 || b > 0x39) return false;
  return true;
}

export const VALIDATORS = {
  luhn: (s) => luhn(digitsOf(s)), card, iban, inn10, inn12, snils, ogrn, ogrnip,
  github_crc32: githubCrc32, jwt, not_placeholder: notPlaceholder, password,
  not_template: notTemplate, credential, token_value: tokenValue, userpass, url_password: urlPassword,
  password_cue: passwordCue,
  mixed_alnum: mixedAlnum, discord_bot_token: discordBotToken,
};

// Shannon entropy in bits per code point, summed in first-occurrence order like the Python engine.
const ASCII_COUNTS = new Int32Array(128);
const ASCII_ORDER = new Uint8Array(128);
export function entropy(s) {
  let ascii = true;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 127) { ascii = false; break; }
  let h = 0;
  if (ascii) { // the common case (tokens): typed-array counts, same first-occurrence order as the Map below
    let k = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (ASCII_COUNTS[c]++ === 0) ASCII_ORDER[k++] = c;
    }
    const n = s.length;
    for (let j = 0; j < k; j++) { const p = ASCII_COUNTS[ASCII_ORDER[j]] / n; h -= p * Math.log2(p); ASCII_COUNTS[ASCII_ORDER[j]] = 0; }
    return h;
  }
  const counts = new Map();
  let n = 0;
  for (let i = 0; i < s.length; i++, n++) {
    const c = s.codePointAt(i);
    counts.set(c, (counts.get(c) || 0) + 1);
    if (c > 0xffff) i++;
  }
  for (const c of counts.values()) { const p = c / n; h -= p * Math.log2(p); }
  return h;
}
