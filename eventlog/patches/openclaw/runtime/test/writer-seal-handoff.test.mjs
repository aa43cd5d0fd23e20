// Seals across writers (issue 15, writer.mjs mutants that looked like cost only): a writer whose file handle is still
// cached after it let go of the lock must notice a seal another writer made meanwhile and extend it (the cached
// handle is not a new file); a day file that vanished between the listing and its seal is skipped; and a writer that appends to an existing day file in an existing directory does not
// auto-seal (only a new day file seals the chat's earlier days — eventlog/seal.py's seal_before).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openEventLog } from "../writer.mjs";
import { chainOk, readLines } from "./writer-helpers.mjs";

const tmp = () => mkdtempSync(join(tmpdir(), "evl-handoff-"));
const ev = (day, text) => ({ event: "message:received", channel: "telegram", chat_id: "42", ts: `2026-11-${day}T10:00:00Z`, text });
const D = (day) => `raw/telegram/chats/42/2026/11/${day}.jsonl`;
const seals = (root) => readLines(join(root, "seals/telegram/42.jsonl")).map((l) => JSON.parse(l));

test("a cached handle on a day another writer sealed meanwhile: the append extends the seal", async () => {
  const root = tmp();
  const a = await openEventLog({ root, fsync: "never", lease: { idleMs: 0 } }); // lets go of the lock after each append
  await a.append(ev("29", "one"));
  await a.append(ev("29", "two"));
  const b = await openEventLog({ root, fsync: "never" });
  await b.append(ev("30", "new day: b seals the 29th"));
  await b.close();
  assert.deepEqual(seals(root).map((s) => [s.file, s.lines]), [[D("29"), 2]]);
  await a.append(ev("29", "three, late")); // a's handle on 29.jsonl is still open and cached
  const last = seals(root).filter((s) => s.file === D("29")).at(-1);
  assert.equal(last.lines, 3, "the seal was not extended: the day now has lines no seal covers");
  assert.equal(last.bytes, statSync(join(root, D("29"))).size);
  assert.equal(last.last, chainOk(root, D("29")));
  await a.close();
});

test("appending to an existing day file in an existing directory seals nothing (no new day file)", async () => {
  const root = tmp();
  const a = await openEventLog({ root, fsync: "never", autoseal: false });
  await a.append(ev("28", "older day"));
  await a.append(ev("29", "yesterday"));
  await a.close();
  const b = await openEventLog({ root, fsync: "never" }); // a fresh writer: it knows no directory yet
  await b.append(ev("29", "more for the 29th"));
  await b.close();
  assert.equal(existsSync(join(root, "seals")), false, "auto-seal ran without a new day file");
  assert.equal(readFileSync(join(root, D("29")), "utf8").split("\n").length, 3);
});

test("auto-seal skips a day file that is gone by the time it is opened (listed, then ENOENT): no failure, rest sealed",
  async () => {
    const root = tmp();
    const lines = [];
    const log = await openEventLog({ root, fsync: "never", warn: (l) => lines.push(l) });
    await log.append(ev("27", "sealed later"));
    // listed by the directory scan, gone when opened: a dangling symbolic link takes the place of a deleted file
    symlinkSync("gone.jsonl", join(root, D("28")));
    await log.append(ev("30", "new day"));
    assert.deepEqual(lines, [], "the auto-seal failed");
    assert.deepEqual(seals(root).map((s) => [s.file, s.lines]), [[D("27"), 1]]);
    assert.ok(existsSync(join(root, "seals/checkpoints.jsonl")), "no checkpoint after the seal");
    await log.close();
  });
