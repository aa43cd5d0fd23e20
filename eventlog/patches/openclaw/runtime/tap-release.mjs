// Releasing a held-back preview tail (docs/patchset.md, "Streaming previews", item 3).
//
// OpenClaw's final text of a streamed reply is sent by its draft stream with the same call shape as every preview
// edit (draft-stream-*.mjs: stop() sets an internal `final` flag and flushes through the same editMessageTextWithPreview;
// when the last preview already showed the final text, no further call is made at all). The transport cannot tell the
// last edit from a preview edit, so a held-back tail (`the answer is 42`, `key is sk`) would stay cut for good.
// The release: when a preview call held back a tail and no later call for the same chat + message arrives within the
// quiet period, the tap edits the message once more with the full latest text, filtered as a NON-preview (a complete
// secret is still redacted or blocked). A tail that carries key material beyond a rule's public prefix is never
// released: fail closed where a secret could escape.

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

function safeSegment(s, prefixes) {
  const t = foldText(s).trim(); // what a reader sees (dlp-fold.mjs): `gh<U+200B>` is the public `gh`
  if (!t) return true;
  if (/^[0-9][0-9 -]*$/.test(t)) return t.replace(/[^0-9]/g, "").length <= MAX_RELEASED_DIGITS;
  return prefixes.some((p) => p.startsWith(t)); // a prefix of a public literal, or the literal itself
}

/**
 * May the held-back tail of `text` be shown? `held`: code points the preview filter held back; `findings`: those of
 * the NON-preview filter of the same text (their spans are redacted or the whole text is blocked, so they never show).
 * Every other part of the tail must be a prefix of a public hold-back literal (`sk`, `sk-`, `sk-ant-`, `eyJ`, `:A`) or
 * a run of at most MAX_RELEASED_DIGITS digits. `sk-ant-api03-AbC…`, `AKIAIOSF…`, a long digit run: withheld.
 */
export function tailReleasable(text, held, findings, { html = false, prefixes = [] } = {}) {
  if (!(held > 0)) return true;
  const cps = Array.from(text);
  const cut = cps.length - held;
  if (cut < 0) return false;
  const tail = cps.slice(cut);
  for (const f of findings ?? []) {
    for (let i = Math.max(f.start, cut); i < Math.min(f.end, cps.length); i++) tail[i - cut] = "\u0000";
  }
  let t = tail.join("");
  if (html) t = t.split("\u0000").map(visible).join("\u0000");
  return t.split("\u0000").every((s) => safeSegment(s, prefixes));
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
