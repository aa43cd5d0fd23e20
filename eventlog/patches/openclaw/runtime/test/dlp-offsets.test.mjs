// Code-point offsets under hostile text (issue 15 item 1: the surrogate-pair and lower-casing mutants of dlp.mjs
// that the vectors let live). Oracle independent of the engine's own conversions: Array.from(text) is the code-point
// sequence, so a finding [start, end) must slice exactly the planted secret from it, and redaction must replace
// exactly that secret. Noise: astral emoji, lone high and low surrogates, U+0130 (İ, whose lower case is two units),
// Cyrillic, placed before, between and after; a fixed seed makes every run the same.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createScanner, loadRules } from "../dlp.mjs";

const scanner = createScanner({ rules: loadRules(), key: Buffer.alloc(32, 7) });
const NOISE = ["😀", "𝔘", "\uD83D", "\uDE00", "İ", "ж", " ", "a", "🇷🇺", "\uDBFF\uDFFF", "\uD800\uDC00", "ǅ", "ß"];

function rng(seed) {
  let s = seed >>> 0;
  return () => { s = (s * 1103515245 + 12345) >>> 0; return s / 2 ** 32; };
}
const pick = (r, a) => a[Math.floor(r() * a.length)];
const noise = (r, n) => Array.from({ length: n }, () => pick(r, NOISE)).join("");

test("findings slice exactly the planted secrets by code point, whatever surrounds them", () => {
  const r = rng(15);
  const B = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (let round = 0; round < 60; round++) {
    const key = `sk-ant-api03-${Array.from({ length: 80 }, () => pick(r, B)).join("")}-${Array.from({ length: 12 }, () => pick(r, B)).join("")}AA`;
    const key2 = `AKIA${Array.from({ length: 16 }, () => pick(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")).join("")}`;
    const text = `${noise(r, 1 + (round % 7))} key ${key} ${noise(r, round % 5)} and ${key2} ${noise(r, 3)}`;
    const cps = Array.from(text);
    const res = scanner.scan(text);
    const got = res.findings.map((f) => [f.rule, cps.slice(f.start, f.end).join("")]);
    assert.deepEqual(got, [["anthropic-api-key", key], ["aws-access-key-id", key2]], JSON.stringify(text));
    const red = scanner.redact(text, res.findings).text;
    assert.equal(red, text.replace(key, "[REDACTED:anthropic-api-key]").replace(key2, "[REDACTED:aws-access-key-id]"));
    const f = scanner.filter(text);
    assert.equal(f.text, red);
  }
});

test("keywords are found after characters whose lower case changes length (İ) and in upper case", () => {
  for (const pre of ["İ", "İİİ", "😀İ", "ǅ", "\uD83D"]) {
    const text = `${pre} PASSWORD=Tr0ub4dor&3x`;
    const res = scanner.scan(text);
    const cps = Array.from(text);
    assert.deepEqual(res.findings.map((f) => f.rule), ["password-assignment"], JSON.stringify(text));
    assert.equal(cps.slice(res.findings[0].start, res.findings[0].end).join(""), "Tr0ub4dor&3x");
  }
});

test("a growing preview over astral text holds back from the right code point", () => {
  const key = "sk-ant-api03-" + "Q".repeat(40) + "x".repeat(40) + "-abcdefghijklAA";
  const text = `😀😀 𝔘 here: ${key}`;
  for (let n = 1; n <= Array.from(text).length; n++) {
    const part = Array.from(text).slice(0, n).join("");
    const shown = scanner.filter(part, { preview: true }).text;
    assert.ok(!shown.includes("\uFFFD"), "never splits a surrogate pair");
    for (let k = 3; k <= key.length; k++) if (shown.includes(key.slice(0, k))) assert.fail(`prefix ${k} shown at ${n}`);
  }
});
