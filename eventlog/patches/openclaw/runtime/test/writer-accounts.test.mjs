// Accounts in the layout, against the shared vectors (tests/vectors/store/accounts.json, also run by pytest): one chat
// id under two of the gateway's accounts is two partitions — two files, two chains, two seal streams, both covered by
// the head (docs/log-format.md, Layout).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { BadEvent, dayRelpath, parseRelpath, prepare, sealRelpath } from "../writer-format.mjs";
import { openEventLog } from "../writer.mjs";
import { accountOf } from "../tap-event.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const ACC = JSON.parse(readFileSync(join(here, "..", "..", "..", "..", "..", "tests", "vectors", "store", "accounts.json"), "utf8"));
const tmp = () => mkdtempSync(join(tmpdir(), "writer-acct-"));
const base = { event: "a:b", channel: "telegram", chat_id: "1", ts: "2026-11-30T10:00:00Z" };

function files(dir, root = dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? files(join(dir, e.name), root)
    : e.name.endsWith(".jsonl") ? [relative(root, join(dir, e.name))] : []);
}

test("accounts: OpenClaw's account ids are accepted, anything else refused", () => {
  for (const a of ACC.account_ok) assert.equal(prepare({ ...base, account: a }).account, a);
  for (const a of [...ACC.account_bad, null, 7, ["ops"]]) assert.throws(() => prepare({ ...base, account: a }), BadEvent, String(a));
});

test("accounts: day file and seal stream of an event; relpaths parse back", () => {
  for (const c of ACC.paths) {
    assert.equal(dayRelpath(c.channel, c.chat_id, c.ts, c.account ?? undefined), c.relpath);
    assert.equal(sealRelpath(c.channel, c.chat_id, c.account ?? undefined), c.seal);
  }
  for (const c of ACC.parse_ok) {
    assert.deepEqual(parseRelpath(c.relpath), { channel: c.channel, chatId: c.chat_id, day: c.day, account: c.account });
  }
  for (const rel of ACC.parse_bad) assert.equal(parseRelpath(rel), null, rel);
});

test("accounts: the writer produces the vector files byte for byte (two chains from two geneses)", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  for (const e of ACC.events) await log.append(e);
  const got = Object.fromEntries(files(join(root, "raw")).map((r) => [`raw/${r}`, readFileSync(join(root, "raw", r), "utf8")]));
  assert.deepEqual(got, ACC.files);
});

test("accounts: auto-seal and the head are per partition", async () => {
  const root = tmp();
  const log = await openEventLog({ root, fsync: "never" });
  for (const day of ["2026-11-29", "2026-11-30"]) {
    await log.append({ ...base, chat_id: "42", ts: `${day}T10:00:00Z`, text: "a" });
    await log.append({ ...base, chat_id: "42", ts: `${day}T10:00:01Z`, text: "b", account: "b" });
  }
  const sealOf = (rel) => readFileSync(join(root, rel), "utf8").trim().split("\n").map((l) => JSON.parse(l).file);
  assert.deepEqual(sealOf("seals/telegram/42.jsonl"), ["raw/telegram/chats/42/2026/11/29.jsonl"]);
  assert.deepEqual(sealOf("seals/telegram/accounts/b/42.jsonl"), ["raw/telegram/accounts/b/chats/42/2026/11/29.jsonl"]);
  const streams = readFileSync(join(root, "seals/checkpoints.jsonl"), "utf8").trim().split("\n")
    .flatMap((l) => Object.keys(JSON.parse(l).streams));
  assert.ok(streams.includes("seals/telegram/42.jsonl") && streams.includes("seals/telegram/accounts/b/42.jsonl"), streams);
  assert.ok(!existsSync(join(root, "raw/telegram/accounts/default")));
});

test("accounts: the tap puts an id the gateway did not canonicalise in OpenClaw's form", () => {
  assert.equal(accountOf(undefined), "default");
  assert.equal(accountOf(""), "default");
  assert.equal(accountOf("ops"), "ops");
  assert.equal(accountOf("Ops Bot/2"), "ops-bot-2");
  assert.equal(accountOf("--x--"), "x");
  assert.equal(accountOf("../.."), "default");
  assert.equal(accountOf("x".repeat(70)), "x".repeat(64));
});
