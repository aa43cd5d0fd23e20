// The JS engine picks up a false-positive verdict (allowlist.json, written by `eventlog dlp review`) without a restart,
// and shares the per-install HMAC key with the Python side.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, renameSync, statSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes, randomInt } from "node:crypto";
import { createScanner, loadRules, loadKey } from "../dlp.mjs";

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
// generated at run time: no secret-looking literal in the test files
const fakeKey = () => "sk-ant-api03-" + Array.from({ length: 93 }, () => ALNUM[randomInt(62)]).join("") + "AA";

function writeAllowlist(path, fingerprints) {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, JSON.stringify({ v: 1, entries: fingerprints.map((f) => ({ fingerprint: f, rule: "x" })) }));
  renameSync(tmp, path); // atomic, like the Python writer
}

test("allowlist changes reach a running scanner on the next check; a broken file keeps the last good set", () => {
  const dir = mkdtempSync(join(tmpdir(), "dlp-allow-"));
  try {
    const allowlistPath = join(dir, "allowlist.json");
    // check interval 0: every scan re-stats the file, so the test waits on nothing
    const scanner = createScanner({ rules: loadRules(), key: randomBytes(32), allowlistPath, allowlistCheckMs: 0 });
    const text = `the key ${fakeKey()} is a test fixture`;
    const first = scanner.scan(text);
    assert.equal(first.findings.length, 1);
    writeAllowlist(allowlistPath, [first.findings[0].fingerprint]);
    assert.deepEqual(scanner.scan(text).findings, []);
    assert.equal(scanner.filter(text).action, "pass");
    // the last good set is non-empty here: a broken file must keep it (a mutant that resets the set on a parse error
    // would report the finding again)
    writeFileSync(allowlistPath, "{broken");
    assert.deepEqual(scanner.scan(text).findings, []);
    writeFileSync(allowlistPath, JSON.stringify({ v: 1 })); // valid JSON, wrong shape: also kept
    assert.deepEqual(scanner.scan(text).findings, []);
    writeAllowlist(allowlistPath, []); // a later good verdict takes it off again
    assert.equal(scanner.scan(text).findings.length, 1);
    rmSync(allowlistPath); // no file: nothing allowed
    writeAllowlist(allowlistPath, [first.findings[0].fingerprint]);
    assert.deepEqual(scanner.scan(text).findings, []);
    rmSync(allowlistPath);
    assert.equal(scanner.scan(text).findings.length, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the default check interval holds a read allowlist for a while (no re-stat on every scan)", () => {
  const dir = mkdtempSync(join(tmpdir(), "dlp-allow-"));
  try {
    const allowlistPath = join(dir, "allowlist.json");
    const scanner = createScanner({ rules: loadRules(), key: randomBytes(32), allowlistPath,
      allowlistCheckMs: 3_600_000 });
    const text = `the key ${fakeKey()} is a test fixture`;
    const fp = scanner.scan(text).findings[0].fingerprint; // first scan reads (no file yet)
    writeAllowlist(allowlistPath, [fp]);
    assert.equal(scanner.scan(text).findings.length, 1); // within the interval: not re-read
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("loadKey creates a 0600 32-byte key once and returns the same key after", () => {
  const dir = mkdtempSync(join(tmpdir(), "dlp-key-"));
  try {
    const k1 = loadKey(dir);
    const k2 = loadKey(dir);
    assert.equal(k1.length, 32);
    assert.deepEqual(k1, k2);
    assert.equal(statSync(join(dir, "dlp", "key")).mode & 0o777, 0o600);
    assert.deepEqual(readFileSync(join(dir, "dlp", "key")), k1);
    writeFileSync(join(dir, "dlp", "key"), "short");
    assert.throws(() => loadKey(dir), /damaged/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("scan never throws on hostile strings", () => {
  const scanner = createScanner({ rules: loadRules(), key: randomBytes(32) });
  const inputs = ["", "\ud800", "\udc00x", "<".repeat(5000), "&#".repeat(3000), "<a href='".repeat(500),
    "&#1114112; &#xD800; &#0;", "\u2028sk-\u2029", "9".repeat(20000), `${"a".repeat(100000)}sk-ant-api03-`];
  for (const t of inputs) for (const html of [false, true]) for (const preview of [false, true]) {
    const r = scanner.filter(t, { html, preview });
    assert.equal(typeof r.text, "string");
  }
});
