// Checkpoints of the JS writer (writer-head.mjs; docs/log-format.md, "Head"): the folded state it keeps between
// checkpoints must always equal a fold of the whole file as it is on disk — after growth by either language, after
// the file was replaced or truncated, after an in-place edit — and every checkpoint must record exactly the covered
// streams that changed (DLP alert growth included).
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openEventLog } from "../writer.mjs";
import { CHECKPOINTS, checkpoint, folded } from "../writer-head.mjs";
import { chainHash } from "../writer-commit.mjs";

const tmp = () => mkdtempSync(join(tmpdir(), "writer-head-test-"));
const lines = (p) => readFileSync(p).toString("utf8").split("\n").slice(0, -1);
const ev = (chat, day, text) => ({ event: "message:received", channel: "telegram", chat_id: chat,
  ts: `2026-11-${day}T10:00:00.000Z`, text });
const alert = (n) => ({ event: "dlp:alert", channel: "telegram", chat_id: "7", ts: "2026-11-30T10:00:00.000Z",
  rule: "test", n });

/** The reference: fold every line of the checkpoint file from the start (independent of the writer's cache). */
function foldAll(root) {
  const state = new Map();
  let text;
  try { text = readFileSync(join(root, CHECKPOINTS), "utf8"); } catch { return state; }
  for (const line of text.split("\n").slice(0, -1)) {
    let rec;
    try { rec = JSON.parse(line); } catch { continue; }
    if (rec?.event !== "log:checkpoint") continue;
    for (const [rel, s] of Object.entries(rec.streams)) state.set(rel, s);
  }
  return state;
}

/** {lines, bytes, last} of a stream as it is on disk. */
function streamNow(root, rel) {
  const ls = lines(join(root, rel));
  return { lines: ls.length, bytes: statSync(join(root, rel)).size, last: chainHash(ls.at(-1)) };
}

test("the cached fold equals a fold of the whole file through growth, replacement, truncation and in-place edits",
  async () => {
    const root = tmp();
    const log = await openEventLog({ root, fsync: "never" });
    // three chats over three days: each new day auto-seals the chat's earlier days and appends a checkpoint
    for (const day of ["28", "29", "30"]) {
      for (const chat of ["1", "2", "3"]) await log.append(ev(chat, day, `day ${day} chat ${chat}`));
    }
    assert.ok(lines(join(root, CHECKPOINTS)).length >= 2);
    assert.deepEqual(await folded(root), foldAll(root));
    // growth: alerts, then a checkpoint, read incrementally
    await log.appendStream("dlp/alerts.jsonl", [alert(1), alert(2)]);
    await checkpoint(log);
    assert.deepEqual(await folded(root), foldAll(root));
    assert.deepEqual((await folded(root)).get("dlp/alerts.jsonl"), streamNow(root, "dlp/alerts.jsonl"));
    // growth by someone else (another process, the Python CLI): a foreign record appended to the file
    const extra = { event: "log:checkpoint", channel: "system", chat_id: "eventlog", ts: "2026-11-30T11:00:00.000Z",
      streams: { "dlp/reviews.jsonl": { lines: 1, bytes: 10, last: "a".repeat(64) } } };
    appendFileSync(join(root, CHECKPOINTS), JSON.stringify(extra) + "\n");
    assert.deepEqual(await folded(root), foldAll(root));
    // replaced by a shorter file (truncated to its first line): folded again from the start
    const first = lines(join(root, CHECKPOINTS))[0];
    writeFileSync(join(root, CHECKPOINTS), first + "\n");
    assert.deepEqual(await folded(root), foldAll(root));
    // edited in place, same size: the cached last line no longer matches, folded again
    const all = readFileSync(join(root, CHECKPOINTS), "utf8");
    const edited = all.replace(/"lines":(\d)/, (_, d) => `"lines":${(Number(d) + 1) % 10}`);
    assert.equal(edited.length, all.length);
    assert.notEqual(edited, all);
    writeFileSync(join(root, CHECKPOINTS), edited);
    assert.deepEqual(await folded(root), foldAll(root));
    // a torn tail is not part of the file yet; once completed it is folded
    appendFileSync(join(root, CHECKPOINTS), JSON.stringify(extra).slice(0, 30));
    assert.deepEqual(await folded(root), foldAll(root));
    appendFileSync(join(root, CHECKPOINTS), JSON.stringify(extra).slice(30) + "\n");
    assert.deepEqual(await folded(root), foldAll(root));
    await log.close();
  });

test("a checkpoint records exactly the covered streams that changed, alerts included, and nothing when none did",
  async () => {
    const root = tmp();
    const log = await openEventLog({ root, fsync: "never" });
    await log.append(ev("5", "29", "a"));
    await log.append(ev("5", "30", "b")); // seals the 29th: first checkpoint
    const n0 = lines(join(root, CHECKPOINTS)).length;
    await checkpoint(log); // nothing changed
    assert.equal(lines(join(root, CHECKPOINTS)).length, n0);
    await log.appendStream("dlp/alerts.jsonl", alert(1));
    await checkpoint(log);
    let cps = lines(join(root, CHECKPOINTS)).map((l) => JSON.parse(l));
    assert.equal(cps.length, n0 + 1);
    assert.deepEqual(Object.keys(cps.at(-1).streams), ["dlp/alerts.jsonl"]);
    assert.deepEqual(cps.at(-1).streams["dlp/alerts.jsonl"], streamNow(root, "dlp/alerts.jsonl"));
    // the alert stream grows again (a long stream: its last known line is found by reading backwards)
    await log.appendStream("dlp/alerts.jsonl", Array.from({ length: 300 }, (_, i) => alert(i + 2)));
    await checkpoint(log);
    cps = lines(join(root, CHECKPOINTS)).map((l) => JSON.parse(l));
    assert.deepEqual(cps.at(-1).streams, { "dlp/alerts.jsonl": streamNow(root, "dlp/alerts.jsonl") });
    // a stream that lost its last line since the last checkpoint is recounted from the start, not extended
    const alerts = lines(join(root, "dlp/alerts.jsonl"));
    writeFileSync(join(root, "dlp/alerts.jsonl"), alerts.slice(0, -2).join("\n") + "\n" + alerts.at(-1) + "\n");
    await checkpoint(log);
    cps = lines(join(root, CHECKPOINTS)).map((l) => JSON.parse(l));
    assert.deepEqual(cps.at(-1).streams, { "dlp/alerts.jsonl": streamNow(root, "dlp/alerts.jsonl") });
    // ... and so is one rewritten to something longer whose known prefix no longer ends in the known last line
    const now = lines(join(root, "dlp/alerts.jsonl"));
    const longer = now.at(-1).replace('"rule":"test"', '"rule":"test-with-a-much-longer-rule-name"');
    writeFileSync(join(root, "dlp/alerts.jsonl"), [...now.slice(0, -1), longer, longer].join("\n") + "\n");
    await checkpoint(log);
    cps = lines(join(root, CHECKPOINTS)).map((l) => JSON.parse(l));
    assert.deepEqual(cps.at(-1).streams, { "dlp/alerts.jsonl": streamNow(root, "dlp/alerts.jsonl") });
    await log.close();
  });
