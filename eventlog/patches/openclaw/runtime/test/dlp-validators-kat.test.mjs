// Validator known answers from independent sources (tests/vectors/dlp/validators_known_answers.json: published test
// card numbers, SWIFT IBAN registry examples, ЕГРЮЛ records, check digits worked by hand from the official algorithms).
// pytest runs the same file against the Python engine (tests/test_dlp_validators_kat.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { VALIDATORS } from "../dlp-validators.mjs";
import { createScanner, loadRules } from "../dlp.mjs";

const DOC = JSON.parse(readFileSync(fileURLToPath(
  new URL("../../../../../tests/vectors/dlp/validators_known_answers.json", import.meta.url)), "utf8"));

test("every validator has known answers both ways", () => {
  for (const name of new Set(DOC.cases.map((c) => c.validator))) {
    assert.ok(VALIDATORS[name], `no JS validator ${name}`);
    const answers = new Set(DOC.cases.filter((c) => c.validator === name).map((c) => c.expect));
    assert.deepEqual([...answers].sort(), [false, true], name);
  }
});

test("validators give the published answers", () => {
  for (const c of DOC.cases) assert.equal(VALIDATORS[c.validator](c.value), c.expect, `${c.validator} ${c.value}`);
});

test("the engine: a card-like number with a wrong check digit next to a context word is not a finding", () => {
  const scanner = createScanner({ rules: loadRules(), key: Buffer.alloc(32, 107) });
  for (const c of DOC.texts) assert.deepEqual(scanner.scan(c.text).findings.map((f) => f.rule), c.rules, c.text);
});
