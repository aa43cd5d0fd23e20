// Durability of the JS writer, observed instead of assumed (issue 15: a dropped fsync is not an equivalent mutant, it
// is unobserved). The writer runs in a child process under strace(1) (`-f`: libuv's thread pool and the writer thread
// included; `-y`: every fd shown with its path) and the trace is checked against writer.mjs's documented contract:
//   always — log and stream files opened O_DSYNC, one write() per line;
//   batch  — opened O_DSYNC, appends queued while a write is in flight go out in one write();
//   never  — no O_DSYNC, no fsync/fdatasync at all ("write() only"; directories not fsynced);
//   and, except under never, every directory the writer creates and every file it creates has its parent directory
//   fsynced — all of it completed before the append is acknowledged (the child prints "ACK <step>" once the promise
//   resolved). A torn tail's repair: the copy fsynced before the day file is truncated, the truncation fsynced.
// strace is required: without it (or when ptrace is not permitted) these tests FAIL, they never skip.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { openEventLog } from "../writer.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const CHILD = join(here, "writer-strace-child.mjs");
const SYSCALLS = "openat,mkdir,mkdirat,fsync,fdatasync,write,pwrite64,writev,pwritev,pwritev2,ftruncate,rename,renameat,renameat2";
const WRITES = new Set(["write", "pwrite64", "writev", "pwritev", "pwritev2"]);

function findStrace() {
  for (const d of ["/usr/bin", ...(process.env.PATH ?? "").split(delimiter)]) {
    if (d && existsSync(join(d, "strace"))) return join(d, "strace");
  }
  return null;
}
const STRACE = findStrace();

/** One entry per completed system call, in completion order: {pid, name, args, ret, i}. Calls interrupted by another
 * thread's ("<unfinished ...>" … "<... name resumed>") are joined and placed where they completed. */
function parseTrace(text) {
  const pending = new Map();
  const out = [];
  for (const raw of text.split("\n")) {
    const m0 = /^(\d+) +(.*)$/.exec(raw);
    if (!m0) continue;
    const [, pid, rest] = m0;
    let line = rest;
    if (line.endsWith("<unfinished ...>")) { pending.set(pid, line.slice(0, -"<unfinished ...>".length)); continue; }
    const r = /^<\.\.\. \w+ resumed>(.*)$/.exec(line);
    if (r) { line = (pending.get(pid) ?? "") + r[1]; pending.delete(pid); }
    const m = /^(\w+)\((.*)\)\s+= (-?\d+)(.*)$/.exec(line);
    if (m) out.push({ pid, name: m[1], args: m[2], ret: Number(m[3]), i: out.length });
  }
  return out;
}

/** Run the child under strace → {calls, acks: [index of "ACK k"'s write], root}. */
function traced(root, fsync, plan, mode = "main") {
  assert.ok(STRACE, "strace(1) is required for the writer durability tests and was not found (install it: apt-get install strace)");
  const out = join(mkdtempSync(join(tmpdir(), "evl-strace-")), "trace");
  const r = spawnSync(STRACE, ["-f", "-qq", "-y", "-s", "32", "-e", `trace=${SYSCALLS}`, "-o", out,
    process.execPath, CHILD, root, fsync, mode, JSON.stringify(plan)], { encoding: "utf8", timeout: 120_000 });
  assert.equal(r.status, 0, `strace/child failed (ptrace not permitted?): ${r.error ?? ""}${r.stderr}`);
  assert.equal(r.stdout, plan.map((_, k) => `ACK ${k}\n`).join(""));
  const calls = parseTrace(readFileSync(out, "utf8"));
  const acks = plan.map((_, k) => {
    const c = calls.find((x) => WRITES.has(x.name) && x.args.includes(`"ACK ${k}\\n"`));
    assert.ok(c, `ACK ${k} not in the trace`);
    return c.i;
  });
  return { calls, acks };
}

const pathOf = (args) => /^\d+<([^>]*)>/.exec(args)?.[1] ?? null; // the fd argument's path (strace -y)
const openedPath = (args) => /^[^,]+, "([^"]*)"/.exec(args)?.[1] ?? null;
const isLog = (p, root) => p !== null && p.startsWith(root + "/") && p.endsWith(".jsonl"); // logs and streams, no locks
const step = (acks, i) => acks.findIndex((a) => i < a); // which step a call belongs to (-1: after the last ACK)

const ev = (ts, text, chat = "42") => ({ event: "message:received", channel: "telegram", chat_id: chat, ts, text });
const PLAN = [
  { op: "append", event: ev("2026-11-29T10:00:00Z", "first of the day: every directory is new") },
  { op: "many", events: [1, 2, 3, 4, 5].map((n) => ev(`2026-11-29T11:00:0${n}Z`, `line ${n}`)) },
  { op: "append", event: ev("2026-11-30T10:00:00Z", "a new day: auto-seal of the 29th and a checkpoint") },
  { op: "stream", rel: "dlp/alerts.jsonl", event: { event: "dlp:alert", channel: "telegram", chat_id: "42",
    ts: "2026-11-30T10:00:01Z", rule: "r" } },
];
const DAY29 = "raw/telegram/chats/42/2026/11/29.jsonl";

/** The fsync contract of always/batch over a trace of PLAN (or any plan): see the header. */
function assertDurable(root, { calls, acks }) {
  const opens = calls.filter((c) => c.name === "openat" && isLog(openedPath(c.args), root) && /O_(RDWR|WRONLY)/.test(c.args));
  assert.ok(opens.length >= 5, `expected the day, seal, checkpoint and alert files opened for writing: ${opens.length}`);
  for (const o of opens) assert.match(o.args, /O_DSYNC/, `opened without O_DSYNC: ${o.args}`);
  const fsyncs = calls.filter((c) => c.name === "fsync" || c.name === "fdatasync");
  const fsyncedAfter = (dir, i) => fsyncs.find((f) => f.i > i && pathOf(f.args) === dir);
  // every directory made under the root, and every log file created, has its parent fsynced before the next ACK
  const made = [
    ...calls.filter((c) => c.name === "mkdir" && c.ret === 0).map((c) => ({ path: /^"([^"]*)"/.exec(c.args)[1], i: c.i }))
      .filter((m) => m.path.startsWith(root + "/")),
    ...opens.filter((c) => /O_CREAT/.test(c.args)).map((c) => ({ path: openedPath(c.args), i: c.i })),
  ];
  assert.ok(made.length >= 10, `directories and files created: ${made.map((m) => m.path).join(" ")}`);
  for (const m of made) {
    const f = fsyncedAfter(dirname(m.path), m.i);
    assert.ok(f, `${m.path} created but ${dirname(m.path)} never fsynced`);
    assert.ok(step(acks, f.i) === step(acks, m.i) && step(acks, f.i) >= 0,
      `${dirname(m.path)} fsynced only after the append that created ${m.path} was acknowledged`);
  }
  // every line written to a log file is written (O_DSYNC: durable when write() returns) before its ACK
  for (const w of calls.filter((c) => WRITES.has(c.name) && isLog(pathOf(c.args), root))) {
    assert.ok(step(acks, w.i) >= 0, `a write to ${pathOf(w.args)} after the last ACK`);
  }
}

const writesTo = ({ calls, acks }, path, k) =>
  calls.filter((c) => WRITES.has(c.name) && pathOf(c.args) === path && step(acks, c.i) === k);

for (const [fsync, mode] of [["always", "main"], ["batch", "main"], ["batch", "thread"]]) {
  test(`fsync ${fsync}${mode === "thread" ? " (writer thread)" : ""}: O_DSYNC files, new directories and files fsynced in their parent, before the ACK`,
    () => {
      const root = join(mkdtempSync(join(tmpdir(), "evl-durable-")), "root");
      const t = traced(root, fsync, PLAN, mode);
      assertDurable(root, t);
      const day = join(root, DAY29);
      // always: each of the 5 lines of appendMany its own write(); batch: the first alone, the 4 queued meanwhile in one
      assert.equal(writesTo(t, day, 1).length, fsync === "always" ? 5 : 2, `writes of step 1 (${fsync})`);
      // the auto-seal record and the checkpoint are written before the new day's append is acknowledged
      assert.equal(writesTo(t, join(root, "seals/telegram/42.jsonl"), 2).length, 1);
      assert.equal(writesTo(t, join(root, "seals/checkpoints.jsonl"), 2).length, 1);
      assert.equal(writesTo(t, join(root, "dlp/alerts.jsonl"), 3).length, 1);
    });
}

test("fsync never: write() only — no O_DSYNC, no fsync or fdatasync of anything, lines written before the ACK", () => {
  const root = join(mkdtempSync(join(tmpdir(), "evl-durable-")), "root");
  const t = traced(root, "never", PLAN);
  const opens = t.calls.filter((c) => c.name === "openat" && isLog(openedPath(c.args), root));
  assert.ok(opens.length >= 5);
  for (const o of opens) assert.doesNotMatch(o.args, /O_DSYNC|O_SYNC/, o.args);
  assert.deepEqual(t.calls.filter((c) => c.name === "fsync" || c.name === "fdatasync").map((c) => c.args), []);
  assert.equal(writesTo(t, join(root, DAY29), 1).length, 2); // grouped as under batch
  assert.equal(writesTo(t, join(root, "seals/telegram/42.jsonl"), 2).length, 1);
});

test("a torn tail's repair: the copy is fsynced before the day file is truncated, the truncation and directory after",
  async () => {
    const root = join(mkdtempSync(join(tmpdir(), "evl-durable-")), "root");
    const pre = await openEventLog({ root, fsync: "batch", thread: false });
    await pre.append(ev("2026-11-29T09:00:00Z", "before the crash"));
    await pre.close();
    const day = join(root, DAY29);
    appendFileSync(day, '{"torn":');
    const t = traced(root, "batch", [PLAN[0]]);
    const copy = t.calls.find((c) => c.name === "openat" && /\.torn-/.test(openedPath(c.args) ?? "") && /O_EXCL/.test(c.args));
    assert.ok(copy, "the torn tail was not copied aside");
    const aside = openedPath(copy.args);
    const syncCopy = t.calls.find((c) => c.name === "fsync" && pathOf(c.args) === aside);
    const trunc = t.calls.find((c) => c.name === "ftruncate" && pathOf(c.args) === day);
    assert.ok(syncCopy && trunc, "copy fsynced and day file truncated");
    assert.ok(t.calls.some((c) => WRITES.has(c.name) && pathOf(c.args) === aside && c.i < syncCopy.i), "copy written before its fsync");
    assert.ok(syncCopy.i < trunc.i, "the day file was truncated before its torn tail's copy was durable");
    const syncDay = t.calls.find((c) => c.name === "fsync" && pathOf(c.args) === day && c.i > trunc.i);
    const syncDir = t.calls.find((c) => c.name === "fsync" && pathOf(c.args) === dirname(day) && c.i > trunc.i);
    assert.ok(syncDay && syncDay.i < t.acks[0], "the truncation fsynced before the ACK");
    assert.ok(syncDir && syncDir.i < t.acks[0], "the directory (new copy) fsynced before the ACK");
    assert.equal(readFileSync(join(dirname(day), aside.split("/").pop()), "utf8"), '{"torn":');
  });

test("checkpoint() on a root without seals/ makes it and fsyncs the root before it returns (batch)", () => {
  const root = join(mkdtempSync(join(tmpdir(), "evl-durable-")), "root");
  const t = traced(root, "batch", [PLAN[3], { op: "checkpoint" }]);
  const made = t.calls.find((c) => c.name === "mkdir" && c.args.startsWith(`"${join(root, "seals")}"`));
  assert.ok(made && made.ret === 0, "seals/ was not made by mkdir");
  const sync = t.calls.find((c) => c.name === "fsync" && pathOf(c.args) === root && c.i > made.i);
  assert.ok(sync && sync.i < t.acks[1], "the root was not fsynced after seals/ was made, before checkpoint() returned");
});
