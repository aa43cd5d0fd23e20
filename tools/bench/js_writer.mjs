// Benchmark of the JS writer (eventlog/patches/openclaw/runtime/writer.mjs) as the gateway uses it, beside baselines in the
// same run:
//   * append latency per event (one await at a time, like one Telegram update) per fsync policy, p50/p99;
//   * throughput with 64 appends in flight (a burst of updates: group commit shares one write + fsync);
//   * how long the event loop was blocked meanwhile (perf_hooks event-loop delay, p99/max): the writer's I/O runs
//     on libuv's thread pool, so the loop should stay free even under fsync;
//   * baselines: JSON.stringify + fs.appendFileSync on one path (what a naive tap would do; blocks the loop), and
//     JSON.stringify + write() on one open handle (+ fsync for `always`) — no lock, no chain, no validation.
// Usage: node tools/bench/js_writer.mjs [--n 2000] [--repeats 3] [--json]   (run it with Node 26)
import { appendFileSync, fsyncSync, mkdtempSync, openSync, closeSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { openEventLog } from "../../eventlog/patches/openclaw/runtime/writer.mjs";

const args = process.argv.slice(2);
const N = Number(args[args.indexOf("--n") + 1] || 0) || 2000;
const asJson = args.includes("--json");
const base = mkdtempSync(join(tmpdir(), "bench-js-writer-"));

function makeEvent(i) {
  return { event: "message:received", channel: "telegram", chat_id: "-1001234567890", ts: new Date().toISOString(),
    direction: "in", update_id: 900000 + i, message_id: 1000 + i, from: { id: 123456789, username: "ivan", name: "Иван" },
    text: `Сообщение номер ${i}: please review the contract draft before Friday 👋 `.repeat(3),
    raw: { update_id: 900000 + i, message: { message_id: 1000 + i, chat: { id: -1001234567890, type: "supergroup" } } } };
}

const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

async function measure(name, n, appendOne, { concurrency = 1 } = {}) {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  const lat = [];
  const t0 = performance.now();
  if (concurrency === 1) {
    for (let i = 0; i < n; i++) {
      const s = performance.now();
      await appendOne(makeEvent(i));
      lat.push(performance.now() - s);
      // Let the loop turn between events (as between two Telegram updates) so the delay monitor samples it: a
      // synchronous baseline then shows its blocking as loop delay instead of hiding it in one long microtask run.
      await new Promise((r) => setImmediate(r));
    }
  } else {
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const i = next++;
        const s = performance.now();
        await appendOne(makeEvent(i));
        lat.push(performance.now() - s);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  }
  const wall = (performance.now() - t0) / 1000;
  h.disable();
  return { name, n, concurrency, events_per_s: Math.round(n / wall), p50_ms: +pct(lat, 0.5).toFixed(4),
    p99_ms: +pct(lat, 0.99).toFixed(4), loop_delay_p99_ms: +(h.percentile(99) / 1e6).toFixed(3),
    loop_delay_max_ms: +(h.max / 1e6).toFixed(3) };
}

async function writerCase(policy, concurrency) {
  const log = await openEventLog({ root: mkdtempSync(join(base, `w-${policy}-`)), fsync: policy });
  // fsync-per-event cases are ~100x slower: fewer events keep the run short without changing the per-event cost.
  const n = policy === "never" ? N : Math.max(200, Math.floor(N / 5));
  return measure(`writer fsync=${policy}`, n, (e) => log.append(e), { concurrency });
}

async function baselineCase(kind, fsync, concurrency = 1) {
  const dir = mkdtempSync(join(base, "b-"));
  const n = fsync ? Math.max(200, Math.floor(N / 5)) : N;
  if (kind === "appendFileSync") {
    const fd = openSync(join(dir, "sync.jsonl"), "a");
    const r = await measure(`baseline appendFileSync${fsync ? "+fsync" : ""}`, n, async (e) => {
      appendFileSync(fd, JSON.stringify(e) + "\n");
      if (fsync) fsyncSync(fd);
    });
    closeSync(fd);
    return r;
  }
  const fh = await open(join(dir, "async.jsonl"), "a");
  const r = await measure(`baseline fh.write${fsync ? "+sync" : ""}`, n, async (e) => {
    await fh.write(JSON.stringify(e) + "\n");
    if (fsync) await fh.sync();
  }, { concurrency });
  await fh.close();
  return r;
}

// Each case runs REPEATS times, interleaved with the others (disk and CPU noise on a shared machine hit all cases
// alike); the run with the median throughput is reported.
const REPEATS = Number(args[args.indexOf("--repeats") + 1] || 0) || 3;
const cases = [["idle (loop noise floor)", () => measure("idle (loop noise floor)", N, async () => {})]];
for (const concurrency of [1, 64]) {
  for (const policy of ["never", "batch", "always"]) cases.push([`w${policy}${concurrency}`, () => writerCase(policy, concurrency)]);
}
for (const fsync of [false, true]) {
  cases.push([`a${fsync}`, () => baselineCase("appendFileSync", fsync)], [`f${fsync}1`, () => baselineCase("fh.write", fsync)],
    [`f${fsync}64`, () => baselineCase("fh.write", fsync, 64)]);
}
const runs = new Map(cases.map(([k]) => [k, []]));
for (let r = 0; r < REPEATS; r++) for (const [k, fn] of cases) runs.get(k).push(await fn());
const rows = cases.map(([k]) => {
  const sorted = runs.get(k).sort((a, b) => a.events_per_s - b.events_per_s);
  return sorted[Math.floor(sorted.length / 2)];
});
const get = (n, c) => rows.find((r) => r.name === n && r.concurrency === c).events_per_s;
const ratios = {
  "writer never / fh.write (1 in flight)": get("writer fsync=never", 1) / get("baseline fh.write", 1),
  "writer never / appendFileSync (1 in flight)": get("writer fsync=never", 1) / get("baseline appendFileSync", 1),
  "writer always / fh.write+sync (1 in flight)": get("writer fsync=always", 1) / get("baseline fh.write+sync", 1),
  "writer batch / writer always (64 in flight)": get("writer fsync=batch", 64) / get("writer fsync=always", 64),
  "writer batch / fh.write+sync (64 in flight)": get("writer fsync=batch", 64) / get("baseline fh.write+sync", 64),
};
const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
rmSync(base, { recursive: true, force: true });
if (asJson) {
  for (const r of rows) console.log(JSON.stringify({ type: "case", ...r }));
  console.log(JSON.stringify({ type: "summary", ratios, peak_rss_mb: peakRssMb, node: process.version }));
} else {
  console.log(`JS writer benchmark (node ${process.version}, N=${N}, fsync cases N/5; median of ${REPEATS} interleaved runs)`);
  console.log("case".padEnd(34) + "in-flight".padStart(10) + "ev/s".padStart(10) + "p50 ms".padStart(10) +
    "p99 ms".padStart(10) + "loop p99".padStart(10) + "loop max".padStart(10));
  for (const r of rows) {
    console.log(r.name.padEnd(34) + String(r.concurrency).padStart(10) + String(r.events_per_s).padStart(10) +
      String(r.p50_ms).padStart(10) + String(r.p99_ms).padStart(10) + String(r.loop_delay_p99_ms).padStart(10) +
      String(r.loop_delay_max_ms).padStart(10));
  }
  for (const [k, v] of Object.entries(ratios)) console.log(`ratio ${k}: ${v.toFixed(2)}`);
  console.log(`peak RSS ${peakRssMb} MB`);
}
