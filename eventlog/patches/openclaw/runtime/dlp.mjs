// DLP engine for the OpenClaw runtime tap — the JS twin of eventlog/dlp/engine.py, on the same rules.json.
//
// API (a contract with tap.mjs; documented in docs/dlp.md — keep stable):
//   import { createScanner, loadRules, loadKey } from "./dlp.mjs";
//   const scanner = createScanner({ rules /* parsed rules.json */, key /* Buffer, 32 bytes */,
//                                   allowlistPath /* optional: <root>/dlp/allowlist.json */ });
//   scanner.scan(text, { html: false, preview: false })
//     → { findings: [{ rule, start, end, severity, action, fingerprint, masked, tier }], holdBack }
//       tier: "confirmed" (the rule's exact pattern) or "near_format" (its `near` pattern; docs/dlp.md, "Two tiers")
//       offsets and holdBack in Unicode code points of `text` (html: of the payload, spans mapped from visible text)
//   scanner.redact(text, findings, { html }) → { text, action: "pass" | "redact" | "block" }
//   scanner.filter(text, { html, preview }) → { text, action, findings, held }   (scan + hold-back cut + redact)
//   scanner.fingerprint(secret) → the finding fingerprint (HMAC-SHA256 hex) of a string (the tap's withheld tails)
//   loadRules(path?) → parsed rules.json;  loadKey(root) → Buffer (creates <root>/dlp/key, 0600, on first use)
//
// ESM, no dependencies, no native code. The allowlist file is re-stat'ed at most once a second (allowlistCheckMs), so a
// false-positive verdict reaches a running gateway without a restart. scan() throws only on programming errors; the
// tap treats a throw as "fail closed".
import { createHmac, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { VALIDATORS, cpLength, entropy } from "./dlp-validators.mjs";
import { parseHtml, closers, tagsWithin } from "./dlp-html.mjs";
import { IGNORABLE, fold as readerFold, foldText as readerFoldText } from "./dlp-fold.mjs";

export const BLOCK_NOTICE = (rules) => `[withheld by DLP: ${rules.join(", ")}]`;
export const REDACTED = (rule) => `[REDACTED:${rule}]`;
const SURROGATE = /[\uD800-\uDFFF]/;
const KEY_BYTES = 32;

// ---- code point <-> UTF-16 ------------------------------------------------------------------------------------------
const isHi = (c) => c >= 0xd800 && c <= 0xdbff;
const isLo = (c) => c >= 0xdc00 && c <= 0xdfff;

/** UTF-16 offsets → code point offsets, in one pass up to the largest (identity when t has no surrogates). An offset
 *  inside a surrogate pair maps to the pair's index. No per-character array: most texts report one or two offsets. */
function toCodePoints(t, offs) {
  if (offs.length === 0 || !SURROGATE.test(t)) return (x) => x;
  const m = new Map();
  let i = 0, cp = 0;
  for (const o of [...new Set(offs)].sort((a, b) => a - b)) {
    while (i < o) {
      if (isHi(t.charCodeAt(i)) && i + 1 < t.length && isLo(t.charCodeAt(i + 1))) {
        if (i + 1 === o) break;
        i += 2;
      } else i++;
      cp++;
    }
    m.set(o, cp);
  }
  return (x) => m.get(x);
}

/** code point offsets → UTF-16 offsets, in one pass (identity when t has no surrogates; past the end → t.length). */
function toUnits(t, cps) {
  if (cps.length === 0 || !SURROGATE.test(t)) return (c) => c;
  const m = new Map();
  let i = 0, cp = 0;
  for (const c of [...new Set(cps)].sort((a, b) => a - b)) {
    while (cp < c && i < t.length) {
      i += isHi(t.charCodeAt(i)) && i + 1 < t.length && isLo(t.charCodeAt(i + 1)) ? 2 : 1;
      cp++;
    }
    m.set(c, i);
  }
  return (c) => m.get(c);
}

function back(t, i, k) { // i moved back by k code points
  while (k > 0 && i > 0) { i--; if (i > 0 && isLo(t.charCodeAt(i)) && isHi(t.charCodeAt(i - 1))) i--; k--; }
  return i;
}
function fwd(t, i, k) { // i moved forward by k code points
  while (k > 0 && i < t.length) { if (isHi(t.charCodeAt(i)) && isLo(t.charCodeAt(i + 1))) i++; i++; k--; }
  return i;
}
/** The code point that ends at UTF-16 index i (a whole surrogate pair, like the Python engine's t[i - 1]). */
const cpBefore = (t, i) => (i > 1 && isLo(t.charCodeAt(i - 1)) && isHi(t.charCodeAt(i - 2)) ? t.slice(i - 2, i) : t[i - 1]);
const stepAt = (t, i) => (isHi(t.charCodeAt(i)) && isLo(t.charCodeAt(i + 1)) ? 2 : 1);

const bigram = (a, b) => ((a * 1031) ^ b) & 0xffff;
const trigram = (a, b, c) => (Math.imul(Math.imul(a, 1031) ^ b, 1031) ^ c) & 0xffff;

// Case folding shared with the Python engine (docs/dlp.md, "Case-insensitive matching"): the non-ASCII characters that
// either engine's case-insensitive regex matching equates with an ASCII letter, found by exhaustive comparison of every
// code point (tests/vectors/dlp/casefold.json). Python's re.IGNORECASE matches İ (U+0130) and ı (U+0131) as i, /iu does
// not: the `i` rules run on the text with these replaced (same length: offsets stay valid, findings and redaction use
// the original text), and the prefilter and the keyword anchors see them folded too.
export const FOLD = Object.freeze({ "\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k" });
const FOLDABLE = /[\u0130\u0131\u017f\u212a]/g;
const foldText = (t) => t.replace(FOLDABLE, (c) => FOLD[c]);

// Lower-casing for the prefilter. String#toLowerCase on a 2.5 KB Cyrillic string costs ~60 µs in V8; a per-unit
// table built once from toLowerCase itself costs a few. Keyword presence is all that is asked of it, and it agrees
// with toLowerCase on that: every BMP unit maps to its one-unit lower case, the FOLD characters to their ASCII letter
// (İ, the only BMP character whose lower case is longer, included); surrogates (astral letters never lower to a keyword
// character) stay. Every unit maps to one: the lower-cased text has the length of the text.
const LOWER = new Uint16Array(0x10000);
for (let c = 0; c < 0x10000; c++) {
  if (c >= 0xd800 && c <= 0xdfff) { LOWER[c] = c; continue; }
  const ch = String.fromCharCode(c);
  const l = FOLD[ch] ?? ch.toLowerCase();
  LOWER[c] = l.length === 1 ? l.charCodeAt(0) : c;
}
const lowerBuf = { codes: new Uint16Array(4096) };
// The reader's fold, fast path: the UTF-16 units that may begin a foldable character (dlp-fold.mjs) — the BMP ones, the
// fullwidth ASCII and U+3000, and the high surrogates of the astral ones (a superset: D82F, D834, DB40–DB43). prep
// looks each unit up while it lower-cases, so a text with none costs one table load per unit and no second pass (a
// separate RegExp#test with /u cost ~15 % of a scan).
const MAY_FOLD = new Uint8Array(0x10000);
for (const [a, b] of IGNORABLE) {
  for (let c = a; c <= b; c++) MAY_FOLD[c < 0x10000 ? c : 0xd800 + ((c - 0x10000) >> 10)] = 1;
}
for (let c = 0xff01; c <= 0xff5e; c++) MAY_FOLD[c] = 1;
MAY_FOLD[0x3000] = 1;
const UTF16 = new TextDecoder("utf-16le");

// ---- helpers shared with the Python engine's semantics -------------------------------------------------------------
export function mask(secret) {
  const n = cpLength(secret);
  const keep = Math.min(4, Math.floor(n / 4));
  let j = 0;
  for (let k = 0; k < keep; k++) j += secret.codePointAt(j) > 0xffff ? 2 : 1;
  return `${secret.slice(0, j)}…[${n}]`;
}
export const NEAR = "near_format";
const SEVERITY_ORDER = ["critical", "high", "medium", "low"];
/** A near-format finding's severity: one step below its rule's, never below medium (engine.py near_severity). */
export function nearSeverity(severity) {
  const i = Math.max(0, SEVERITY_ORDER.indexOf(severity));
  return i >= 2 ? severity : SEVERITY_ORDER[i + 1];
}

const isLetter = (c) => (c >= "a" && c <= "z") || (c >= "а" && c <= "я") || c === "ё";

function hasWord(part, words) {
  for (const [w, stem] of words) {
    let i = part.indexOf(w);
    while (i >= 0) {
      const j = i + w.length;
      if ((i === 0 || !isLetter(part[i - 1])) && (stem || j >= part.length || !isLetter(part[j]))) return true;
      i = part.indexOf(w, i + 1);
    }
  }
  return false;
}

function compileRule(r, index) {
  const flags = r.flags || "";
  // (spelling a leading `[C]{n}` as `[C][C]{n-1}`, which makes Python's re 5-10x faster on the digit rules, costs
  // V8 ~5 % CPU: irregexp already skips to possible starts, so the JS engine compiles the patterns as written)
  const pattern = r.pattern;
  const rule = {
    index, id: r.id, severity: r.severity, action: r.action, group: r.group || 0, ci: flags.includes("i"),
    keywords: r.keywords, validator: r.validator ?? null, entropy: r.entropy ?? null,
    context: r.context ?? null, stopwords: r.stopwords || [], holdback: r.holdback ?? null,
    // d (match indices) only where a group is reported: it costs time on every match
    rx: new RegExp(pattern, "gu" + (r.group ? "d" : "") + (flags.includes("i") ? "i" : "")),
  };
  if (r.near) {
    const ng = r.near.group || 0;
    rule.near = { group: ng, entropy: r.near.entropy ?? null,
      rx: new RegExp(r.near.pattern, "gu" + (ng ? "d" : "") + (flags.includes("i") ? "i" : "")) };
  }
  if (r.anchor === "keywords") rule.anchorRx = new RegExp(pattern, "yu" + (r.group ? "d" : "") + (flags.includes("i") ? "i" : ""));
  const left = r.left === undefined ? "A-Za-z0-9_" : r.left;
  rule.leftRx = left ? new RegExp(`^[${left}]$`, "u") : null;
  if (rule.holdback) {
    rule.bodyRx = new RegExp(`^[${rule.holdback.chars}]*$`, "u");
    // per prefix, the characters that must not come right before a held-back fragment (engine.py's _hold_boundary):
    // the hold-back's own `left` if given, else the rule's `left` if the prefix begins with one of its characters
    const hl = rule.holdback.left;
    rule.hbPrefixes = rule.holdback.prefixes.map((p) => [p, hl !== undefined ? (hl ? new RegExp(`^[${hl}]$`, "u") : null)
      : (rule.leftRx && rule.leftRx.test(p[0]) ? rule.leftRx : null)]);
  }
  if (rule.context) rule.ctxWords = rule.context.words.map((w) => (w.endsWith("*") ? [w.slice(0, -1), true] : [w, false]));
  if (rule.validator !== null && !VALIDATORS[rule.validator]) throw new Error(`dlp: unknown validator ${rule.validator}`);
  return rule;
}

// ---- rules and key on disk -----------------------------------------------------------------------------------------
const HERE = path.dirname(fileURLToPath(import.meta.url));
export function defaultRulesPath() {
  const candidates = [process.env.EVENTLOG_DLP_RULES, path.join(HERE, "rules.json"),
    path.join(HERE, "..", "..", "..", "dlp", "rules.json")].filter(Boolean);
  for (const p of candidates) if (fs.existsSync(p)) return p;
  throw new Error(`dlp: no rules.json (looked in ${candidates.join(", ")})`);
}

export function loadRules(p = defaultRulesPath()) {
  const doc = JSON.parse(fs.readFileSync(p, "utf8"));
  if (doc.version !== 1 || !Array.isArray(doc.rules)) throw new Error(`dlp: ${p} is not a version 1 rule file`);
  return doc;
}

export function loadKey(root) {
  const p = path.join(root, "dlp", "key");
  let data;
  try {
    data = fs.readFileSync(p);
  } catch (e) {
    if (e.code !== "ENOENT") throw e;
    fs.mkdirSync(path.dirname(p), { recursive: true, mode: 0o700 });
    const tmp = path.join(path.dirname(p), `.key.${process.pid}.${randomBytes(4).toString("hex")}`);
    const fd = fs.openSync(tmp, "wx", 0o600);
    try { fs.writeSync(fd, randomBytes(KEY_BYTES)); fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
    try { fs.linkSync(tmp, p); } catch (err) { if (err.code !== "EEXIST") throw err; } finally { fs.unlinkSync(tmp); }
    data = fs.readFileSync(p);
  }
  if (data.length !== KEY_BYTES) throw new Error(`dlp: key ${p} is damaged (${data.length} bytes)`);
  return data;
}

// ---- the scanner ---------------------------------------------------------------------------------------------------
export function createScanner({ rules, key, allowlistPath = null, allowlistCheckMs = 1000 }) {
  if (!rules || !Array.isArray(rules.rules)) throw new Error("dlp: createScanner needs the parsed rules.json");
  if (!key || key.length === 0) throw new Error("dlp: createScanner needs the HMAC key");
  const compiled = rules.rules.map(compileRule);
  // publicly documented example values (rules.json "examples", each with its source): never a finding
  const examples = new Set((rules.examples || []).map((x) => x.value));
  const kwMap = new Map();
  for (const r of compiled) for (const k of r.keywords) { if (!kwMap.has(k)) kwMap.set(k, []); kwMap.get(k).push(r.index); }
  // Prefilter: exactly "some keyword of the rule occurs in the lower-cased text". String#includes on a two-byte
  // (Cyrillic, emoji) string costs ~1.4 µs per keyword per 2.5 KB, so one pass first marks every character bigram
  // present (a hashed bitmap, reset by generation); only keywords whose bigrams are all marked get the includes.
  // A one-unit keyword (the digits of iban, the `.` of discord-bot-token) has no bigram: prep marks every unit too, so
  // its presence is known exactly without an includes (its failing includes were a full pass over the text each, the
  // costliest line of a scan with these keywords in every message).
  const kw = [...kwMap.entries()].map(([k, idx]) => {
    const hs = [];
    for (let i = 1; i < k.length; i++) hs.push(bigram(k.charCodeAt(i - 1), k.charCodeAt(i)));
    const ts = [];
    for (let i = 2; i < k.length; i++) ts.push(trigram(k.charCodeAt(i - 2), k.charCodeAt(i - 1), k.charCodeAt(i)));
    return [k, idx, Int32Array.from(hs), k.length === 1 ? k.charCodeAt(0) : -1, Int32Array.from(ts)];
  });
  // first offset of each keyword in the current text (-1: absent), filled by the prefilter; anchored rules start there
  const kwFirst = new Int32Array(kw.length);
  const kwIndex = new Map(kw.map(([k], j) => [k, j]));
  for (const r of compiled) if (r.anchorRx) r.kwIdx = r.keywords.map((k) => kwIndex.get(k));
  // keywords whose first offset an anchored rule reads (kwFirst); for the others presence is all that is asked
  const needFirst = new Uint8Array(kw.length);
  for (const r of compiled) if (r.anchorRx) for (const q of r.kwIdx) needFirst[q] = 1;
  // bigram and unit marks, one byte per slot (a 64 KB table stays in cache better than 256 KB), reset on the
  // generation's wrap every 255 scans
  // Trigram marks too: in a message with a 100-character random token every common bigram is present, and keywords
  // like `herok` or `оплат` passed the bigram test only to fail a full includes each (the costliest line of such a
  // scan); a keyword that occurs has every one of its trigrams marked, so the test stays exact.
  const marks = new Uint8Array(1 << 16);
  const marks3 = new Uint8Array(1 << 16);
  const units = new Uint8Array(1 << 16);
  // per scan, the sorted offsets of each keyword an anchored rule starts at (rules sharing keywords share the search)
  const kwOcc = new Array(kw.length).fill(null);
  let gen = 0;
  let folded = false; // set by prep: the text has a FOLD character
  let mayFold = false; // set by prep: the text may have a character of the reader's fold
  /** One pass: lower-case t into lowerBuf (the LOWER table) and mark every unit and bigram of the result; returns its
   *  length. */
  function prep(t) {
    gen = (gen + 1) & 0xff;
    if (gen === 0) { marks.fill(0); marks3.fill(0); units.fill(0); gen = 1; }
    let out = lowerBuf.codes;
    if (out.length < t.length) out = lowerBuf.codes = new Uint16Array(t.length); // one unit per unit (LOWER)
    let n = 0, prev = -1, prev2 = -1;
    folded = false;
    let may = 0;
    for (let i = 0; i < t.length; i++) {
      const c = t.charCodeAt(i);
      const l = LOWER[c];
      if (l < 0x80 && c >= 0x80) folded = true; // a FOLD character: the `i` rules scan foldText(t)
      may |= MAY_FOLD[c];
      out[n++] = l;
      units[l] = gen;
      if (prev >= 0) {
        marks[bigram(prev, l)] = gen;
        if (prev2 >= 0) marks3[trigram(prev2, prev, l)] = gen;
      }
      prev2 = prev;
      prev = l;
    }
    mayFold = may !== 0;
    return n;
  }
  const hb = compiled.filter((r) => r.holdback);

  // allowlist: re-stat at most once per allowlistCheckMs; a broken file keeps the last good set
  let allow = new Set(), sig = null, checked = -Infinity;
  function allowed(fp) {
    if (!allowlistPath) return false;
    const now = Date.now();
    if (now - checked >= allowlistCheckMs) {
      checked = now;
      const st = fs.statSync(allowlistPath, { throwIfNoEntry: false });
      if (!st) { allow = new Set(); sig = null; }
      else {
        const s = `${st.ino}:${st.size}:${st.mtimeMs}`;
        if (s !== sig) {
          try {
            const doc = JSON.parse(fs.readFileSync(allowlistPath, "utf8"));
            allow = new Set(doc.entries.map((e) => e.fingerprint));
            sig = s;
          } catch { /* keep the previous set; the next check retries */ }
        }
      }
    }
    return allow.has(fp);
  }

  function accept(r, t, m) {
    const ms = m.index;
    if (r.leftRx && ms > 0 && r.leftRx.test(cpBefore(t, ms))) return null;
    let s = ms, e = ms + m[0].length;
    if (r.group) {
      const g = m[r.group];
      if (g === undefined) return null;
      s = m.indices[r.group][0]; e = m.indices[r.group][1];
    }
    const secret = t.slice(s, e);
    if (examples.has(secret)) return null;
    if (r.stopwords.length) {
      const low = secret.toLowerCase();
      if (r.stopwords.some((w) => low.includes(w))) return null;
    }
    if (r.entropy !== null && entropy(secret) < r.entropy) return null;
    if (r.validator !== null && !VALIDATORS[r.validator](secret)) return null;
    if (r.context) {
      const b = r.context.before || 0, a = r.context.after || 0;
      let ok = b > 0 && hasWord(t.slice(back(t, s, b), s).toLowerCase(), r.ctxWords);
      if (!ok && a) ok = hasWord(t.slice(e, fwd(t, e, a)).toLowerCase(), r.ctxWords);
      if (!ok) return null;
    }
    return [s, e];
  }

  // A near-format candidate (engine.py _accept_near): the rule's left boundary, stopwords and example values, the near
  // entropy floor, and one of the rule's keywords inside the match (the prefilter selected the rule on it).
  function acceptNear(r, t, m) {
    const ms = m.index;
    if (r.leftRx && ms > 0 && r.leftRx.test(cpBefore(t, ms))) return null;
    const g = r.near.group;
    let s = ms, e = ms + m[0].length;
    if (g) {
      if (m[g] === undefined) return null;
      s = m.indices[g][0]; e = m.indices[g][1];
    }
    const secret = t.slice(s, e);
    if (examples.has(secret)) return null;
    if (r.stopwords.length) {
      const low = secret.toLowerCase();
      if (r.stopwords.some((w) => low.includes(w))) return null;
    }
    const whole = m[0].toLowerCase();
    if (!r.keywords.some((k) => whole.includes(k))) return null;
    if (r.near.entropy !== null && entropy(secret) < r.near.entropy) return null;
    return [s, e];
  }

  function nearCandidates(r, t, out) {
    const rx = r.near.rx;
    let pos = 0;
    for (;;) {
      rx.lastIndex = pos;
      const m = rx.exec(t);
      if (m === null) break;
      const span = acceptNear(r, t, m);
      if (span === null) pos = m.index + stepAt(t, m.index);
      else {
        out.push([r.index, span[0], span[1], 1]);
        const end = m.index + m[0].length;
        pos = end > m.index ? end : m.index + stepAt(t, m.index);
      }
      if (pos > t.length) break;
    }
  }

  /** [ruleIndex, start, end, tier] in UTF-16 units of t; tier 0 confirmed, 1 near-format. */
  function candidates(t) {
    const n = prep(t);
    const g = gen;
    let lower = null; // built only if some keyword's bigrams are all present
    const sel = new Set();
    for (let q = 0; q < kw.length; q++) {
      const [k, idx, hs, unit, ts] = kw[q];
      kwFirst[q] = -1;
      kwOcc[q] = null;
      let at;
      if (unit >= 0) {
        if (units[unit] !== g) continue; // exact: the unit is absent from the lower-cased text
        if (needFirst[q]) {
          if (lower === null) lower = UTF16.decode(lowerBuf.codes.subarray(0, n));
          at = lower.indexOf(k);
        } else at = 0; // present; no anchored rule reads its offset
      } else {
        let maybe = true;
        for (let j = 0; j < hs.length; j++) if (marks[hs[j]] !== g) { maybe = false; break; }
        if (!maybe) continue;
        for (let j = 0; j < ts.length; j++) if (marks3[ts[j]] !== g) { maybe = false; break; }
        if (!maybe) continue;
        if (lower === null) lower = UTF16.decode(lowerBuf.codes.subarray(0, n));
        at = lower.indexOf(k);
      }
      kwFirst[q] = at;
      if (at >= 0) for (const i of idx) sel.add(i);
    }
    const out = [];
    let ft = null; // foldText(t), built for the first `i` rule when t has a FOLD character
    for (const ri of [...sel].sort((a, b) => a - b)) {
      const r = compiled[ri];
      const rx = r.rx;
      const tx = r.ci && folded ? (ft ??= foldText(t)) : t;
      let pos = 0;
      // anchored rules: every match starts at a keyword occurrence, so the sticky regex is tried only there, in
      // order (the same result as exec from every position)
      let starts = null, k = 0;
      if (r.anchorRx && n === t.length) {
        if (lower === null) lower = UTF16.decode(lowerBuf.codes.subarray(0, n));
        const set = new Set();
        r.kwIdx.forEach((q, j) => {
          if (kwFirst[q] < 0) return;
          let occ = kwOcc[q];
          if (occ === null) {
            const w = r.keywords[j];
            occ = kwOcc[q] = [];
            for (let i = kwFirst[q]; i >= 0; i = lower.indexOf(w, i + 1)) occ.push(i);
          }
          for (const i of occ) set.add(i);
        });
        starts = [...set].sort((a, b) => a - b);
      }
      for (;;) {
        let m = null;
        if (starts === null) {
          rx.lastIndex = pos;
          m = rx.exec(tx);
        } else {
          while (m === null && k < starts.length) {
            const p = starts[k++];
            if (p >= pos) { r.anchorRx.lastIndex = p; m = r.anchorRx.exec(tx); }
          }
        }
        if (m === null) break;
        const span = accept(r, t, m);
        if (span === null) pos = m.index + stepAt(t, m.index);
        else {
          out.push([ri, span[0], span[1], 0]);
          const end = m.index + m[0].length;
          pos = end > m.index ? end : m.index + stepAt(t, m.index);
        }
        if (pos > t.length) break;
      }
      if (r.near) nearCandidates(r, t, out);
    }
    return out;
  }

  /** [ruleIndex, start, end, secret, tier] for every accepted match in what a reader sees of t (the fold,
   *  dlp-fold.mjs), offsets in UTF-16 units of t, the secret folded. A text with nothing to fold is matched as it is.
   *  Otherwise the folded text is matched first, and t itself too, for the matches the fold would lose by joining a
   *  token to its neighbours (`x<U+200B>ghp_…`); those are kept only where they overlap no folded match of their tier
   *  or a better one (engine.py's spans). */
  function spans(t) {
    const own = candidates(t); // prep sets mayFold on the way
    const f = mayFold ? readerFold(t) : null;
    if (f === null) return { spans: own.map(([ri, s, e, tier]) => [ri, s, e, t.slice(s, e), tier]), fold: null };
    const out = candidates(f.text).map(([ri, s, e, tier]) => [ri, ...f.span(s, e), f.text.slice(s, e), tier]);
    const firsts = out.map(([, s, e, , tier]) => [s, e, tier]);
    for (const [ri, s, e, tier] of own) {
      if (!firsts.some(([s2, e2, t2]) => s < e2 && s2 < e && t2 <= tier)) {
        out.push([ri, s, e, readerFoldText(t.slice(s, e)), tier]);
      }
    }
    return { spans: out, fold: f };
  }

  /** UTF-16 index where the held-back tail of t starts (t.length when nothing is held): a proper prefix of a hold-back
   *  literal at the end, or a full literal followed only by body characters — only where the rule could begin a match
   *  (a character of the prefix's boundary class right before it rules it out: `release` holds no `e`). */
  function holdCut(t) {
    const n = t.length;
    let cut = n;
    for (const r of hb) {
      for (const [p, b] of r.hbPrefixes) {
        for (let k = Math.min(p.length - 1, n); k > 0; k--) {
          if (t.endsWith(p.slice(0, k)) && (b === null || k === n || !b.test(cpBefore(t, n - k)))) {
            cut = Math.min(cut, n - k);
            break;
          }
        }
        // the tail after each occurrence is body characters up to `end`, already checked beyond it (so a text of
        // back-to-back `-----BEGIN…` headers costs one pass, not one per occurrence)
        let i = t.lastIndexOf(p), end = n;
        while (i >= 0 && r.bodyRx.test(t.slice(i + p.length, end))) {
          if (b === null || i === 0 || !b.test(cpBefore(t, i))) cut = Math.min(cut, i);
          end = i + p.length;
          i = i > 0 ? t.lastIndexOf(p, i - 1) : -1;
        }
      }
    }
    return cut;
  }

  /** holdCut(t), and holdCut of what a reader sees of t mapped back to t (`ghp_<U+200B>Abc` is held whole): the
   *  earlier (engine.py's held). f: the fold spans(t) found (null: nothing folds). */
  function heldCut(t, f) { // f: spans(t).fold
    let cut = holdCut(t);
    if (f !== null) {
      const fc = holdCut(f.text);
      if (fc < f.text.length) cut = Math.min(cut, f.orig(fc));
    }
    return cut;
  }

  // Confirmed candidates first, resolved among themselves (start, longer first, rule order; one overlapping an earlier
  // kept one is dropped); then near-format ones the same way, each also dropped where it overlaps a kept confirmed
  // finding: confirmed wins at the same place (engine.py _resolve).
  function resolve(raw, toCp) {
    // raw: [start16, end16, ruleIndex, secret, tier] in payload units
    const items = [[], []];
    // with an empty allowlist nothing is dropped before the overlap resolution: fingerprint only what is kept
    const lazy = raw.length > 1 && !allowed(null) && allow.size === 0;
    for (const [s, e, ri, secret, tier] of raw) {
      if (lazy) { items[tier].push([toCp(s), toCp(e), ri, null, secret]); continue; }
      const fp = fingerprint(secret);
      if (allowed(fp)) continue;
      items[tier].push([toCp(s), toCp(e), ri, fp, secret]);
    }
    const out = [];
    for (let tier = 0; tier < 2; tier++) {
      const group = items[tier];
      group.sort((a, b) => a[0] - b[0] || b[1] - a[1] || a[2] - b[2]);
      const kept = out.map((f) => [f.start, f.end]);
      let lastEnd = -1;
      for (const [s, e, ri, fp, secret] of group) {
        if (s < lastEnd || (tier && kept.some(([ks, ke]) => s < ke && ks < e))) continue;
        const r = compiled[ri];
        out.push({ rule: r.id, start: s, end: e, severity: tier ? nearSeverity(r.severity) : r.severity,
          action: tier ? "redact" : r.action, fingerprint: fp ?? fingerprint(secret), masked: mask(secret),
          tier: tier ? NEAR : "confirmed" });
        lastEnd = e;
      }
    }
    if (items[1].length) out.sort((a, b) => a.start - b.start);
    return out;
  }

  function fingerprint(secret) {
    return createHmac("sha256", key).update(secret, "utf8").digest("hex");
  }

  function scan(text, { html = false, preview = false } = {}) {
    const raw = [];
    let parsed = null, fold = null; // fold: of the text whose hold-back is computed (html: the visible text)
    if (html) {
      parsed = parseHtml(text);
      for (const seg of [parsed.visible, ...parsed.attrs]) {
        const st = seg.text;
        const r = spans(st);
        if (seg === parsed.visible) fold = r.fold;
        for (const [ri, s, e, secret, tier] of r.spans) raw.push([seg.starts[s], seg.ends[e - 1], ri, secret, tier]);
      }
    } else {
      const r = spans(text);
      fold = r.fold;
      for (const [ri, s, e, secret, tier] of r.spans) raw.push([s, e, ri, secret, tier]);
    }
    let cut16 = text.length;
    if (preview) {
      if (html) {
        const vis = parsed.visible;
        const vc = heldCut(vis.text, fold);
        cut16 = vc < vis.text.length ? vis.starts[vc] : text.length;
        if (parsed.openTail !== null) cut16 = Math.min(cut16, parsed.openTail);
      } else cut16 = heldCut(text, fold);
    }
    const offs = [];
    for (const r of raw) offs.push(r[0], r[1]);
    if (preview) offs.push(text.length, cut16);
    const toCp = toCodePoints(text, offs);
    const findings = resolve(raw, toCp);
    const holdBack = preview ? toCp(text.length) - toCp(cut16) : 0;
    return { findings, holdBack };
  }

  function redact(text, findings, { html = false } = {}) {
    if (!findings || findings.length === 0) return { text, action: "pass" };
    const blocked = [...new Set(findings.filter((f) => f.action === "block").map((f) => f.rule))].sort();
    if (blocked.length) return { text: BLOCK_NOTICE(blocked), action: "block" };
    const toU = toUnits(text, findings.flatMap((f) => [f.start, f.end]));
    const tags = html ? parseHtml(text).tags : [];
    let out = "", pos = 0;
    for (const f of [...findings].sort((a, b) => a.start - b.start)) {
      const s = toU(f.start), e = toU(f.end);
      if (s < pos) continue;
      out += text.slice(pos, s) + REDACTED(f.rule);
      if (html) out += tagsWithin(text, tags, s, e);
      pos = e;
    }
    return { text: out + text.slice(pos), action: "redact" };
  }

  function filter(text, { html = false, preview = false } = {}) {
    const res = scan(text, { html, preview });
    const findings = res.findings;
    if (findings.some((f) => f.action === "block")) {
      return { ...redact(text, findings, { html }), findings, held: 0 };
    }
    const total = toCodePoints(text, [text.length])(text.length);
    let cut = total - res.holdBack;
    for (let moved = true; moved;) {
      moved = false;
      for (const f of findings) if (f.start < cut && cut < f.end) { cut = f.start; moved = true; }
    }
    let cut16 = toUnits(text, [cut])(cut);
    let tags = [];
    if (html && cut < total) {
      tags = parseHtml(text).tags;
      for (const [s, e] of tags) if (s < cut16 && cut16 < e) cut16 = s;
      cut = toCodePoints(text, [cut16])(cut16);
    }
    const keep = findings.filter((f) => f.end <= cut);
    let { text: out, action } = redact(text.slice(0, cut16), keep, { html });
    if (html && cut < total) out += closers(tags, cut16);
    return { text: out, action, findings, held: total - cut };
  }

  return { scan, redact, filter, fingerprint, rules: compiled.map((r) => r.id) };
}
