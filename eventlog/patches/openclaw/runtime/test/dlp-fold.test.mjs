// The reader's fold (docs/dlp.md, "What the engines scan: the fold"): the hand-written vectors
// tests/vectors/dlp/fold.json against the JS engine; pytest runs the same file against the Python engine
// (tests/test_dlp_fold.py). Offsets in the vectors are code points; dlp-fold.mjs maps UTF-16 units, converted here.
// LABELLED TEST CORPUS: the tokens are fake values.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createScanner, loadRules } from "../dlp.mjs";
import { IGNORABLE, fold } from "../dlp-fold.mjs";

const VEC = fileURLToPath(new URL("../../../../../tests/vectors/dlp/fold.json", import.meta.url));
const doc = JSON.parse(readFileSync(VEC, "utf8"));
const key = Buffer.from(doc.key_hex, "hex");
const scanner = createScanner({ rules: loadRules(), key });
const U = (s) => parseInt(s.slice(2), 16);

/** code point offset → UTF-16 offset of t, for every offset 0..length */
function units(t) {
  const out = [];
  let i = 0;
  for (const ch of t) { out.push(i); i += ch.length; }
  out.push(i);
  return out;
}

test("the table is the vectors' Default_Ignorable_Code_Point ranges and the engine's own \\p{DI}", () => {
  assert.deepEqual(IGNORABLE.map((r) => [...r]), doc.ignorable.map(([a, b]) => [U(a), U(b)]));
  for (const [a, b] of IGNORABLE) {
    for (const c of [a, b]) assert.match(String.fromCodePoint(c), /^\p{Default_Ignorable_Code_Point}$/u);
    assert.equal(fold(String.fromCodePoint(a)).text, "");
  }
  for (const u of doc.not_folded) assert.equal(fold(String.fromCodePoint(U(u))), null, u);
  for (let c = 0xff01; c <= 0xff5e; c++) assert.equal(fold(String.fromCodePoint(c)).text, String.fromCharCode(c - 0xfee0));
  assert.equal(fold("\u3000").text, " ");
});

for (const c of doc.fold) {
  test(`fold vector: ${c.name}`, () => {
    const f = fold(c.input);
    if (c.folded === c.input) { assert.equal(f, null); return; }
    assert.equal(f.text, c.folded);
    const fu = units(f.text), ou = units(c.input);
    assert.deepEqual(c.orig.map((_, j) => f.orig(fu[j])), c.orig.map((o) => ou[o]));
    assert.equal(f.orig(f.text.length), c.input.length);
  });
}

for (const c of doc.scan) {
  test(`fold scan vector: ${c.name}`, () => {
    const res = scanner.scan(c.input, { html: c.html, preview: c.preview });
    assert.deepEqual(res.findings.map(({ rule, start, end, masked }) => ({ rule, start, end, masked })),
      c.findings.map(({ rule, start, end, masked }) => ({ rule, start, end, masked })));
    res.findings.forEach((f, i) => {
      assert.equal(f.fingerprint, createHmac("sha256", key).update(c.findings[i].secret, "utf8").digest("hex"));
      for (const ch of f.masked) assert.equal(fold(ch), null); // a masked preview shows no invisible character
    });
    assert.equal(res.holdBack, c.hold_back);
    assert.equal(scanner.redact(c.input, res.findings, { html: c.html }).text, c.redacted);
    if (c.filtered !== undefined) {
      const f = scanner.filter(c.input, { html: c.html, preview: true });
      assert.deepEqual([f.text, f.held], [c.filtered, c.hold_back]);
    }
  });
}

test("the scanner's fast path (prep's table) lets through no foldable character: a token split by any is found", () => {
  const tok = "ghp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6";
  const cps = [];
  for (const [a, b] of IGNORABLE) for (let c = a; c <= b; c++) cps.push(c);
  for (const c of cps) {
    const t = `ok ${tok.slice(0, 9)}${String.fromCodePoint(c)}${tok.slice(9)} ok`;
    const f = scanner.scan(t).findings;
    assert.equal(f.length, 1, `U+${c.toString(16)}`);
    assert.equal(f[0].fingerprint, createHmac("sha256", key).update(tok, "utf8").digest("hex"));
  }
  for (let c = 0xff01; c <= 0xff5e; c++) { // each fullwidth character rewrites the first ASCII one it matches
    const ch = String.fromCharCode(c - 0xfee0);
    const i = tok.indexOf(ch);
    if (i < 0) continue;
    const t = `ok ${tok.slice(0, i)}${String.fromCharCode(c)}${tok.slice(i + 1)} ok`;
    assert.equal(scanner.scan(t).findings.length, 1, t);
  }
});
