// openclaw-eventlog recall plugin: gives the model eventlog_search and eventlog_context over the event log.
//
// Shipped inside the Python package (eventlog/agent/plugin/) and copied out of it by `eventlog agent install`,
// which registers this directory in plugins.load.paths. The search itself is the Python library: every call goes to
// `<command> agent call` (one process per call) or to one long-lived `<command> agent serve` (JSON Lines), argv only,
// with a timeout and an output cap. This file decides only what the gateway vouches for: which chat the call comes
// from (ctx.nativeChannelId, else ctx.deliveryContext.to) and whether the sender may search every chat
// (ctx.senderIsOwner, or a sender id on the configured allowAll list). The model's arguments never choose the chat.
// Any failure becomes a short text for the model; the turn goes on.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

// Children run in this plugin's directory, not the gateway's working directory: `python -m eventlog` started in a
// directory holding the log root (`eventlog/`, e.g. ~/.openclaw) would import that directory instead of the package.
const CHILD_CWD = dirname(fileURLToPath(import.meta.url));

const PLUGIN_ID = "eventlog-recall";
const DEFAULT_TIMEOUT_MS = 30000;
const DEFAULT_MAX_OUTPUT = 1024 * 1024;
// Characters of a query: the helper refuses longer ones (eventlog/agent/tool.py MAX_QUERY_CHARS, the same number).
const MAX_QUERY_CHARS = 2000;
// Turns before and after each hit that eventlog_search's `context` may ask for (eventlog/agent/turns.py MAX_CONTEXT).
const MAX_CONTEXT = 5;

const CANNOT_SEE =
  "It cannot see: other chats (only the owner may ask for scope \"all\"), anything before the log was installed, " +
  "tool outputs, or the contents of files and images. Secrets come back as [REDACTED:<rule>].";

const SEARCH_DESCRIPTION =
  "Search the full history of this Telegram chat: every message the user sent and every reply you sent, kept by " +
  "openclaw-eventlog across sessions, /new and compaction. Use it FIRST whenever the user refers to the past — " +
  "\"remember\", \"earlier\", \"before\", \"yesterday\", \"last week\", \"what did we decide\", \"what was the …\", " +
  "\"did I tell you …\", \"как мы договорились\", \"помнишь\" — instead of guessing or saying you don't know. " +
  "Pass the question or its distinctive words (names, numbers, topics); a relative date in it (\"yesterday\", " +
  "\"last week\", \"вчера\") limits the search to that period. Returns a header and ranked lines " +
  "\"[<event id>] <date and time UTC> <in|out> <sender>: <snippet>\" (in = the user wrote it, out = you sent it); " +
  "the date answers \"when\" questions. When the answer may span turns — the question links two facts, asks what " +
  "happened before or after, or a hit is a short reply (\"yes\", \"that one\") whose meaning is in the turns around " +
  "it — pass context: 2 (1-5) to get each hit with the messages just before and after it, or call eventlog_context " +
  "with one hit's id to read further around it. " + CANNOT_SEE;

const CONTEXT_DESCRIPTION =
  "Read the conversation around one message found by eventlog_search: pass the hit's id (the 26 characters in " +
  "[brackets]). Use it when that hit is only part of the answer: it replies to or refers to something said before " +
  "(\"yes\", \"that one\", \"it\"), the question asks what came before or after it or how it ended, or links it to " +
  "another fact from the same conversation. Returns the messages before and after it in the same chat (up to 20 " +
  "each side, default 5), oldest first, with their dates, the message itself marked '>'. " + CANNOT_SEE;

const SEARCH_PARAMETERS = {
  type: "object",
  additionalProperties: false,
  required: ["query"],
  properties: {
    query: { type: "string", minLength: 1, maxLength: MAX_QUERY_CHARS, description: `Words to look for, e.g. "wifi password" or "договор аренды" (at most ${MAX_QUERY_CHARS} characters).` },
    scope: { type: "string", enum: ["chat", "all"], description: "\"chat\" (default): this chat. \"all\": every chat — owner only; others get this chat." },
    since: { type: "string", description: "Search from the start of: a day 2026-11-30, a time 2026-11-30T18:00:00+03:00 (without an offset: the user's zone), \"yesterday\", \"today\", \"monday\", or \"7d\" (7 days ago)." },
    until: { type: "string", description: "Search up to the end of: the same forms as since (\"yesterday\": through the end of yesterday)." },
    direction: { type: "string", enum: ["in", "out"], description: "\"in\": only what the user sent; \"out\": only what you sent." },
    limit: { type: "integer", minimum: 1, maximum: 50, description: "How many lines (default 10, at most 50)." },
    context: { type: "integer", minimum: 0, maximum: MAX_CONTEXT, description: `Also show this many messages before and after each hit in its chat (default 0, at most ${MAX_CONTEXT}): for answers that span turns.` },
    mode: { type: "string", enum: ["hybrid", "bm25", "text", "fuzzy"], description: "\"hybrid\" (default): ranked by words and meaning; a whole question is fine. \"bm25\": by words only. \"text\": only messages containing the words, any case, also inside longer words (grep-like). \"fuzzy\": text tolerating typos." },
  },
};

const CONTEXT_PARAMETERS = {
  type: "object",
  additionalProperties: false,
  required: ["id"],
  properties: {
    id: { type: "string", description: "A hit's event id from eventlog_search (26 characters, the part in [brackets])." },
    before: { type: "integer", minimum: 0, maximum: 20, description: "Messages before it (default 5)." },
    after: { type: "integer", minimum: 0, maximum: 20, description: "Messages after it (default 5)." },
  },
};

// ---- where the call comes from ------------------------------------------------------------------------------------

function chatFromTarget(to) {
  // deliveryContext.to looks like "telegram:123", "123", "telegram:group:-100…", "-100…:topic:7": the chat is the
  // first signed integer in it. Anything else is not a Telegram chat this log can scope to.
  if (typeof to !== "string") return null;
  const m = /(?:^|:)(-?\d{1,20})(?::|$)/.exec(to);
  return m ? m[1] : null;
}

export function scopeFromContext(ctx, config = {}) {
  const dc = ctx && typeof ctx.deliveryContext === "object" && ctx.deliveryContext ? ctx.deliveryContext : {};
  const channel = typeof dc.channel === "string" ? dc.channel : typeof ctx?.messageChannel === "string" ? ctx.messageChannel : null;
  let chat = null;
  let source = null;
  if (channel === null || channel === "telegram") {
    if (typeof ctx?.nativeChannelId === "string" && /^-?\d{1,20}$/.test(ctx.nativeChannelId)) {
      chat = ctx.nativeChannelId;
      source = "nativeChannelId";
    } else if (chatFromTarget(dc.to)) {
      chat = chatFromTarget(dc.to);
      source = "deliveryContext.to";
    }
  }
  // The account the conversation runs on (a private chat's id is the user's id, the same under each of the gateway's
  // bots): the delivery's account, else the agent's; none means OpenClaw's default account (docs/agent.md, Trust).
  const accountFrom = typeof dc.accountId === "string" && dc.accountId ? "deliveryContext.accountId"
    : typeof ctx?.agentAccountId === "string" && ctx.agentAccountId ? "agentAccountId" : null;
  const account = accountFrom === "deliveryContext.accountId" ? dc.accountId
    : accountFrom === "agentAccountId" ? ctx.agentAccountId : null;
  const requester = ctx?.requesterSenderId != null ? String(ctx.requesterSenderId) : null;
  const allowList = Array.isArray(config.allowAll) ? config.allowAll.map(String) : [];
  const owner = ctx?.senderIsOwner === true;
  const allAllowed = owner || (requester !== null && allowList.includes(requester));
  // scope "all" covers the account's chats; `allScopeAccounts` (a list, or "*" for every account) widens it
  const allAccounts = config.allScopeAccounts === "*" ? "*"
    : Array.isArray(config.allScopeAccounts) ? config.allScopeAccounts.map(String) : undefined;
  return {
    chat, channel: channel ?? "telegram", account, allAccounts, requester, allAllowed,
    origin: { chat_from: source, account_from: accountFrom, channel, sender_is_owner: owner,
      allow_listed: !owner && allAllowed },
  };
}

// ---- running the Python side ---------------------------------------------------------------------------------------

function baseArgs(config, sub) {
  const cmd = Array.isArray(config.command) && config.command.length ? config.command.map(String) : ["eventlog"];
  const args = [...cmd.slice(1), "agent", sub];
  if (typeof config.root === "string" && config.root) args.push("--root", config.root);
  return [cmd[0], args];
}

function callOnce(config, request) {
  const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxOut = config.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  const [bin, args] = baseArgs(config, "call");
  return new Promise((resolve, reject) => {
    let child;
    try {
      child = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"], shell: false, cwd: CHILD_CWD });
    } catch (err) {
      reject(err);
      return;
    }
    const chunks = [];
    let size = 0;
    let stderr = "";
    let settled = false;
    const done = (fn, v) => { if (!settled) { settled = true; clearTimeout(timer); fn(v); } };
    const timer = setTimeout(() => { child.kill("SIGKILL"); done(reject, new Error(`no answer within ${timeoutMs / 1000}s`)); }, timeoutMs);
    child.on("error", (err) => done(reject, err));
    child.stdout.on("data", (b) => {
      size += b.length;
      if (size > maxOut) { child.kill("SIGKILL"); done(reject, new Error("answer larger than the output cap")); return; }
      chunks.push(b);
    });
    child.stderr.on("data", (b) => { if (stderr.length < 4000) stderr += b.toString("utf8"); });
    child.on("close", (code) => {
      if (settled) return;
      try {
        done(resolve, JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch {
        const last = stderr.trim().split("\n").pop() || `exit code ${code}`;
        done(reject, new Error(last.slice(0, 300)));
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(request));
  });
}

class Helper {
  // One `eventlog agent serve` process, started on first use, restarted after it dies or hangs. Requests are answered
  // in order (the server is sequential), so a FIFO of pending calls matches answers to calls; `seq` double-checks.
  constructor(config) {
    this.config = config;
    this.child = null;
    this.pending = [];
    this.buf = "";
    this.seq = 0;
  }

  start() {
    const [bin, args] = baseArgs(this.config, "serve");
    const child = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"], shell: false, cwd: CHILD_CWD });
    this.child = child;
    this.buf = "";
    const maxOut = this.config.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
    child.stdout.on("data", (b) => {
      this.buf += b.toString("utf8");
      if (this.buf.length > maxOut) { this.fail(new Error("answer larger than the output cap")); return; }
      let nl;
      while ((nl = this.buf.indexOf("\n")) >= 0) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        const p = this.pending.shift();
        if (!p) continue;
        clearTimeout(p.timer);
        try {
          const out = JSON.parse(line);
          // A protocol error (a request the helper could not read) may lack its seq: it still answers this call,
          // in order, and the helper stays up (eventlog/agent/protocol.py).
          const protocolError = out?.error_kind === "protocol" && out.seq === undefined;
          if (out.seq !== p.seq && !protocolError) throw new Error("answer out of order");
          p.resolve(out);
        } catch (err) {
          p.reject(err);
          this.fail(err);
        }
      }
    });
    let stderr = "";
    child.stderr.on("data", (b) => { stderr = (stderr + b.toString("utf8")).slice(-2000); });
    child.on("error", (err) => this.fail(err));
    child.on("close", (code) => {
      if (this.child !== child) return;
      const last = stderr.trim().split("\n").pop();
      this.fail(new Error(`the eventlog helper exited (${last ? last.slice(0, 300) : `exit code ${code}`})`));
    });
    child.stdin.on("error", () => {});
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) s?.unref?.();
  }

  fail(err) {
    const child = this.child;
    this.child = null;
    if (child) child.kill("SIGKILL");
    for (const p of this.pending.splice(0)) { clearTimeout(p.timer); p.reject(err); }
  }

  call(request) {
    if (!this.child) this.start();
    const timeoutMs = this.config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    return new Promise((resolve, reject) => {
      const seq = ++this.seq;
      const timer = setTimeout(() => this.fail(new Error(`no answer within ${timeoutMs / 1000}s`)), timeoutMs);
      this.pending.push({ seq, resolve, reject, timer });
      this.child.stdin.write(JSON.stringify({ ...request, seq }) + "\n");
    });
  }
}

// ---- the tools ----------------------------------------------------------------------------------------------------

function dumpContext(ctx, scope) {
  // Diagnostics for measuring what the gateway passes (docs/agent.md): ids and flags only, never message text.
  const path = process.env.EVENTLOG_AGENT_CTX_DUMP;
  if (!path) return;
  const pick = {};
  for (const k of ["nativeChannelId", "requesterSenderId", "senderIsOwner", "sessionKey", "messageChannel",
    "agentAccountId", "chatType", "groupId", "currentChannelId", "inboundEventKind"]) {
    if (ctx?.[k] !== undefined) pick[k] = ctx[k];
  }
  if (ctx?.deliveryContext) pick.deliveryContext = ctx.deliveryContext;
  try {
    appendFileSync(path, JSON.stringify({ keys: Object.keys(ctx ?? {}).sort(), ctx: pick, scope }) + "\n");
  } catch { /* diagnostics only */ }
}

function softFailure(tool, err) {
  const why = String(err?.message ?? err).slice(0, 300);
  return `${tool}: the event log could not be searched right now (${why}). Answer from what you know and tell the ` +
    "user you could not check the history.";
}

function makeTool(name, kind, ctx, config, runner) {
  const scope = scopeFromContext(ctx, config);
  return {
    name,
    label: name === "eventlog_search" ? "Search chat history" : "Read around a message",
    description: name === "eventlog_search" ? SEARCH_DESCRIPTION : CONTEXT_DESCRIPTION,
    parameters: kind === "search" ? SEARCH_PARAMETERS : CONTEXT_PARAMETERS,
    // Outside Tool Search's catalog (the model sees it directly) and without a "Working…" message in the chat.
    catalogMode: "direct-only",
    hideFromChannelProgress: true,
    async execute(_toolCallId, params) {
      const t0 = Date.now();
      dumpContext(ctx, scope);
      const request = {
        tool: kind, args: params && typeof params === "object" ? params : {}, chat: scope.chat,
        channel: scope.channel, all_allowed: scope.allAllowed, requester: scope.requester, t0_ms: t0,
        origin: scope.origin,
      };
      if (scope.account !== null) request.account = scope.account;
      if (scope.allAccounts !== undefined) request.all_accounts = scope.allAccounts;
      let out;
      try {
        out = await runner(request);
      } catch (err) {
        return { content: [{ type: "text", text: softFailure(name, err) }], details: { ok: false } };
      }
      const text = typeof out?.text === "string" ? out.text : softFailure(name, "no text in the answer");
      return {
        content: [{ type: "text", text }],
        details: { ok: out?.ok === true, hits: out?.hits ?? 0, ids: out?.ids ?? [], scope: out?.scope ?? null },
      };
    },
  };
}

export default {
  id: PLUGIN_ID,
  name: "eventlog recall",
  description: "Search the openclaw-eventlog Telegram log from the agent (eventlog_search, eventlog_context).",
  register(api) {
    const config = api.pluginConfig && typeof api.pluginConfig === "object" ? api.pluginConfig : {};
    let runner;
    if (config.helper === false) {
      runner = (req) => callOnce(config, req);
    } else {
      const helper = new Helper(config);
      runner = (req) => helper.call(req);
    }
    api.registerTool((ctx) => makeTool("eventlog_search", "search", ctx, config, runner), { name: "eventlog_search" });
    api.registerTool((ctx) => makeTool("eventlog_context", "context", ctx, config, runner), { name: "eventlog_context" });
  },
};
