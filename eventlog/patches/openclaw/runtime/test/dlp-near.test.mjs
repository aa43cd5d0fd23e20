// Issue 25, two tiers: the shared near-format vectors (tests/vectors/dlp/near.json, expectations written by hand) run
// against the JS engine; pytest runs the same file against the Python engine (tests/test_dlp_near.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createScanner, loadRules, nearSeverity } from "../dlp.mjs";

const VEC = fileURLToPath(new URL("../../../../../tests/vectors/dlp/near.json", import.meta.url));
const doc = JSON.parse(readFileSync(VEC, "utf8"));
const scanner = createScanner({ rules: loadRules(), key: Buffer.from(doc.key_hex, "hex") });
const KEYS = ["rule", "start", "end", "tier", "severity", "action"];

for (const c of doc.cases) {
  test(`near vector ${c.name}`, () => {
    const res = scanner.scan(c.text, { preview: c.preview });
    assert.deepEqual(res.findings.map((f) => Object.fromEntries(KEYS.map((k) => [k, f[k]]))), c.findings);
    const f = scanner.filter(c.text, { preview: c.preview });
    assert.deepEqual({ text: f.text, held: f.held }, c.filter);
  });
}

test("near severity: one step down, never below medium", () => {
  assert.deepEqual(["critical", "high", "medium", "low"].map(nearSeverity), ["high", "medium", "medium", "low"]);
});

test("every finding carries its tier; fingerprint() is the findings' HMAC", () => {
  const c = doc.cases.find((x) => x.name === "two-tiers-in-one-text");
  const res = scanner.scan(c.text);
  assert.deepEqual(res.findings.map((f) => f.tier), ["near_format", "confirmed"]);
  const f = res.findings[0];
  assert.equal(scanner.fingerprint(Array.from(c.text).slice(f.start, f.end).join("")), f.fingerprint);
});
