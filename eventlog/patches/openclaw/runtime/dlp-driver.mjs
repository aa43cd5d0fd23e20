// Line-oriented driver for the JS DLP engine, used by the Python conformance test and the benchmark (not by the tap).
//   node dlp-driver.mjs --key-hex HEX [--rules PATH] [--allowlist PATH] [--allowlist-check-ms N] [--bench]
// stdin: JSON Lines {"id", "text", "html"?, "preview"?}; stdout: one line per input
//   {"id", "findings": [...], "holdBack", "filter": {"text", "action", "held"}}
// With --bench: {"id", "ns": [per-repeat nanoseconds], "cpu_us": [per-repeat CPU microseconds]} after --repeat N scans
// of each text (default 1).
import { createInterface } from "node:readline";
import { createScanner, loadRules } from "./dlp.mjs";

const args = process.argv.slice(2);
const opt = (name, dflt = null) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const scanner = createScanner({
  rules: loadRules(opt("--rules") ?? undefined),
  key: Buffer.from(opt("--key-hex", "2a".repeat(32)), "hex"),
  allowlistPath: opt("--allowlist"),
  allowlistCheckMs: Number(opt("--allowlist-check-ms", "1000")),
});
const bench = args.includes("--bench");
const repeat = Number(opt("--repeat", "1"));

const out = [];
const flush = () => { if (out.length) { process.stdout.write(out.join("")); out.length = 0; } };
const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  const m = JSON.parse(line);
  const o = { html: !!m.html, preview: !!m.preview };
  if (bench) {
    const ns = [], cpu = [];
    for (let i = 0; i < repeat; i++) {
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      scanner.scan(m.text, o);
      ns.push(Number(process.hrtime.bigint() - t0));
      const c = process.cpuUsage(c0);
      cpu.push(c.user + c.system);
    }
    out.push(JSON.stringify({ id: m.id, ns, cpu_us: cpu }) + "\n");
  } else {
    const r = scanner.scan(m.text, o);
    const f = scanner.filter(m.text, o);
    out.push(JSON.stringify({ id: m.id, findings: r.findings, holdBack: r.holdBack,
      filter: { text: f.text, action: f.action, held: f.held } }) + "\n");
  }
  if (out.length >= 256 || m.flush) flush();
}
flush();
