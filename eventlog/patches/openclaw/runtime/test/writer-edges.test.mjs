// Edges of the JS writer that the writer tests let live (issue 15 item 1, mutation testing): stream path checks,
// the array form of appendStream, the index of the bad event in appendMany.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEventLog, BadEvent } from "../writer.mjs";
import { genesis } from "../writer-format.mjs";

const tmp = () => mkdtempSync(join(tmpdir(), "writer-edges-"));
const ev = (over = {}) => ({ event: "dlp:alert", channel: "telegram", chat_id: "42", ts: "2026-11-30T10:00:00.000Z",
  rule: "r", ...over });

test("appendStream refuses every path that is not a plain relative *.jsonl outside raw/", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  for (const bad of ["dlp//alerts.jsonl", "./alerts.jsonl", "dlp/./alerts.jsonl", "dlp/", "raw/x.jsonl", "/x.jsonl",
    "x.json", "", 42, null]) {
    await assert.rejects(log.appendStream(bad, ev()), /not a stream path/, String(bad));
  }
  assert.deepEqual(readdirSync(root).filter((n) => n !== "dlp"), []);
  assert.equal(existsSync(join(root, "dlp")), false);
});

test("appendStream with an array stores each event in order and returns them as an array", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  const out = await log.appendStream("seals/x.jsonl", [ev({ rule: "a" }), ev({ rule: "b" })]);
  assert.ok(Array.isArray(out));
  assert.deepEqual(out.map((e) => e.rule), ["a", "b"]);
  assert.equal(out[0].prev, genesis("seals/x.jsonl"));
  const one = await log.appendStream("seals/x.jsonl", ev({ rule: "c" }));
  assert.ok(!Array.isArray(one) && one.rule === "c");
  const lines = readFileSync(join(root, "seals", "x.jsonl"), "utf8").split("\n").filter(Boolean);
  assert.deepEqual(lines.map((l) => JSON.parse(l).rule), ["a", "b", "c"]);
  await log.close();
});

test("appendMany names the first bad event by its index; a good batch is not touched by a bad one", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  await assert.rejects(log.appendMany([ev({ event: "message:received" }), ev({ event: "message:received" }),
    ev({ event: "message:received", ts: "not a time" })]), (e) => e instanceof BadEvent && e.index === 2);
  await assert.rejects(log.appendMany([ev({ event: "Bad" })]), (e) => e instanceof BadEvent && e.index === 0);
  assert.deepEqual(readdirSync(root), []);
  await log.close();
});
