// Checkpoint contents of the JS writer (docs/log-format.md, "Head"), checked against the files on disk rather than
// against the writer's own bookkeeping (issue 15, mutation testing of writer-head.mjs): which streams are covered
// (every seals/<channel>/<chat>.jsonl file, dlp/alerts.jsonl, dlp/reviews.jsonl — nothing else), that a stream's
// entry counts complete lines only (a torn tail is not part of it), that growth by only a torn tail or a same-size
// stream records nothing (as eventlog/head.py), and that a checkpoint file replaced under the same name is folded
// again even where the cached last line happens to sit at the same offset.
import assert from "node:assert/strict";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openEventLog } from "../writer.mjs";
import { CHECKPOINTS, checkpoint, folded } from "../writer-head.mjs";
import { chainHash } from "../writer-commit.mjs";

const tmp = () => mkdtempSync(join(tmpdir(), "evl-ckpt-"));
const records = (root) => readFileSync(join(root, CHECKPOINTS), "utf8").split("\n").slice(0, -1).map((l) => JSON.parse(l));
const ev = (channel, chat, day, text = "x") => ({ event: "message:received", channel, chat_id: chat,
  ts: `2026-11-${day}T10:00:00.000Z`, text });
const dlp = (event, n) => ({ event, channel: "telegram", chat_id: "7", ts: "2026-11-30T10:00:00.000Z", rule: "r", n });

/** {lines, bytes, last} of a stream's complete lines as they are on disk (what a checkpoint must record). */
function onDisk(root, rel) {
  const buf = readFileSync(join(root, rel));
  const end = buf.lastIndexOf(10) + 1;
  const lines = buf.subarray(0, end).toString("utf8").split("\n").slice(0, -1);
  return { lines: lines.length, bytes: end, last: chainHash(lines.at(-1)) };
}

test("a checkpoint covers every chat's seal stream and both DLP streams, counts complete lines only, nothing else",
  async () => {
    const root = tmp();
    const log = await openEventLog({ root, fsync: "never" });
    for (const day of ["28", "29", "30"]) {
      for (const [ch, chat] of [["telegram", "1"], ["telegram", "2"], ["slack", "C9"]]) {
        await log.append(ev(ch, chat, day, `${ch} ${chat} ${day}`));
      }
    }
    const seals = ["seals/slack/C9.jsonl", "seals/telegram/1.jsonl", "seals/telegram/2.jsonl"];
    // the last checkpoint so far holds each seal stream as it is now (the last seal of each chat came before it)
    const state = await folded(root);
    assert.deepEqual([...state.keys()].sort(), seals);
    for (const rel of seals) assert.deepEqual(state.get(rel), onDisk(root, rel), rel);
    // things under seals/ and dlp/ that are not covered streams
    writeFileSync(join(root, "seals", "telegram", "notes.txt"), "not a stream\n");
    mkdirSync(join(root, "seals", "telegram", "dir.jsonl"));
    writeFileSync(join(root, "seals", "loose.jsonl"), "{}\n");
    mkdirSync(join(root, "dlp"), { recursive: true });
    writeFileSync(join(root, "dlp", "other.jsonl"), "{}\n");
    await log.appendStream("dlp/alerts.jsonl", [dlp("dlp:alert", 1), dlp("dlp:alert", 2)]);
    await log.appendStream("dlp/reviews.jsonl", dlp("dlp:review", 1));
    appendFileSync(join(root, "dlp/alerts.jsonl"), '{"event":"dlp:alert","torn'); // a writer died mid-line
    const before = records(root).length;
    await checkpoint(log);
    const all = records(root);
    assert.equal(all.length, before + 1);
    const last = all.at(-1);
    assert.deepEqual([last.event, last.channel, last.chat_id], ["log:checkpoint", "system", "eventlog"]);
    assert.deepEqual(last.streams, { "dlp/alerts.jsonl": onDisk(root, "dlp/alerts.jsonl"),
      "dlp/reviews.jsonl": onDisk(root, "dlp/reviews.jsonl") });
    assert.equal(last.streams["dlp/alerts.jsonl"].lines, 2);
    // growth by a torn tail only, and a same-size edit: nothing to record (as eventlog/head.py)
    appendFileSync(join(root, "dlp/alerts.jsonl"), "-more");
    const rv = readFileSync(join(root, "dlp/reviews.jsonl"), "utf8");
    writeFileSync(join(root, "dlp/reviews.jsonl"), rv.replace('"n":1', '"n":2'));
    await checkpoint(log);
    assert.equal(records(root).length, before + 1);
    // the torn line completed: now a third line
    appendFileSync(join(root, "dlp/alerts.jsonl"), '"}\n');
    await checkpoint(log);
    assert.deepEqual(records(root).at(-1).streams, { "dlp/alerts.jsonl": onDisk(root, "dlp/alerts.jsonl") });
    assert.equal(records(root).at(-1).streams["dlp/alerts.jsonl"].lines, 3);
    await log.close();
  });

test("an empty DLP stream is not recorded; a stream that grew is recorded with its new count", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  mkdirSync(join(root, "dlp"), { recursive: true });
  writeFileSync(join(root, "dlp/reviews.jsonl"), "");
  await log.appendStream("dlp/alerts.jsonl", dlp("dlp:alert", 1));
  await checkpoint(log);
  assert.deepEqual(Object.keys(records(root).at(-1).streams), ["dlp/alerts.jsonl"]);
  await log.appendStream("dlp/alerts.jsonl", [dlp("dlp:alert", 2), dlp("dlp:alert", 3)]);
  await checkpoint(log);
  assert.deepEqual(records(root).at(-1).streams, { "dlp/alerts.jsonl": onDisk(root, "dlp/alerts.jsonl") });
  assert.equal(records(root).at(-1).streams["dlp/alerts.jsonl"].lines, 3);
  await log.close();
});

test("a checkpoint file replaced under its name is folded again, even with the cached last line at the same offset",
  async () => {
    const root = tmp();
    mkdirSync(join(root, "seals"), { recursive: true });
    const rec = (rel, lines, h) => JSON.stringify({ event: "log:checkpoint", channel: "system", chat_id: "eventlog",
      ts: "2026-11-30T10:00:00.000Z", streams: { [rel]: { lines, bytes: 10 * lines, last: h.repeat(64) } } }) + "\n";
    const a = rec("dlp/reviews.jsonl", 1, "a");
    const b = rec("dlp/alerts.jsonl", 1, "b");
    writeFileSync(join(root, CHECKPOINTS), a + b);
    assert.equal((await folded(root)).get("dlp/reviews.jsonl").lines, 1);
    // another file: its first record differs (same length), the second is the same bytes at the same offset
    const next = join(root, "seals", "checkpoints.next");
    writeFileSync(next, rec("dlp/reviews.jsonl", 2, "c") + b + rec("dlp/alerts.jsonl", 2, "d"));
    assert.notEqual(statSync(next).ino, statSync(join(root, CHECKPOINTS)).ino);
    renameSync(next, join(root, CHECKPOINTS));
    const state = await folded(root);
    assert.deepEqual(state.get("dlp/reviews.jsonl"), { lines: 2, bytes: 20, last: "c".repeat(64) });
    assert.deepEqual(state.get("dlp/alerts.jsonl"), { lines: 2, bytes: 20, last: "d".repeat(64) });
    // records that are not well-formed checkpoints are skipped, not folded
    appendFileSync(join(root, CHECKPOINTS), [
      JSON.stringify({ event: "log:other", streams: { "dlp/alerts.jsonl": { lines: 9, bytes: 9, last: "e".repeat(64) } } }),
      JSON.stringify({ event: "log:checkpoint", streams: null }),
      JSON.stringify({ event: "log:checkpoint", streams: { "dlp/alerts.jsonl": { lines: 9, bytes: 9, last: "E".repeat(64) } } }),
      JSON.stringify({ event: "log:checkpoint", streams: { "dlp/alerts.jsonl": { lines: 9.5, bytes: 9, last: "e".repeat(64) } } }),
      JSON.stringify({ event: "log:checkpoint", streams: { "dlp/alerts.jsonl": { lines: 9, bytes: "9", last: "e".repeat(64) } } }),
      "not json",
      JSON.stringify({ event: "log:checkpoint", streams: { "dlp/reviews.jsonl": { lines: 3, bytes: 30, last: "f".repeat(64) } } }),
    ].join("\n") + "\n");
    const after = await folded(root);
    assert.deepEqual(after.get("dlp/alerts.jsonl"), { lines: 2, bytes: 20, last: "d".repeat(64) });
    assert.deepEqual(after.get("dlp/reviews.jsonl"), { lines: 3, bytes: 30, last: "f".repeat(64) });
  });

test("checkpoint() on a root without seals/ yet makes it (0700) and records the DLP streams; nothing to record: no file",
  async () => {
    const root = tmp();
    const log = await openEventLog({ root, fsync: "never" });
    await checkpoint(log); // nothing covered yet: seals/ is made, no checkpoint record
    assert.equal(statSync(join(root, "seals")).mode & 0o777, 0o700);
    assert.throws(() => statSync(join(root, CHECKPOINTS)), { code: "ENOENT" });
    const other = tmp();
    const log2 = await openEventLog({ root: other, fsync: "never" });
    await log2.appendStream("dlp/alerts.jsonl", dlp("dlp:alert", 1));
    await checkpoint(log2);
    assert.deepEqual(records(other).map((r) => r.streams), [{ "dlp/alerts.jsonl": onDisk(other, "dlp/alerts.jsonl") }]);
    await log.close();
    await log2.close();
  });

test("checkpoint() with a threaded writer's handle on a root without seals/ makes it 0700 too", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never", thread: true });
  try {
    await log.appendStream("dlp/alerts.jsonl", dlp("dlp:alert", 1));
    await checkpoint(log);
    assert.equal(statSync(join(root, "seals")).mode & 0o777, 0o700);
    assert.deepEqual(records(root).map((r) => r.streams), [{ "dlp/alerts.jsonl": onDisk(root, "dlp/alerts.jsonl") }]);
  } finally { await log.terminate(); }
});
