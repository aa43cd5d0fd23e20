// Shared by the tap tests: OpenClaw's own grammY (from the installed package), a loopback Bot API that records
// every request body, a tap wired to the real writer and the real DLP engine under a temp log root.
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { createTap } from "../tap-core.mjs";
import { openEventLog } from "../writer.mjs";
import { createScanner, loadKey, loadRules } from "../dlp.mjs";

export const OPENCLAW_DIR = process.env.EVENTLOG_OPENCLAW_DIR
  // else ask the toolchain module (the one place that names the pinned release)
  || execFileSync("python3", ["-m", "eventlog.toolchain", "get", "OPENCLAW_DIR"],
    { cwd: join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..", ".."), encoding: "utf8" }).trim();

/** grammY exactly as OpenClaw resolves it. A missing install fails loudly (run `make openclaw`). */
export function grammy() {
  const req = createRequire(join(OPENCLAW_DIR, "package.json"));
  return req("grammy");
}

export const TOKEN = "7000001:AAtaptesttokentaptesttokentaptest12";

/** A loopback Bot API: POST /bot<token>/<method> with JSON → ok + a fresh message_id. */
export async function fakeTelegram() {
  const requests = [];
  let nextId = 100;
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const method = req.url.split("/").pop();
      let json = {};
      try { json = JSON.parse(body || "{}"); } catch { json = { _raw: body }; }
      requests.push({ method, body: json, raw: body });
      let result = true;
      const me = { id: 7000001, is_bot: true, first_name: "T", username: "tap_test_bot" };
      if (method.startsWith("send") && method !== "sendChatAction") {
        // a sent message names its sender, the bot, as Telegram's do
        result = method === "sendMediaGroup"
          ? (json.media || []).map(() => ({ message_id: nextId++, from: me, chat: { id: Number(json.chat_id) }, date: 0 }))
          : { message_id: nextId++, from: me, chat: { id: Number(json.chat_id) }, date: 0, text: json.text };
      } else if (method === "getMe") {
        result = me;
      }
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ ok: true, result }));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, requests, close: () => new Promise((r) => server.close(r)) };
}

export function tempRoot() {
  return mkdtempSync(join(tmpdir(), "tap-test-"));
}

export async function realDeps(root, { scanner } = {}) {
  const log = await openEventLog({ root, fsync: "never" });
  const rules = loadRules();
  return { root, log, rulesVersion: rules.version,
    scanner: scanner ?? createScanner({ rules, key: loadKey(root), allowlistPath: join(root, "dlp", "allowlist.json") }) };
}

/** No shipped rule blocks since issue 25 (private-key redacts the whole block); an operator's rule file may, so the
 *  block path is exercised with a scanner whose private-key rule blocks. */
export function blockingScanner() {
  const rules = loadRules();
  return createScanner({ key: Buffer.alloc(32, 7),
    rules: { ...rules, rules: rules.rules.map((r) => (r.id === "private-key" ? { ...r, action: "block" } : r)) } });
}

/** A grammY Bot against the fake, with a pass-through "throttler" installed first (as OpenClaw does) that records
 * the payload it receives: proof that our transformer, installed last, runs first. */
export function botWithTap(tg, tap, { site = "ingress", accountId = "default" } = {}) {
  const { Bot } = grammy();
  const bot = new Bot(TOKEN, { client: { apiRoot: tg.url }, botInfo: { id: 7000001, is_bot: true, first_name: "T",
    username: "tap_test_bot", can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: true } });
  const inner = [];
  bot.api.config.use((prev, method, payload, signal) => {
    inner.push({ method, payload: JSON.parse(JSON.stringify(payload ?? {})) });
    return prev(method, payload, signal);
  });
  bot.api.config.use(tap.transformer({ site, accountId }));
  bot.use(tap.middleware({ accountId }));
  return { bot, inner };
}

/** Every line of every *.jsonl under root, parsed. */
export function readAll(root, sub = "") {
  const out = [];
  const walk = (d) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (n.endsWith(".jsonl")) for (const l of readFileSync(p, "utf8").split("\n")) if (l) out.push(JSON.parse(l));
    }
  };
  walk(join(root, sub));
  return out;
}

/** Every byte under root as one string (to prove a secret is nowhere on disk). */
export function allBytes(root) {
  let s = "";
  const walk = (d) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else s += readFileSync(p, "latin1") + "\n";
    }
  };
  walk(root);
  return s;
}

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
export function rand(n, alphabet = ALNUM) {
  const b = randomBytes(n);
  let s = "";
  for (let i = 0; i < n; i++) s += alphabet[b[i] % alphabet.length];
  return s;
}

/** A fake-format Anthropic key generated at run time (never stored). */
export function plantedKey() {
  return `sk-ant-api03-${rand(80)}-${rand(12)}AA`;
}

/** Any 12-character piece of the secret in the haystack? */
export function leaksPiece(haystack, secret, n = 12) {
  for (let i = 0; i + n <= secret.length; i++) if (haystack.includes(secret.slice(i, i + n))) return secret.slice(i, i + n);
  return null;
}

/** setTimeout/clearTimeout that only run when the test says so. */
export function fakeTimers() {
  const q = new Map();
  let id = 0;
  const t = {
    unrefs: 0,
    setTimeout(fn, ms) {
      const h = { id: ++id, fn, ms, unref() { t.unrefs++; return h; } };
      q.set(h.id, h);
      return h;
    },
    clearTimeout(h) { if (h) q.delete(h.id); },
    get pending() { return [...q.values()]; },
    fire() { const all = [...q.values()]; q.clear(); for (const h of all) h.fn(); return all.length; },
  };
  return t;
}

export { createTap };
