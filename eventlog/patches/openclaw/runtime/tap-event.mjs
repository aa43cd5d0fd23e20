// The tap's event shapes: ids, JSON-safe payload copies, the `message:received` event, a call's outcome.
// ULIDs, so alerts and the message:sent line can point at each other: the writer's one generator (monotonic within
// a millisecond, known-answer tested in test/writer-format-kat.test.mjs).
import { ACCOUNT_RE, DEFAULT_ACCOUNT } from "./writer-format.mjs";

export { newId as ulid } from "./writer-format.mjs";

/** The account an event carries. The gateway hands the tap canonical ids already (normalizeAccountId,
 * src/routing/account-id.ts, openclaw 2026.9.6: lowercase, other characters → "-", no leading/trailing "-", ≤ 64);
 * anything else is put in that form here, so the writer never refuses an event for its account. */
export function accountOf(id) {
  const t = String(id ?? "").trim().toLowerCase();
  if (ACCOUNT_RE.test(t)) return t;
  const c = t.replace(/[^a-z0-9_-]+/g, "-").replace(/^-+/, "").replace(/-+$/, "").slice(0, 64);
  return ACCOUNT_RE.test(c) ? c : DEFAULT_ACCOUNT;
}

/** The key of one (account, chat) for per-chat state shared by all the gateway's bots (message ids are per bot). */
export function chatKey(account, chatId) {
  return account === DEFAULT_ACCOUNT ? String(chatId) : `${account}/${chatId}`;
}

export function nowIso() {
  return new Date().toISOString();
}

export function isPlain(v) {
  if (v === null || typeof v !== "object") return false;
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

/** A JSON-safe copy of a payload for the log: files are recorded as a marker, never their bytes. */
export function jsonSafe(v) {
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (isPlain(v)) {
    const o = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined && typeof x !== "function") o[k] = jsonSafe(x);
    return o;
  }
  if (v === undefined) return null;
  return { $file: typeof v.filename === "string" ? v.filename : (v.constructor?.name ?? "object") };
}

function chatOf(obj) {
  if (!obj || typeof obj !== "object") return undefined;
  return obj.chat?.id ?? obj.message?.chat?.id ?? obj.voter_chat?.id ?? obj.from?.id ?? obj.user?.id;
}

function fromOf(obj) {
  const f = obj?.from ?? obj?.user;
  if (!f || typeof f !== "object") return undefined;
  const name = [f.first_name, f.last_name].filter(Boolean).join(" ");
  const o = { id: f.id, is_bot: Boolean(f.is_bot) };
  if (f.username) o.username = f.username;
  if (name) o.name = name;
  return o;
}

/** Build the `message:received` event for any update type. */
export function receivedEvent(update, accountId) {
  const type = Object.keys(update).find((k) => k !== "update_id") ?? "unknown";
  const obj = update[type];
  const ev = { event: "message:received", channel: "telegram", account: accountOf(accountId),
    chat_id: String(chatOf(obj) ?? "unknown"), ts: nowIso(), direction: "in", update_type: type,
    update_id: update.update_id, raw: jsonSafe(update) };
  const mid = obj?.message_id ?? obj?.message?.message_id;
  if (typeof mid === "number") ev.message_id = mid;
  const from = fromOf(obj);
  if (from) ev.from = from;
  const text = obj?.text ?? obj?.caption ?? obj?.data ?? obj?.query ?? obj?.question ?? obj?.poll?.question;
  if (typeof text === "string") ev.text = text;
  return ev;
}

export function outcomeOf(res) {
  if (res && res.ok) {
    const r = res.result;
    const o = { ok: true };
    if (r && typeof r === "object" && typeof r.message_id === "number") {
      o.message_id = r.message_id;
      // who sent it: the bot, as Telegram names it (id, username, name) — so the log knows the bot's own messages'
      // sender without a `from` of its own; a bot's public identity, not a person's, so metadata
      const from = r.from?.is_bot ? fromOf(r) : undefined;
      if (from) o.from = from;
    } else if (Array.isArray(r)) o.message_ids = r.map((m) => m?.message_id).filter((x) => typeof x === "number");
    return o;
  }
  return { ok: false, error_code: res?.error_code, description: String(res?.description ?? "error") };
}
