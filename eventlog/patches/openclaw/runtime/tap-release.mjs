// Releasing a held-back preview tail (docs/patchset.md, "Streaming previews", item 3).
//
// OpenClaw's final text of a streamed reply is sent by its draft stream with the same call shape as every preview
// edit (draft-stream-*.mjs: stop() sets an internal `final` flag and flushes through the same editMessageTextWithPreview;
// when the last preview already showed the final text, no further call is made at all). The transport cannot tell the
// last edit from a preview edit, so a held-back tail (`the answer is 42`, `key is sk`) would stay cut for good.
// The release: when a preview call held back a tail and no later call for the same chat + message arrives within the
// quiet period, the tap edits the message once more with the full latest text, filtered as a NON-preview (a complete
// secret is still redacted or blocked). Key material in the tail beyond a rule's public prefix that no finding covers
// (`sk-ant-api03-AbC…` cut short) is never shown: the release puts `[REDACTED:<rule>]` in its place (the rule whose
// hold-back prefix it starts with) and the tap raises an alert for it (tier near_format), so the reply ends in a
// redaction, never in silently dropped text (issue 25).

import { foldText } from "./dlp-fold.mjs";

/** Default quiet period (ms): OpenClaw's draft stream edits at most once per second (DEFAULT_THROTTLE_MS = 1000). */
export const DEFAULT_RELEASE_MS = 3000;
/** Digits a released tail may show: PCI DSS allows the first eight of a card number (the BIN) to be displayed. */
export const MAX_RELEASED_DIGITS = 8;

/** The quiet period from $EVENTLOG_PREVIEW_RELEASE_MS: a non-negative integer of ms, 0 turns releasing off. */
export function releaseMsFrom(env = process.env, stderr = (line) => process.stderr.write(line + "\n")) {
  const raw = env.EVENTLOG_PREVIEW_RELEASE_MS;
  if (raw === undefined || raw === "") return DEFAULT_RELEASE_MS;
  if (/^\d{1,7}$/.test(raw.trim())) return Number(raw.trim());
  stderr(`openclaw-eventlog: EVENTLOG_PREVIEW_RELEASE_MS=${JSON.stringify(raw).slice(0, 40)} is not a number of ms; ` +
    `using ${DEFAULT_RELEASE_MS}`);
  return DEFAULT_RELEASE_MS;
}

/** The public literals a hold-back starts with (`sk-`, `eyJ`, `AKIA`, …), from a loaded rules.json. */
export function holdPrefixesOf(rules) {
  const out = new Set();
  for (const r of rules?.rules ?? []) for (const p of r?.holdback?.prefixes ?? []) if (typeof p === "string") out.add(p);
  return [...out];
}

const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" };
function visible(s) {
  return s.replace(/<[^>]*>/g, "").replace(/<[^>]*$/, "")
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e) => {
      if (e[0] !== "#") return ENTITIES[e.toLowerCase()] ?? m;
      const n = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(n) && n <= 0x10ffff ? String.fromCodePoint(n) : m;
    });
}

/** Per rule with a hold-back, in rule order: {rule, prefixes, keywords, severity} (which rule a withheld tail is). */
export function holdRulesOf(rules) {
  const out = [];
  for (const r of rules?.rules ?? []) {
    const prefixes = (r?.holdback?.prefixes ?? []).filter((p) => typeof p === "string" && p);
    if (prefixes.length && typeof r.id === "string") {
      out.push({ rule: r.id, prefixes, keywords: Array.isArray(r.keywords) ? r.keywords : [], severity: r.severity });
    }
  }
  return out;
}

/** The rule a withheld piece of text belongs to: the longest hold-back prefix it starts with (else the earliest one
 *  it contains); among rules with that prefix, one whose keyword occurs in the piece (`sk-proj-…`: the project-key
 *  rule, not the first `sk-` rule), else the first. null when no hold-back prefix is in it. */
export function withheldRule(piece, holdRules) {
  const t = piece.trim();
  const low = t.toLowerCase();
  const less = (x, y) => { for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i]; return false; };
  let best = null;
  for (const hr of holdRules ?? []) {
    const kw = hr.keywords.some((k) => low.includes(k)) ? 0 : 1;
    for (const p of hr.prefixes) {
      const at = t.indexOf(p);
      if (at < 0) continue;
      const key = [at === 0 ? 0 : 1, -p.length, at, kw]; // rules in file order: the first of equals stays
      if (best === null || less(key, best.key)) best = { key, hr };
    }
  }
  return best ? best.hr : null;
}

// dlp.mjs's nearSeverity and mask, restated: tap.mjs loads the engine lazily so that a broken engine fails closed,
// and this module must load without it (test/dlp-near.test.mjs and tap-release.test.mjs hold them equal).
const SEVERITY_ORDER = ["critical", "high", "medium", "low"];
export function withheldSeverity(severity) {
  const i = Math.max(0, SEVERITY_ORDER.indexOf(severity));
  return i >= 2 ? severity : SEVERITY_ORDER[i + 1];
}
export function maskWithheld(secret) {
  const cps = Array.from(secret);
  return `${cps.slice(0, Math.min(4, Math.floor(cps.length / 4))).join("")}…[${cps.length}]`;
}

/** The near-format findings a release puts in place of the withheld spans of `text` (withheldSpans): one per span,
 *  of the rule whose hold-back prefix it starts with (`held-back` when no rule's prefix is in it). */
export function withheldFindings(text, spans, holdRules, fingerprint = null) {
  const cps = Array.from(text);
  return spans.map(([start, end]) => {
    const piece = cps.slice(start, end).join("");
    const hr = withheldRule(piece, holdRules);
    return { rule: hr ? hr.rule : "held-back", start, end, severity: withheldSeverity(hr ? hr.severity : "critical"),
      action: "redact", fingerprint: fingerprint ? fingerprint(piece) : null, masked: maskWithheld(piece),
      tier: "near_format", withheld: true };
  });
}

function safeSegment(s, prefixes) {
  const t = foldText(s).trim(); // what a reader sees (dlp-fold.mjs): `gh<U+200B>` is the public `gh`
  if (!t) return true;
  if (/^[0-9][0-9 -]*$/.test(t)) return t.replace(/[^0-9]/g, "").length <= MAX_RELEASED_DIGITS;
  return prefixes.some((p) => p.startsWith(t)); // a prefix of a public literal, or the literal itself
}

/**
 * The parts of the held-back tail of `text` that may not be shown, as [start, end) code point spans of `text`.
 * `held`: code points the preview filter held back; `findings`: those of the NON-preview filter of the same text
 * (their spans are redacted or the whole text is blocked, so they never show). Every other part of the tail must be a
 * prefix of a public hold-back literal (`sk`, `sk-`, `sk-ant-`, `eyJ`, `:A`) or a run of at most MAX_RELEASED_DIGITS
 * digits; a part that is not (`sk-ant-api03-AbC…`, `AKIAIOSF…`, a long digit run) is withheld (spans without the
 * part's surrounding white space). A tail that cannot be located (held > length) is withheld whole.
 */
export function withheldSpans(text, held, findings, { html = false, prefixes = [] } = {}) {
  if (!(held > 0)) return [];
  const cps = Array.from(text);
  const cut = cps.length - held;
  if (cut < 0) return [[0, cps.length]];
  const covered = new Uint8Array(held);
  for (const f of findings ?? []) {
    for (let i = Math.max(f.start, cut); i < Math.min(f.end, cps.length); i++) covered[i - cut] = 1;
  }
  const out = [];
  for (let i = 0; i < held;) {
    if (covered[i]) { i++; continue; }
    let j = i;
    while (j < held && !covered[j]) j++;
    const raw = cps.slice(cut + i, cut + j).join("");
    if (!safeSegment(html ? visible(raw) : raw, prefixes)) {
      let a = cut + i, b = cut + j;
      while (a < b && /\s/.test(cps[a])) a++;
      while (b > a && /\s/.test(cps[b - 1])) b--;
      out.push([a, b]);
    }
    i = j;
  }
  return out;
}

/** May the held-back tail of `text` be shown as it is? (withheldSpans finds nothing to withhold.) */
export function tailReleasable(text, held, findings, opts = {}) {
  return withheldSpans(text, held, findings, opts).length === 0;
}

/**
 * Per chat + message: at most one pending release, cancelled by any later preview call for that message (which also
 * waits for a release already in flight, so OpenClaw's newer edit always lands last) or by its deletion.
 * timers: {setTimeout, clearTimeout} (tests drive a fake clock); timers are unref'd so they never hold the gateway up.
 */
export function createReleaser({ quietMs = DEFAULT_RELEASE_MS, timers = globalThis, max = 4096 } = {}) {
  const slots = new Map(); // key -> {seq, timer, inflight}
  let seq = 0;

  function tidy(key, s) {
    if (slots.get(key) === s && !s.timer && !s.inflight && s.seq === s.done) slots.delete(key);
  }

  /** A call for this message starts: drop a pending release, wait for one in flight. Returns the call's token. */
  async function enter(key) {
    let s = slots.get(key);
    if (!s) {
      s = { seq: 0, done: 0, timer: null, inflight: null };
      slots.set(key, s);
      if (slots.size > max) {
        // drop the oldest idle slot; a busy one stays (its release is still wanted)
        for (const [k, v] of slots) if (!v.timer && !v.inflight && k !== key) { slots.delete(k); break; }
      }
    }
    if (s.timer) { timers.clearTimeout(s.timer); s.timer = null; }
    const token = ++seq;
    s.seq = token;
    while (s.inflight) await s.inflight;
    return token;
  }

  /** The call with `token` is done; `job` (or null) is the release to run after the quiet period. */
  function settle(key, token, job) {
    const s = slots.get(key);
    if (!s || s.seq !== token) return; // a later call for the message took over
    s.done = token;
    if (!job || quietMs <= 0) { tidy(key, s); return; }
    s.timer = timers.setTimeout(() => {
      s.timer = null;
      if (s.seq !== token) return;
      s.inflight = Promise.resolve().then(job).catch(() => {}).finally(() => { s.inflight = null; tidy(key, s); });
    }, quietMs);
    s.timer?.unref?.();
  }

  /** The message is gone (deleteMessage) or edited by a non-preview call: nothing to release. Returns the release
   *  in flight, if any, for the caller to wait for (null when none: no await on the common path). */
  function cancel(key) {
    const s = slots.get(key);
    if (!s) return null;
    if (s.timer) { timers.clearTimeout(s.timer); s.timer = null; }
    s.seq = s.done = ++seq;
    const inflight = s.inflight;
    tidy(key, s);
    return inflight;
  }

  /** Releases in flight have settled (pending timers are not fired). */
  async function idle() {
    for (const s of [...slots.values()]) while (s.inflight) await s.inflight;
  }

  return { enter, settle, cancel, idle, get pending() { return [...slots.values()].filter((s) => s.timer).length; },
    get size() { return slots.size; } };
}
