// Edges of the JS writer that the writer tests let live (issue 15 item 1, mutation testing): stream path checks,
// the array form of appendStream, the index of the bad event in appendMany.
import { test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEventLog, BadEvent, EventlogError } from "../writer.mjs";
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

test("prepare: only a JSON object is an event; a required field present but undefined is missing; salt shape", async () => {
  const { prepare } = await import("../writer-format.mjs");
  for (const bad of [null, [], "x", 42, [ev()]]) assert.throws(() => prepare(bad), (e) => e instanceof BadEvent);
  for (const k of ["event", "channel", "chat_id", "ts"]) {
    assert.throws(() => prepare(ev({ [k]: undefined })), /missing required field\(s\): /, k);
  }
  const salt = "0123456789abcdef0123456789abcdef";
  assert.equal(prepare(ev({ text: "x", salt })).salt, salt);
  for (const s of [salt.toUpperCase(), salt.slice(1), 42]) {
    assert.throws(() => prepare(ev({ text: "x", salt: s })), /salt must be/, String(s));
  }
  assert.equal(prepare(ev({ salt })).salt, undefined, "no content: no salt kept");
});

test("compareCodePoints orders by code point: U+10000 (a surrogate pair) sorts after U+FFFF and U+E000", async () => {
  const { compareCodePoints, encode } = await import("../writer-format.mjs");
  assert.ok(compareCodePoints("\uFFFF", "\u{10000}") < 0);
  assert.ok(compareCodePoints("\u{10000}", "\uFFFF") > 0);
  assert.ok(compareCodePoints("\uE000", "\u{10000}") < 0);
  assert.ok(compareCodePoints("\u{10000}", "\uE000") > 0);
  assert.ok(compareCodePoints("\uD7FF", "\u{10000}") < 0);
  assert.ok(compareCodePoints("a", "ab") < 0 && compareCodePoints("ab", "a") > 0 && compareCodePoints("ab", "ab") === 0);
  assert.equal(encode({ "\u{10000}": 1, "\uFFFF": 2, a: 3 }), '{"a":3,"\uFFFF":2,"\u{10000}":1}');
  assert.equal(encode({ a: [undefined, () => 1, Symbol("s"), 1] }), '{"a":[null,null,null,1]}');
});

test("parseRelpath: the day file's path and nothing else", async () => {
  const { parseRelpath } = await import("../writer-format.mjs");
  assert.deepEqual(parseRelpath("raw/telegram/chats/42/2026/11/30.jsonl"), { channel: "telegram", chatId: "42", day: "2026-11-30", account: "default" });
  assert.deepEqual(parseRelpath("raw/telegram/chats/-100/2024/02/29.jsonl"), { channel: "telegram", chatId: "-100", day: "2024-02-29", account: "default" });
  for (const bad of ["raw/telegram/chats/42/2026/11/31.jsonl", "raw/telegram/chats/42/2026/13/01.jsonl",
    "raw/telegram/chats/42/2026/00/01.jsonl", "raw/telegram/chats/42/2026/11/00.jsonl", "raw/telegram/chats/42/2025/02/29.jsonl",
    "raw/telegram/chats/42/2026/1/30.jsonl", "raw/telegram/chats/42/26/11/30.jsonl", "raw/telegram/chats/42/2026/11/30.json",
    "raw/Tele gram/chats/42/2026/11/30.jsonl", "raw/telegram/chat/42/2026/11/30.jsonl", "raws/telegram/chats/42/2026/11/30.jsonl",
    "raw/telegram/chats/a b/2026/11/30.jsonl", "raw/telegram/chats/42/2026/11/30.jsonl/x", "dlp/alerts.jsonl"]) {
    assert.equal(parseRelpath(bad), null, bad);
  }
});

test("a torn tail in a stream (dlp/alerts.jsonl) is repaired too: the log:repair record names no chat", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  await log.appendStream("dlp/alerts.jsonl", ev({ rule: "first" }));
  appendFileSync(join(root, "dlp", "alerts.jsonl"), '{"event":"dlp:al');
  const fresh = await openEventLog({ root, fsync: "never" });
  await fresh.appendStream("dlp/alerts.jsonl", ev({ rule: "second" }));
  const lines = readFileSync(join(root, "dlp", "alerts.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => l.event), ["dlp:alert", "log:repair", "dlp:alert"]);
  assert.deepEqual([lines[1].channel, lines[1].chat_id], ["eventlog", "stream"]);
  await fresh.close();
  await log.close();
});

test("openEventLog refuses an empty or non-string root and an unknown fsync policy", async () => {
  for (const root of ["", 42, null]) {
    await assert.rejects(openEventLog({ root, fsync: "never" }), (e) => e instanceof EventlogError, String(root));
  }
  await assert.rejects(openEventLog({ root: tmp(), fsync: "sometimes" }), /fsync policy must be one of always, batch, never/);
});
