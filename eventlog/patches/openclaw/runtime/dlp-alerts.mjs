// One alert per leak: the decision shared with the Python engine (eventlog/dlp/merge.py; vectors in
// tests/vectors/dlp/alert_merge.json). Within one outbound message (same chat, same Telegram message_id) a finding of
// the same rule whose span overlaps an alert already raised for that message is the same leak: it reuses the alert,
// and when the secret grew the alert gets a `dlp:alert:update` with the longer fingerprint. A different message is
// a new alert.
import { createHmac } from "node:crypto";

const MAX_MESSAGES = 4096;
const HEAD = 16;

/** Identity of the secret at code point `start` of text across edits: its first 16 characters, hashed. The tap keeps
 * it in memory only (eventlog/dlp/merge.py head_of is the same function; a stored head is keyed with the DLP key). */
export function headOf(text, start) {
  let i = 0, cp = 0;
  while (cp < start && i < text.length) { i += text.codePointAt(i) > 0xffff ? 2 : 1; cp++; }
  let j = i, n = 0;
  while (n < HEAD && j < text.length) { j += text.codePointAt(j) > 0xffff ? 2 : 1; n++; }
  return createHmac("sha256", "").update(text.slice(i, j), "utf8").digest("hex").slice(0, 16);
}

export class AlertMerger {
  constructor(maxMessages = MAX_MESSAGES) { this.byMsg = new Map(); this.max = maxMessages; }

  /** ["new", null] | ["same", alertId] | ["update", alertId] (the update is recorded here already). */
  decide(chat, messageId, rule, start, end, field = "text", head = "") {
    if (messageId === null || messageId === undefined || chat === null || chat === undefined) return ["new", null];
    for (const a of this.byMsg.get(`${chat}|${messageId}`) ?? []) {
      if (a.rule === rule && a.field === field && a.head === head && start < a.end && a.start < end) {
        if (end - start > a.end - a.start) { a.start = start; a.end = end; return ["update", a.id]; }
        return ["same", a.id];
      }
    }
    return ["new", null];
  }

  add(chat, messageId, rule, start, end, alertId, field = "text", head = "") {
    if (messageId === null || messageId === undefined || chat === null || chat === undefined) return;
    const key = `${chat}|${messageId}`;
    const list = this.byMsg.get(key) ?? [];
    this.byMsg.delete(key);
    list.push({ rule, start, end, id: alertId, field, head });
    this.byMsg.set(key, list);
    while (this.byMsg.size > this.max) this.byMsg.delete(this.byMsg.keys().next().value);
  }
}
