// openclaw-eventlog runtime tap: the only module the patched OpenClaw chunks import.
//
// Two entry points, one per grammY Bot site (see patches/openclaw/manifest.json):
//   tapIngressBot(bot, {accountId})  — ingress bot: inbound middleware (first) + outbound transformer (outermost)
//   tapApi(api, {site, accountId})   — any other Bot's api (the outbound helper bot in send-*.mjs)
// The logic (what is scanned, logged, refused) lives in tap-core.mjs so it can be tested with injected
// scanner/log; this file only wires the defaults from the environment, lazily, once per process.
import { join } from "node:path";
import { createTap } from "./tap-core.mjs";

let shared = null;

async function buildDefaults() {
  // the writer resolves the root exactly like the Python side ($EVENTLOG_ROOT, $OPENCLAW_STATE_DIR/eventlog, ~)
  const { openEventLog, resolveRoot } = await import("./writer.mjs");
  const root = resolveRoot(process.env);
  const log = await openEventLog({ root, fsync: process.env.EVENTLOG_FSYNC || undefined });
  // The scanner is built separately so that a broken rule file leaves the log working: refused calls and
  // the scanner-error alert still get recorded (fail closed, but visibly).
  let scanner = null;
  let scannerError = null;
  let rulesVersion = null;
  try {
    const dlp = await import("./dlp.mjs");
    // rules.json is installed beside this file; $EVENTLOG_DLP_RULES overrides (dlp.defaultRulesPath)
    const rules = dlp.loadRules();
    rulesVersion = rules.version ?? null;
    scanner = dlp.createScanner({ rules, key: dlp.loadKey(root), allowlistPath: join(root, "dlp", "allowlist.json") });
  } catch (err) {
    scannerError = err;
    process.stderr.write(`openclaw-eventlog: DLP scanner unavailable, outbound content calls are refused: ${err?.message ?? err}\n`);
  }
  return { root, log, scanner, scannerError, rulesVersion };
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
