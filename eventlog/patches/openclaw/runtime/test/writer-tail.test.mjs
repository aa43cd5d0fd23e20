// Two edges of the JS writer that only the bytes on disk and the process's descriptor table show (issue 15, mutation
// testing): a day file that begins with an empty line, and the bound on the files the writer keeps open.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { openEventLog } from "../writer.mjs";

const tmp = () => mkdtempSync(join(tmpdir(), "evl-tail-"));
const ev = (chat, over = {}) => ({ event: "message:sent", channel: "telegram", chat_id: chat,
  ts: "2026-11-30T10:00:00.000Z", ...over });

test("a day file holding one empty line: chained on from that line's hash (as eventlog/writer.py), nothing moved aside",
  async () => {
    // eventlog/writer.py _read_last_line: b"\n" → (b"", 1): a complete (empty) last line, no torn tail; the next
    // line's prev is the hash of the empty line (sha256 of no bytes), not the genesis, and nothing is "repaired".
    const root = tmp();
    const rel = "raw/telegram/chats/5/2026/11/30.jsonl";
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), "\n");
    const log = await openEventLog({ root, fsync: "never" });
    const stored = await log.append(ev("5"));
    await log.close();
    assert.equal(stored.prev, createHash("sha256").update("").digest("hex"));
    const text = readFileSync(join(root, rel), "utf8");
    assert.ok(text.startsWith("\n{"), "the empty line stays where it was");
    assert.equal(text.split("\n").length, 3);
    assert.deepEqual(readdirSync(dirname(join(root, rel))).filter((f) => f.includes(".torn-")), []);
  });

test("the writer keeps at most 32 log files open, however many chats it writes to", async () => {
  const root = tmp();
  const fds = () => readdirSync("/proc/self/fd").length;
  const warm = await openEventLog({ root: join(root, "warm"), fsync: "never" });
  await warm.append(ev("0"));
  await warm.close();
  const before = fds();
  const log = await openEventLog({ root, fsync: "never" });
  for (let chat = 1; chat <= 48; chat++) await log.append(ev(String(chat)));
  const open = fds() - before;
  assert.ok(open <= 34, `${open} descriptors held for 48 day files (at most 32 log files + slack)`);
  // every file is still appended to correctly after its descriptor was closed for others
  for (let chat = 1; chat <= 48; chat++) await log.append(ev(String(chat), { n: 2 }));
  await log.close();
  assert.equal(fds(), before);
  for (const chat of [1, 17, 48]) {
    const lines = readFileSync(join(root, `raw/telegram/chats/${chat}/2026/11/30.jsonl`), "utf8").split("\n");
    assert.equal(lines.length, 3, String(chat));
  }
});
