// The tap's logic, with its log and scanner injected (tap.mjs wires the real ones).
//
// Policy (docs/patchset.md):
// - inbound: every update is appended as `message:received` BEFORE the next middleware (the agent) runs;
//   a replayed update_id is logged again with `duplicate: true`. If the append fails the update is not
//   handed on: the agent never acts on a message the log does not have.
// - outbound: every Bot API call except read-only/no-content ones is scanned (every string in the payload,
//   HTML-aware where a parse_mode says so); findings are redacted or the field is replaced by a withheld
//   notice; secret prefixes at the end of a streaming preview are held back; alerts are appended first,
//   then the call is forwarded, then `message:sent` is appended with the payload as sent and the outcome.
// - fail closed: no scanner, or a scan that throws -> the call is refused (throws), an alert is written.
//   Log unusable (a previous append failed, or the partition path is not a writable directory chain) ->
//   the call is refused: nothing leaves that the log cannot record.
import { appendFile, stat } from "node:fs/promises";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { AlertMerger, headOf } from "./dlp-alerts.mjs";
import { createReleaser, DEFAULT_RELEASE_MS, withheldFindings, withheldSpans } from "./tap-release.mjs";
import { accountOf, chatKey, isPlain, jsonSafe, nowIso, outcomeOf, receivedEvent, ulid } from "./tap-event.mjs";
import { chatDir } from "./writer-format.mjs";

export { jsonSafe, receivedEvent, ulid };

// Streaming previews: OpenClaw's draft stream (draft-stream-*.mjs) sends and edits them through the ingress bot's api
// (bot-message-*.mjs hands it `params.bot.api`). The send site (the outbound helper bot of send-*.mjs) carries final
// replies, which no later edit completes: holding back their tail would lose it for good (docs/patchset.md).
const PREVIEW_METHODS = new Set(["sendMessage", "editMessageText"]);
const PREVIEW_SITES = new Set(["ingress"]);
// Calls that carry no message content and change nothing in a chat (or only the gateway's own setup, or the typing
// indicator, which would add one line per second of every reply): forwarded untouched, not logged.
const PASS_METHODS = new Set(["deleteWebhook", "setWebhook", "deleteMyCommands", "sendChatAction", "logOut", "close"]);
// Bot-level settings: scanned (they are text Telegram shows) but not chat events.
const BOT_SETTINGS = /^(setMy|setChatMenuButton)/;
// Keys whose strings are ids, enums or file references: scanning them could only break the call.
const SKIP_KEYS = new Set(["chat_id", "from_chat_id", "parse_mode", "type", "action", "emoji", "media", "photo",
  "document", "video", "audio", "animation", "voice", "video_note", "sticker", "thumbnail", "thumb", "cover",
  "message_effect_id", "business_connection_id", "callback_query_id", "inline_query_id", "currency",
  "custom_emoji_id", "icon_custom_emoji_id", "allowed_updates", "secret_token"]);
const CONTENT_KEYS = ["text", "caption", "question", "message_text", "title", "description"];

const ALERT_REPEAT_MS = 10 * 60 * 1000;
const ALERT_REPEAT_MAX = 4096;

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * createTap({deps}) — deps is (a promise of) {root, log, scanner, scannerError, holdPrefixes}.
 * log: writer.mjs's {append(event), appendStream(relpath, event)}; scanner: dlp.mjs's {filter(text, {html, preview})};
 * holdPrefixes: the rules' public hold-back literals (tap-release.mjs). releaseMs: quiet period before a held-back
 * preview tail is released (0: never); timers: {setTimeout, clearTimeout} for that (tests inject a clock).
 */
export function createTap({ deps, stderr = (line) => process.stderr.write(line + "\n"), releaseMs = DEFAULT_RELEASE_MS,
  timers = globalThis }) {
  const ready = Promise.resolve(deps);
  const releaser = createReleaser({ quietMs: releaseMs, timers });
  let degraded = null; // error message of the last failed append; cleared by the next successful one
  const callbackChats = new Map(); // callback_query_id / inline_query_id -> chat, for answer* calls
  const seen = { set: null, file: null };
  const pathOk = new Map();
  // message:sent appends still in flight. The reply is handed back to OpenClaw without waiting for the disk; the
  // writer keeps each file's order. Past MAX_PENDING the transformer waits (back-pressure on a slow disk).
  const pending = new Set();
  const MAX_PENDING = 256;
  async function track(p) {
    pending.add(p);
    p.finally(() => pending.delete(p));
    if (pending.size > MAX_PENDING) await Promise.race(pending);
  }

  async function append(log, event) {
    try {
      await log.append(event);
      degraded = null;
    } catch (err) {
      degraded = `${err?.code ?? ""} ${err?.message ?? err}`.trim();
      // no text, no payload: this line goes to the gateway's own log
      stderr(`openclaw-eventlog: cannot append ${event.event} for chat ${event.chat_id}: ${degraded}`);
      throw err;
    }
  }

  // The alert stream is another file: its failure only matters for calls that have findings to record.
  let alertsDegraded = null;
  // One alert per leak, not per preview edit: a growing preview re-sends the same secret every second or so. Within
  // ALERT_REPEAT_MS the same rule + fingerprint in the same chat reuses the alert id already written.
  const recentAlerts = new Map();
  // ... and within one outbound message (chat + message_id) a growing secret is one alert, updated (dlp-alerts.mjs)
  const merger = new AlertMerger();
  async function appendAlert(log, alert) {
    try {
      await log.appendStream("dlp/alerts.jsonl", storedAlert(alert));
      alertsDegraded = null;
    } catch (err) {
      alertsDegraded = `${err?.code ?? ""} ${err?.message ?? err}`.trim();
      stderr(`openclaw-eventlog: cannot append dlp alert (${alert.rule}) for chat ${alert.chat_id}: ${alertsDegraded}`);
      throw err;
    }
  }

  // What is derived from the secret goes into `payload`, a content field, so `forget` can erase it (the Python side:
  // eventlog/dlp/alerts.py stored/shown).
  function storedAlert(alert) {
    const out = { ...alert };
    const sealed = {};
    for (const k of ["fingerprint", "masked", "head"]) {
      if (out[k] !== undefined && out[k] !== null) sealed[k] = out[k];
      delete out[k];
    }
    if (Object.keys(sealed).length) out.payload = { ...(alert.payload ?? {}), ...sealed };
    return out;
  }

  // The partition file's directory chain must be directories (or not exist yet) under the root.
  async function preflight(root, chatId, account) {
    if (degraded) throw new Error(`event log unusable: ${degraded}`);
    const d = new Date();
    const dir = join(root, chatDir("telegram", chatId, account), String(d.getUTCFullYear()),
      String(d.getUTCMonth() + 1).padStart(2, "0"));
    const hit = pathOk.get(dir);
    if (hit && Date.now() - hit < 1000) return;
    for (let p = dir; ; p = dirname(p)) {
      try {
        const s = await stat(p);
        if (!s.isDirectory()) throw new Error(`event log unusable: ${p} is not a directory`);
        break;
      } catch (err) {
        if (err.code !== "ENOENT" || p === dirname(p)) throw err;
      }
    }
    pathOk.set(dir, Date.now());
  }

  function loadSeen(root, accountId) {
    if (seen.set) return;
    seen.file = join(root, "tap", `updates-${String(accountId ?? "default").replace(/[^A-Za-z0-9_-]/g, "_")}.seen`);
    seen.set = new Set();
    try {
      const lines = readFileSync(seen.file, "utf8").split("\n").filter(Boolean);
      const keep = lines.slice(-50000);
      for (const l of keep) seen.set.add(l);
      if (lines.length > 100000) writeFileSync(seen.file, keep.join("\n") + "\n", { mode: 0o600 });
    } catch (err) {
      if (err.code !== "ENOENT") throw err;
      mkdirSync(dirname(seen.file), { recursive: true, mode: 0o700 });
    }
  }

  function middleware({ accountId } = {}) {
    return async (ctx, next) => {
      const { root, log } = await ready;
      const update = ctx.update;
      const ev = receivedEvent(update, accountId);
      loadSeen(root, accountId);
      const key = String(update.update_id);
      if (seen.set.has(key)) ev.duplicate = true;
      const obj = update[ev.update_type];
      if (update.callback_query || update.inline_query) callbackChats.set(String(obj.id), ev.chat_id);
      if (callbackChats.size > 10000) callbackChats.delete(callbackChats.keys().next().value);
      await append(log, ev); // throws -> grammY's bot.catch reports it, the agent never sees the update
      if (!ev.duplicate) {
        seen.set.add(key);
        // losing this line (crash) only means a later replay is logged without `duplicate: true`, never lost
        await appendFile(seen.file, key + "\n", { mode: 0o600 });
      }
      await next();
    };
  }

  // Scan one string with the engine's filter (scan + hold-back cut + redact/block, HTML-aware, code points).
  // withheld: a release's redactions of held-back key material no finding covers (tap-release.mjs withheldFindings).
  function filterText(scanner, text, { html, preview, withheld = null }) {
    const r = scanner.filter(text, { html, preview });
    if (withheld && withheld.length && r.action !== "block") {
      const all = [...(r.findings ?? []), ...withheld].sort((a, b) => a.start - b.start);
      const red = scanner.redact(text, all, { html });
      return { text: red.text, findings: all, action: red.action, changed: red.text !== text, held: 0 };
    }
    let out = r.text;
    // a preview that is nothing but a held-back prefix still needs some text: Telegram rejects an empty message
    if (preview && r.held && !out.trim()) out = "…";
    return { text: out, findings: r.findings ?? [], action: r.action ?? "pass", changed: out !== text,
      held: r.held ?? 0 };
  }

  // Walk the payload; returns a filtered deep copy of plain objects/arrays (files kept by reference).
  function filterPayload(scanner, method, payload, site, release = false, withheld = null) {
    const previewCall = !release && PREVIEW_METHODS.has(method) && PREVIEW_SITES.has(site);
    const found = [];
    let action = "pass";
    let held = 0;
    const walk = (v, key, parent, path) => {
      if (typeof v === "string") {
        if (SKIP_KEYS.has(key) || (typeof key === "string" && (key.endsWith("_id") || key.endsWith("parse_mode")))) {
          return v;
        }
        const pm = parent && (parent[`${key}_parse_mode`] ?? parent.parse_mode);
        const html = typeof pm === "string" && pm.toUpperCase() === "HTML";
        const preview = previewCall && path === "text";
        const r = filterText(scanner, v, { html, preview, withheld: path === "text" ? withheld : null });
        held += r.held ?? 0;
        for (const f of r.findings) found.push({ finding: f, field: path, head: headOf(v, f.start) });
        if (r.action === "block") action = "block";
        else if (r.action === "redact" && action === "pass") action = "redact";
        return r.text;
      }
      if (Array.isArray(v)) return v.map((x, i) => walk(x, i, v, `${path}[${i}]`));
      if (isPlain(v)) {
        const o = {};
        for (const [k, x] of Object.entries(v)) o[k] = walk(x, k, v, path ? `${path}.${k}` : k);
        // entity offsets describe the old text; Telegram would reject or misplace them
        if (o.text !== v.text) delete o.entities;
        if (o.caption !== v.caption) delete o.caption_entities;
        return o;
      }
      return v;
    };
    const out = walk(payload ?? {}, null, null, "");
    return { payload: out, found, action, held };
  }

  function chatIdFor(method, payload) {
    if (payload?.chat_id !== undefined && payload.chat_id !== null) return String(payload.chat_id);
    const q = payload?.callback_query_id ?? payload?.inline_query_id;
    if (q !== undefined) return callbackChats.get(String(q)) ?? "unknown";
    return BOT_SETTINGS.test(method) ? null : "unknown";
  }

  function primaryText(payload) {
    for (const k of CONTENT_KEYS) if (typeof payload?.[k] === "string") return payload[k];
    return undefined;
  }

  function transformer({ site, accountId } = {}) {
    const account = accountOf(accountId);
    return async (prev, method, payload, signal) => {
      if (PASS_METHODS.has(method) || method.startsWith("get")) return prev(method, payload, signal);
      const chatId = chatIdFor(method, payload);
      const where = chatKey(account, chatId); // pending releases are per (account, chat): message ids are per bot
      const preview = PREVIEW_METHODS.has(method) && PREVIEW_SITES.has(site);
      if (chatId !== null && method === "deleteMessages" && Array.isArray(payload?.message_ids)) {
        for (const m of payload.message_ids) releaser.cancel(`${where}|${m}`);
      }
      const key = chatId !== null && payload?.message_id != null ? `${where}|${payload.message_id}` : null;
      if (!preview) {
        // deleting the message, or a send-site text edit of it, drops a pending release; the edit lands after one
        // in flight
        if (key !== null && (method === "deleteMessage" || method === "editMessageText")) {
          const inflight = releaser.cancel(key);
          if (inflight) await inflight;
        }
        return call(prev, method, payload, signal, { site, account, chatId });
      }
      // a preview supersedes a pending release of its message and lands after one in flight
      const tracked = key !== null;
      const token = tracked ? await releaser.enter(key) : null;
      let res;
      let job = null;
      try {
        res = await call(prev, method, payload, signal, { site, account, chatId, onHeld: (r) => { job = r; } });
        return res;
      } finally {
        const mid = payload?.message_id ?? outcomeOf(res).message_id;
        // "message is not modified": the message shows this preview already, its tail still wants releasing
        const shown = res?.ok || /message is not modified/i.test(String(res?.description ?? ""));
        if (tracked) releaser.settle(key, token, shown && job ? job(mid) : null);
        else if (job && shown && mid !== undefined) {
          const k = `${where}|${mid}`;
          releaser.settle(k, await releaser.enter(k), job(mid));
        }
      }
    };
  }

  // One Bot API call through the filter and the log. isRelease: the tap's own completing edit (filtered whole).
  async function call(prev, method, payload, signal, { site, account, chatId, onHeld = null, isRelease = false,
    withheld = null }) {
    const { root, log, scanner, scannerError, rulesVersion = null, holdPrefixes = [], holdRules = [] } = await ready;
    const sentId = ulid();
    const base = { channel: "telegram", account, chat_id: chatId ?? "unknown", direction: "out", method, site };
    let filtered;
    try {
      if (!scanner) throw scannerError ?? new Error("no DLP scanner");
      filtered = filterPayload(scanner, method, payload, site, isRelease, withheld);
    } catch (err) {
      // fail closed: nothing of this payload leaves; the alert names the failure, never the content
      const alert = { ...base, event: "dlp:alert", ts: nowIso(), id: ulid(), rule: "scanner-error",
        severity: "critical", action: "block", error: String(err?.message ?? err).slice(0, 200),
        log_event: chatId !== null ? sentId : null, source: "tap", rules_version: rulesVersion };
      await appendAlert(log, alert).catch(() => {});
      if (chatId !== null) {
        await append(log, { ...base, event: "message:sent", ts: nowIso(), id: sentId,
          outcome: { ok: false, description: "refused by openclaw-eventlog: DLP scanner error" },
          dlp: { action: "block", rules: ["scanner-error"], alerts: [alert.id] } }).catch(() => {});
      }
      throw new Error(`openclaw-eventlog: ${method} refused: DLP scanner error`);
    }
    if (chatId !== null) {
      try {
        await preflight(root, chatId, account);
      } catch (err) {
        stderr(`openclaw-eventlog: ${method} to chat ${chatId} refused: ${err.message}`);
        throw new Error(`openclaw-eventlog: ${method} refused: event log cannot be written`);
      }
    }
    const alertIds = [];
    const alertWrites = [];
    const msgId = payload?.message_id ?? null; // edits name their message; a send learns it from the reply
    const fresh = [];
    for (const { finding: f, field, head } of filtered.found) {
      const [kind, known] = merger.decide(chatKey(account, chatId), msgId, f.rule, f.start, f.end, field, head);
      if (kind === "same") { if (!alertIds.includes(known)) alertIds.push(known); continue; }
      if (kind === "update") {
        // the secret grew across preview edits: the alert keeps its id and takes the longer fingerprint
        const upd = { ...base, event: "dlp:alert:update", ts: nowIso(), id: ulid(), alert: known, rule: f.rule,
          fingerprint: f.fingerprint, masked: f.masked, start: f.start, end: f.end, field, log_event: sentId,
          source: "tap" };
        alertWrites.push(appendAlert(log, upd));
        if (!alertIds.includes(known)) alertIds.push(known);
        continue;
      }
      const key = `${chatKey(account, chatId)}|${f.rule}|${f.fingerprint}`;
      const seen = recentAlerts.get(key);
      if (seen && Date.now() - seen.at < ALERT_REPEAT_MS) {
        if (!alertIds.includes(seen.id)) alertIds.push(seen.id);
        continue;
      }
      const now = nowIso(); // the event is this call: its time and the detection time are the same
      const alert = { ...base, event: "dlp:alert", ts: now, detected_at: now, id: ulid(), rule: f.rule, severity: f.severity,
        action: filtered.action === "block" ? "block" : "redact", fingerprint: f.fingerprint, masked: f.masked,
        start: f.start, end: f.end, field, log_event: sentId, source: "tap", rules_version: rulesVersion,
        tier: f.tier ?? "confirmed" };
      if (f.withheld) alert.withheld = true; // held-back key material the release replaced by its redaction
      // Written while the (already filtered) call is in flight: the disk is off the reply's critical path.
      // A failure leaves the tap degraded, so the next call is refused; an alert that failed is not reused.
      recentAlerts.set(key, { id: alert.id, at: Date.now() });
      if (recentAlerts.size > ALERT_REPEAT_MAX) recentAlerts.delete(recentAlerts.keys().next().value);
      alertWrites.push(appendAlert(log, alert).catch((err) => {
        if (recentAlerts.get(key)?.id === alert.id) recentAlerts.delete(key);
        throw err;
      }));
      alertIds.push(alert.id);
      fresh.push({ rule: f.rule, start: f.start, end: f.end, id: alert.id, field, head });
      if (msgId !== null) merger.add(chatKey(account, chatId), msgId, f.rule, f.start, f.end, alert.id, field, head);
    }
    if (alertWrites.length && alertsDegraded !== null) {
      // the last alert append failed: this call's alerts must land before it may leave
      try {
        await Promise.all(alertWrites);
      } catch {
        throw new Error(`openclaw-eventlog: ${method} refused: DLP alert stream cannot be written`);
      }
    }
    const records = (r) => Promise.allSettled(alertWrites).then(() => (chatId !== null ? logSent(r) : undefined));
    const sent = filtered.payload;
    let res;
    try {
      res = await prev(method, sent, signal);
    } catch (err) {
      res = { ok: false, description: String(err?.message ?? err) };
      await records(res).catch(() => {});
      throw err;
    }
    if (onHeld && filtered.held && typeof payload?.text === "string") {
      // the preview's tail was held back: after a quiet period without a newer call for this message, complete it
      // (tap-release.mjs). Key material in the tail beyond a public prefix that no finding covers is replaced by a
      // redaction of the rule whose hold-back prefix it starts with, and alerted (tier near_format).
      const pm = payload.parse_mode;
      const html = typeof pm === "string" && pm.toUpperCase() === "HTML";
      let job = null;
      try {
        const whole = scanner.filter(payload.text, { html, preview: false });
        // (a blocked text is released as the block notice: nothing of it shows)
        const spans = whole.action === "block" ? []
          : withheldSpans(payload.text, filtered.held, whole.findings, { html, prefixes: holdPrefixes });
        job = { withheld: spans.length ? withheldFindings(payload.text, spans, holdRules, scanner.fingerprint) : null };
      } catch { /* fail closed: a tail that cannot be judged stays held */ }
      if (job) {
        onHeld((mid) => () => release(prev, chatId, mid, payload, { site, account, withheld: job.withheld }));
      }
    }
    if (msgId === null && fresh.length) {
      const mid = outcomeOf(res).message_id;
      if (mid !== undefined) for (const a of fresh) merger.add(chatKey(account, chatId), mid, a.rule, a.start, a.end, a.id, a.field, a.head);
    }
    // The call went out: a failing append must not make OpenClaw believe the delivery failed. It leaves the
    // tap degraded (stderr line written), so the next outbound call is refused until an append succeeds.
    // The record is built and queued on the next turn of the event loop: the reply goes back to OpenClaw first, so
    // encoding the line and handing the write to the thread pool (~0.1 ms) are not part of this call's latency.
    await track(nextTurn().then(() => records(res)).catch(() => {}));
    return res;

    async function logSent(r) {
      const ev = { ...base, event: "message:sent", ts: nowIso(), id: sentId, payload: jsonSafe(sent),
        outcome: outcomeOf(r) };
      if (isRelease) ev.tap_release = true;
      const text = primaryText(sent);
      if (text !== undefined) ev.text = text;
      if (ev.outcome.message_id !== undefined) ev.message_id = ev.outcome.message_id;
      if (filtered.action !== "pass" || filtered.held) {
        ev.dlp = { action: filtered.action, rules: [...new Set(filtered.found.map((x) => x.finding.rule))],
          alerts: alertIds };
        if (filtered.held) ev.dlp.held_back = filtered.held;
      }
      await append(log, ev);
    }
  }

  // The completing edit: the latest preview's full text, as an editMessageText of that message, filtered whole.
  async function release(prev, chatId, mid, payload, { site, account, withheld = null }) {
    const edit = { chat_id: payload.chat_id, message_id: mid };
    for (const k of ["business_connection_id", "text", "parse_mode", "entities", "link_preview_options",
      "reply_markup"]) if (payload[k] !== undefined) edit[k] = payload[k];
    try {
      await call(prev, "editMessageText", edit, undefined, { site, account, chatId, isRelease: true, withheld });
    } catch (err) {
      stderr(`openclaw-eventlog: held-back tail of message ${mid} in chat ${chatId} not released: ${err?.message ?? err}`);
    }
  }

  /** Resolves once every message:sent append started so far has settled (tests, shutdown). */
  async function flush() {
    await releaser.idle();
    while (pending.size) await Promise.allSettled([...pending]);
  }

  return { middleware, transformer, flush, ready, releases: releaser,
    get degraded() { return degraded ?? alertsDegraded; } };
}
