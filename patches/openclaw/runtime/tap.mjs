// openclaw-eventlog runtime tap: the only module the patched OpenClaw chunks import.
//
// Two entry points, one per grammY Bot site (see patches/openclaw/manifest.json):
//   tapIngressBot(bot, {accountId})  — ingress bot: inbound middleware (first) + outbound transformer (outermost)
//   tapApi(api, {site, accountId})   — any other Bot's api (the outbound helper bot in send-*.mjs)
// The logic (what is scanned, logged, refused) lives in tap-core.mjs so it can be tested with injected
// scanner/log; this file only wires the defaults from the environment, lazily, once per process.
import { readFileSync } from "node:fs";
import { createTap } from "./tap-core.mjs";
import { resolveRoot } from "./tap-env.mjs";

let shared = null;

async function buildDefaults() {
  const root = resolveRoot(process.env);
  const { openEventLog } = await import("./writer.mjs");
  const log = await openEventLog({ root, fsync: process.env.EVENTLOG_FSYNC || undefined });
  // The scanner is built separately so that a broken rule file leaves the log working: refused calls and
  // the scanner-error alert still get recorded (fail closed, but visibly).
  let scanner = null;
  let scannerError = null;
  try {
    const dlp = await import("./dlp.mjs");
    const rules = JSON.parse(readFileSync(new URL("./rules.json", import.meta.url), "utf8"));
    const opts = { rules, root };
    if (typeof dlp.loadKey === "function") opts.key = await dlp.loadKey(root);
    if (typeof dlp.allowlistPath === "function") opts.allowlistPath = dlp.allowlistPath(root);
    scanner = await dlp.createScanner(opts);
  } catch (err) {
    scannerError = err;
  }
  return { root, log, scanner, scannerError };
}

/** The process-wide tap (one log, one scanner), created on first use. */
export function defaultTap() {
  if (!shared) shared = createTap({ deps: buildDefaults() });
  return shared;
}

/** Ingress bot: our middleware must be the first bot.use and our transformer the last api.config.use. */
export function tapIngressBot(bot, { accountId } = {}) {
  const tap = defaultTap();
  bot.api.config.use(tap.transformer({ site: "ingress", accountId }));
  bot.use(tap.middleware({ accountId }));
  return bot;
}

/** Any other grammY Api: install last so it runs first (grammY runs the last installed transformer outermost). */
export function tapApi(api, { site = "send", accountId } = {}) {
  api.config.use(defaultTap().transformer({ site, accountId }));
  return api;
}
