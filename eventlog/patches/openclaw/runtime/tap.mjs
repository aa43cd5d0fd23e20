// openclaw-eventlog runtime tap: the only module the patched OpenClaw chunks import.
//
// Two entry points, one per grammY Bot site (see patches/openclaw/manifest.json):
//   tapIngressBot(bot, {accountId})  — ingress bot: inbound middleware (first) + outbound transformer (outermost)
//   tapApi(api, {site, accountId})   — any other Bot's api (the outbound helper bot in send-*.mjs)
// The logic (what is scanned, logged, refused) lives in tap-core.mjs so it can be tested with injected
// scanner/log; this file only wires the defaults from the environment, lazily, once per process.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTap } from "./tap-core.mjs";
import { holdPrefixesOf, holdRulesOf, releaseMsFrom } from "./tap-release.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
let shared = null;

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
}

/** The `tap:start` system event: which tap, on which OpenClaw, with which manifest and rules, in which process.
 * Versions and hashes come from the install record `eventlog patch apply` wrote beside this file. */
export function tapStartEvent({ rulesSha256 = null, rulesVersion = null, here = HERE } = {}) {
  const rec = readJson(join(here, "install.json")) ?? {};
  const pkg = readJson(join(here, "..", "package.json")) ?? {};
  return { event: "tap:start", channel: "system", chat_id: "eventlog", ts: new Date().toISOString(),
    tap_version: rec.tap_version ?? null, openclaw_version: pkg.version ?? rec.openclaw_version ?? null,
    manifest_version: rec.manifest_version ?? null, manifest_sha256: rec.manifest_sha256 ?? null,
    rules_sha256: rulesSha256, rules_version: rulesVersion, pid: process.pid, node_version: process.version };
}

async function buildDefaults() {
  // the writer resolves the root exactly like the Python side ($EVENTLOG_ROOT, $OPENCLAW_STATE_DIR/eventlog, ~)
  const { openEventLog, resolveRoot, threadFromEnv } = await import("./writer.mjs");
  const root = resolveRoot(process.env);
  // the writer runs on the event loop; $EVENTLOG_WRITER_THREAD=1 runs it in its own thread (writer-thread.mjs: the
  // event loop only hands events over; costs 11-15 MB, more in a flood the thread cannot keep up with — docs/patchset.md);
  // a thread that cannot start leaves the writer on the event loop (said on stderr)
  const fsync = process.env.EVENTLOG_FSYNC || undefined;
  const thread = threadFromEnv(process.env);
  let log;
  try {
    log = await openEventLog({ root, fsync, thread });
  } catch (err) {
    if (!thread) throw err;
    process.stderr.write(`openclaw-eventlog: writer thread unavailable, writing on the event loop: ${err?.message ?? err}\n`);
    log = await openEventLog({ root, fsync, thread: false });
  }
  // The scanner is built separately so that a broken rule file leaves the log working: refused calls and
  // the scanner-error alert still get recorded (fail closed, but visibly).
  let scanner = null;
  let scannerError = null;
  let rulesVersion = null;
  let rulesSha256 = null;
  let holdPrefixes = [];
  let holdRules = [];
  try {
    const dlp = await import("./dlp.mjs");
    // rules.json is installed beside this file; $EVENTLOG_DLP_RULES overrides (dlp.defaultRulesPath)
    const rulesPath = dlp.defaultRulesPath();
    rulesSha256 = createHash("sha256").update(readFileSync(rulesPath)).digest("hex");
    const rules = dlp.loadRules(rulesPath);
    rulesVersion = rules.version ?? null;
    holdPrefixes = holdPrefixesOf(rules);
    holdRules = holdRulesOf(rules);
    scanner = dlp.createScanner({ rules, key: dlp.loadKey(root), allowlistPath: join(root, "dlp", "allowlist.json") });
  } catch (err) {
    scannerError = err;
    process.stderr.write(`openclaw-eventlog: DLP scanner unavailable, outbound content calls are refused: ${err?.message ?? err}\n`);
  }
  // The tap announces itself: `eventlog doctor` compares this with the installed tree and the Python rules.
  try {
    await log.append(tapStartEvent({ rulesSha256, rulesVersion }));
  } catch (err) {
    process.stderr.write(`openclaw-eventlog: could not record tap:start: ${err?.message ?? err}\n`);
  }
  return { root, log, scanner, scannerError, rulesVersion, holdPrefixes, holdRules };
}

/** The process-wide tap (one log, one scanner), created on first use. */
export function defaultTap() {
  // $EVENTLOG_PREVIEW_RELEASE_MS: quiet period before a held-back preview tail is released (tap-release.mjs)
  if (!shared) shared = createTap({ deps: buildDefaults(), releaseMs: releaseMsFrom(process.env) });
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
