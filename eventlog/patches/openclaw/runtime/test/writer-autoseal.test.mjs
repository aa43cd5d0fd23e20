// Which day files the JS writer's auto-seal seals, and what the seal records say, checked against the files on disk
// (issue 15, mutation testing of writer-seal.mjs). The rule is eventlog/seal.py's seal_before: when a chat gets a new
// day file, its day files after the newest sealed day and before the new day are sealed; older unsealed days are left
// to `eventlog seal`, later days stay open.
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openEventLog } from "../writer.mjs";
import { chainHash } from "../writer-commit.mjs";

const day = (d) => `raw/telegram/chats/3/2026/${d.slice(0, 2)}/${d.slice(3)}.jsonl`;
const ev = (d, text = "x") => ({ event: "message:received", channel: "telegram", chat_id: "3",
  ts: `2026-${d}T10:00:00.000Z`, text });

function seals(root) {
  let text = "";
  try { text = readFileSync(join(root, "seals/telegram/3.jsonl"), "utf8"); } catch { return new Map(); }
  const out = new Map();
  for (const line of text.split("\n").slice(0, -1)) { const r = JSON.parse(line); out.set(r.file, r); }
  return out;
}

/** The seal record a day file as it is on disk must have. */
function expected(root, rel) {
  const buf = readFileSync(join(root, rel));
  const lines = buf.toString("utf8").split("\n").slice(0, -1);
  return { lines: lines.length, bytes: buf.length, last: chainHash(lines.at(-1)) };
}

test("auto-seal seals the days after the newest sealed day and before the new one (as eventlog/seal.py), exactly",
  async () => {
    const root = mkdtempSync(join(tmpdir(), "evl-autoseal-"));
    const log = await openEventLog({ root, fsync: "never" });
    await log.append(ev("11-27", "a"));
    await log.append(ev("11-27", "b"));
    await log.append(ev("11-28")); // seals the 27th
    await log.append(ev("11-30")); // seals the 28th
    assert.deepEqual([...seals(root).keys()], [day("11-27"), day("11-28")]);
    await log.append(ev("11-25")); // a late event: a new day before the newest sealed one — nothing before it to seal
    await log.append(ev("11-29")); // a new day between: the 30th is after it, the 25th before the newest seal
    assert.deepEqual([...seals(root).keys()], [day("11-27"), day("11-28")]);
    await log.append(ev("12-01")); // the 29th and 30th are sealed now; the 25th is left to `eventlog seal`
    const s = seals(root);
    assert.deepEqual([...s.keys()].sort(), [day("11-27"), day("11-28"), day("11-29"), day("11-30")]);
    for (const [rel, rec] of s) {
      assert.deepEqual({ lines: rec.lines, bytes: rec.bytes, last: rec.last }, expected(root, rel), rel);
      assert.deepEqual([rec.event, rec.channel, rec.chat_id], ["seal:file", "telegram", "3"]);
    }
    assert.equal(s.get(day("11-27")).lines, 2);
    await log.close();
  });

test("a day with a torn tail is not sealed by auto-seal; the next append repairs it and extends nothing twice",
  async () => {
    const root = mkdtempSync(join(tmpdir(), "evl-autoseal-"));
    const log = await openEventLog({ root, fsync: "never" });
    await log.append(ev("11-28"));
    await log.close();
    appendFileSync(join(root, day("11-28")), '{"event":"message:rec'); // a writer died mid-line
    const log2 = await openEventLog({ root, fsync: "never" });
    await log2.append(ev("11-29"));
    assert.deepEqual([...seals(root).keys()], [], "a day ending in a torn line is not sealed");
    await log2.append(ev("11-28", "late")); // repairs the torn tail (moved aside, log:repair) and appends
    await log2.append(ev("11-30")); // seals the 28th (as repaired) and the 29th
    const s = seals(root);
    assert.deepEqual([...s.keys()].sort(), [day("11-28"), day("11-29")]);
    for (const [rel, rec] of s) assert.deepEqual({ lines: rec.lines, bytes: rec.bytes, last: rec.last }, expected(root, rel));
    assert.equal(s.get(day("11-28")).lines, 3); // the first line, the log:repair record, the late one
    await log2.close();
  });
