// Tap overhead per outbound Bot API call, in-process, side by side in one run:
//   baseline  — OpenClaw's grammY Bot with the unpatched transformer chain (a pass-through standing in for the
//               account throttler, whose rate limits would dominate) and a canned-response fetch (no network);
//   patched   — the same plus our transformer (real DLP engine, real writer) installed last, for each fsync policy.
// Interleaved in rounds so drift hits both sides alike. Prints one JSON line per case: p50/p99 per call (µs),
// the added p50/p99 over the baseline and event-loop delay p99 while the case ran. Peak RSS is per case for real: each
// case runs once more alone in a child process (--only NAME), which reports its own peak (tap-overhead-memory lines).
// Cadence: by default a flood (--interval-ms 0: calls back to back, so each one also competes with the previous
// calls' log appends in flight); --interval-ms 20 paces them like preview edits (on this VM that adds cold-CPU noise
// to both sides).
//   node tools/bench/tap_overhead.mjs [--calls 3000] [--rounds 5] [--interval-ms 0]
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { mkdtempSync, rmSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { randomBytes } from "node:crypto";
import { createTap } from "../../eventlog/patches/openclaw/runtime/tap-core.mjs";
import { openEventLog } from "../../eventlog/patches/openclaw/runtime/writer.mjs";
import { createScanner, loadKey, loadRules } from "../../eventlog/patches/openclaw/runtime/dlp.mjs";

const args = process.argv.slice(2);
const opt = (n, d) => { const i = args.indexOf(n); return i >= 0 ? Number(args[i + 1]) : d; };
const CALLS = opt("--calls", 3000);
const ROUNDS = opt("--rounds", 5);
const INTERVAL = opt("--interval-ms", 0);
const ONLY = args.includes("--only") ? args[args.indexOf("--only") + 1] : null;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const OPENCLAW_DIR = process.env.EVENTLOG_OPENCLAW_DIR
  // else ask the toolchain module (the one place that names the pinned release)
  || execFileSync("python3", ["-m", "eventlog.toolchain", "get", "OPENCLAW_DIR"],
    { cwd: join(dirname(fileURLToPath(import.meta.url)), "..", ".."), encoding: "utf8" }).trim();
const { Bot } = createRequire(join(OPENCLAW_DIR, "package.json"))("grammy");

// Realistic outbound traffic: HTML replies of 80–2,000 chars, English and Russian, 1 in 20 with a key,
// and streaming-preview edits.
const WORDS = ("the reply was sent to the chat and the model answered quickly with a summary of the document " +
  "привет это ответ модели на вопрос пользователя о договоре и счёте <b>важно</b> <code>npm install</code>").split(" ");
function text(i) {
  const n = 10 + ((i * 7919) % 300);
  let s = "";
  for (let k = 0; k < n; k++) s += WORDS[(i + k * 31) % WORDS.length] + " ";
  if (i % 20 === 0) s += ` key sk-ant-api03-${randomBytes(72).toString("base64url").slice(0, 93)}AA`;
  return s;
}
const CHATS = [111111, 222222, 333333, 444444];

function makeBot(tap) {
  let n = 1;
  const fetch = async () => new Response(JSON.stringify({ ok: true, result: { message_id: n++, date: 0,
    chat: { id: 1, type: "private" } } }), { headers: { "content-type": "application/json" } });
  const bot = new Bot("7000001:AAbenchbenchbenchbenchbenchbenchbe1", { client: { fetch, apiRoot: "http://127.0.0.1:9" } });
  bot.api.config.use((prev, method, payload, signal) => prev(method, payload, signal)); // the throttler's place
  if (tap) bot.api.config.use(tap.transformer({ site: "send", accountId: "default" }));
  return bot;
}

async function runCase(bot, offset) {
  const t = new Float64Array(CALLS);
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  for (let i = 0; i < CALLS; i++) {
    const k = offset + i;
    const chat = CHATS[k % CHATS.length];
    const t0 = process.hrtime.bigint();
    if (k % 3 === 2) await bot.api.editMessageText(chat, 5, text(k), { parse_mode: "HTML" });
    else await bot.api.sendMessage(chat, text(k), { parse_mode: "HTML" });
    t[i] = Number(process.hrtime.bigint() - t0) / 1000;
    if (INTERVAL) await sleep(INTERVAL);
  }
  h.disable();
  return { t, loopP99: h.percentile(99) / 1e6 };
}

const pct = (a, p) => { const s = Float64Array.from(a).sort(); return s[Math.min(s.length - 1, Math.floor(p / 100 * s.length))]; };

const roots = [];
async function patchedBot(fsync) {
  const root = mkdtempSync(join(tmpdir(), "tap-bench-"));
  roots.push(root);
  const rules = loadRules();
  const deps = { root, log: await openEventLog({ root, fsync }), rulesVersion: rules.version,
    scanner: createScanner({ rules, key: loadKey(root) }) };
  return makeBot(createTap({ deps, stderr: () => {} }));
}

// Decomposition only (not a configuration anyone runs): the tap with a log that keeps nothing, to separate the
// DLP + transformer cost from the writer's disk path.
function scanOnlyBot() {
  const rules = loadRules();
  const root = mkdtempSync(join(tmpdir(), "tap-bench-"));
  roots.push(root);
  const log = { append: async () => {}, appendStream: async () => {} };
  return makeBot(createTap({ deps: { root, log, rulesVersion: rules.version,
    scanner: createScanner({ rules, key: loadKey(root) }) }, stderr: () => {} }));
}

const makers = { baseline: async () => makeBot(null), "tap, no log I/O (decomposition)": async () => scanOnlyBot(),
  "patched fsync=never": () => patchedBot("never"), "patched fsync=batch": () => patchedBot("batch") };
if (ONLY !== null) {
  // one case alone in this process: its peak RSS is the case's own (warm-up plus the same calls as one round each)
  if (!(ONLY in makers)) throw new Error(`--only: unknown case ${ONLY}`);
  const bot = await makers[ONLY]();
  await runCase(bot, 0);
  for (let r = 0; r < ROUNDS; r++) await runCase(bot, (r + 1) * CALLS);
  console.log(JSON.stringify({ bench: "tap-overhead-memory", case: ONLY, calls: CALLS * (ROUNDS + 1),
    peak_rss_mb: +(process.resourceUsage().maxRSS / 1024).toFixed(0) }));
  for (const r of roots) rmSync(r, { recursive: true, force: true });
  process.exit(0);
}
const cases = {};
for (const [name, make] of Object.entries(makers)) cases[name] = await make();
const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, { t: [], loop: [], rounds: [] }]));
for (const bot of Object.values(cases)) await runCase(bot, 0); // warm-up: JIT, first files
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, bot] of Object.entries(cases)) {
    const { t, loopP99 } = await runCase(bot, (r + 1) * CALLS);
    samples[name].t.push(...t);
    samples[name].loop.push(loopP99);
    samples[name].rounds.push({ p50: pct(t, 50), p99: pct(t, 99) });
  }
}
const base = samples.baseline.t;
const b50 = pct(base, 50), b99 = pct(base, 99);
for (const [name, s] of Object.entries(samples)) {
  const p50 = pct(s.t, 50), p99 = pct(s.t, 99);
  console.log(JSON.stringify({ bench: "tap-overhead", case: name, interval_ms: INTERVAL, calls: s.t.length, p50_us: +p50.toFixed(1),
    p99_us: +p99.toFixed(1), added_p50_us: +(p50 - b50).toFixed(1), added_p99_us: +(p99 - b99).toFixed(1),
    ratio_p50: +(p50 / b50).toFixed(2), ratio_p99: +(p99 / b99).toFixed(2),
    event_loop_delay_p99_ms: +Math.max(...s.loop).toFixed(2) }));
}
// Per round, each case's p99 minus the baseline's p99 of the same round; the median over rounds (a burst of load from
// other jobs spoils a round, not the result).
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
for (const [name, s] of Object.entries(samples)) {
  const added = (k) => median(s.rounds.map((r, i) => r[k] - samples.baseline.rounds[i][k]));
  console.log(JSON.stringify({ bench: "tap-overhead-rounds", case: name, rounds: s.rounds.length,
    added_p50_us_median: +added("p50").toFixed(1), added_p99_us_median: +added("p99").toFixed(1),
    added_p99_us_by_round: s.rounds.map((r, i) => +(r.p99 - samples.baseline.rounds[i].p99).toFixed(1)) }));
}
for (const r of roots) rmSync(r, { recursive: true, force: true });
// peak RSS per case: each case alone in a child process (the interleaved process above holds all four at once)
for (const name of Object.keys(makers)) {
  process.stdout.write(execFileSync(process.execPath, [fileURLToPath(import.meta.url), "--only", name,
    "--calls", String(CALLS), "--rounds", String(ROUNDS), "--interval-ms", String(INTERVAL)], { encoding: "utf8" }));
}
