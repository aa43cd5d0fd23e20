// Edges of the one-alert-per-leak merger (issue 15 item 1: mutants of dlp-alerts.mjs the shared vectors let live).
// headOf is checked against its definition computed here with Array.from (code points), not the module's loop.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { AlertMerger, headOf } from "../dlp-alerts.mjs";

const expectHead = (text, start) =>
  createHmac("sha256", "").update(Array.from(text).slice(start, start + 16).join(""), "utf8").digest("hex").slice(0, 16);

test("headOf: the first 16 code points from `start`, astral characters counted as one", () => {
  const texts = ["😀😀𝔘 key sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXYZ", "short", "ж😀".repeat(20), "🇷🇺🇷🇺 abc", ""];
  for (const t of texts) {
    for (const start of [0, 1, 2, 3, 5, 17, 40, 100]) assert.equal(headOf(t, start), expectHead(t, start), `${t} @${start}`);
  }
  assert.notEqual(headOf("😀abcdefghijklmnopq", 1), headOf("😀abcdefghijklmnopq", 2));
});

test("AlertMerger: spans that only touch are different leaks; no chat or message id is always new", () => {
  const m = new AlertMerger();
  m.add("1", 5, "r", 10, 20, "A");
  assert.deepEqual(m.decide("1", 5, "r", 20, 30), ["new", null], "starts where the alert ends");
  assert.deepEqual(m.decide("1", 5, "r", 0, 10), ["new", null], "ends where the alert starts");
  assert.deepEqual(m.decide("1", 5, "r", 19, 21), ["same", "A"]);
  assert.deepEqual(m.decide("1", 5, "r", 10, 20), ["same", "A"], "same length is not an update");
  assert.deepEqual(m.decide("1", 5, "r", 9, 21), ["update", "A"]);
  assert.deepEqual(m.decide("1", 5, "r", 9, 21), ["same", "A"], "the update was recorded");
  assert.deepEqual(m.decide("1", 5, "r", 9, 21, "caption"), ["new", null], "another field");
  assert.deepEqual(m.decide("1", 5, "r", 9, 21, "text", "h"), ["new", null], "another head");
  for (const [c, id] of [[null, 5], ["1", null], [undefined, 5], ["1", undefined]]) {
    m.add(c, id, "r", 0, 100, "X");
    assert.deepEqual(m.decide(c, id, "r", 0, 100), ["new", null]);
  }
});

test("AlertMerger keeps the most recently used messages up to its bound", () => {
  const m = new AlertMerger(2);
  m.add("1", 1, "r", 0, 10, "A");
  m.add("1", 2, "r", 0, 10, "B");
  m.add("1", 1, "r", 20, 30, "A2"); // message 1 used again: message 2 is now the oldest
  m.add("1", 3, "r", 0, 10, "C");
  assert.deepEqual(m.decide("1", 2, "r", 0, 10), ["new", null], "evicted");
  assert.deepEqual(m.decide("1", 1, "r", 0, 10), ["same", "A"]);
  assert.deepEqual(m.decide("1", 3, "r", 0, 10), ["same", "C"]);
  const big = new AlertMerger();
  for (let i = 0; i < 4097; i++) big.add("c", i, "r", 0, 1, `id${i}`);
  assert.deepEqual(big.decide("c", 0, "r", 0, 1), ["new", null], "the default bound is 4096 messages");
  assert.deepEqual(big.decide("c", 1, "r", 0, 1), ["same", "id1"]);
});
