// The validators (dlp-validators.mjs) against their Python twin (eventlog/dlp/validators.py) on edge inputs the known
// answers do not reach (issue 15 item 1: the conformance idea, for the dlp-validators mutants that survived): every
// card brand's prefix range ends with every length from 11 to 21 (a check digit made Luhn-valid by the algorithm, so
// only the brand and length rules decide), the IBAN country lengths ±1, check-digit numbers one digit short or long,
// and credential-like values made of astral characters, one character kind, quotes, templates, placeholders. Each
// value through every validator, plus entropy. Independent known answers stay in dlp-validators-kat.test.mjs; here two
// implementations must agree, and a few answers worked by hand keep both honest.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { VALIDATORS, entropy, cpLength } from "../dlp-validators.mjs";

const ROOT = fileURLToPath(new URL("../../../../../", import.meta.url));

/** digits + the Luhn check digit (ISO/IEC 7812-1 annex B: double every second digit from the right). */
function withCheck(body) {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = +body[body.length - 1 - i];
    if (i % 2 === 0) { d *= 2; if (d > 9) d -= 9; }
    sum += d;
  }
  return body + ((10 - (sum % 10)) % 10);
}
const PREFIXES = ["4", "50", "51", "55", "56", "58", "62", "63", "65", "67", "34", "37", "36", "38", "300", "305", "306",
  "644", "649", "6011", "2199", "2200", "2204", "2205", "2220", "2221", "2720", "2721", "3527", "3528", "3589", "3590",
  "1", "7", "8", "9", "99"];
const CARDS = [];
for (const p of PREFIXES) for (let len = 11; len <= 21; len++) CARDS.push(withCheck(p + "7".repeat(len - 1 - p.length)));
CARDS.push("4111 1111 1111 1111", "4111-1111-1111-1112", "");

const IBANS = ["GB36847025572654632566", "GB36847025572654632566 ", "GB36 8470 2557 2654 6325 66", "GB3684702557265463256",
  "GB368470255726546325660", "NO9386011117947", "NO93860111179470", "XX36847025572654632566", "DE89370400440532013000",
  "DE89370400440532013001", "BE68539007547034", "BE6853900754703", "MT84MALT011000012345MTLCAST001S", "AZ21NABZ00000000137010001944"];
const NUMBERS = ["7707083893", "770708389", "77070838930", "500100732259", "50010073225", "5001007322590",
  "11223344595", "112233445", "112-233-445 95", "1027700132195", "102770013219", "10277001321950", "304500116000157",
  "30450011600015", "3045001160001570", "0000000000", "000000000000"];
const E = "😀", M = "𝔘";
const WORDS = [`${E}${E}${E}${E}`, `${E}${E}${E}${E}${E}${E}${E}${E}`, `"${E}😁😂🤣😃😄🥲🙂"`, `${E}😁😂🤣😃😄🥲🙂`,
  `${M}${M}abc1`, `a${E}b${E}c${E}d1`, "\"abcdefgh\"", "'abcdefgh'", "`abcdefgh`", "\"abcdefgh'", "abcdefgh", "\"abc\"",
  "''", "\"", "aaaaaaaa", "AAAAAAAA", "ёёёёЁЁЁЁ", "пароль12", "ПАРОЛЬ12", "Passw0rd", "password", "changeme", "xxxx",
  "your_pass1", "my_secret9", "<secret>", "${TOKEN}", "$TOKEN", "$(cat f)", "{{x}}", "[X]", "%(pw)s", "<%= pw %>",
  "process.env.PW", "****abcd", "abc...", "abc…", "fake_Secret1", "-----BEGIN x", "Ab1!Ab1!", "s3cr3t-V4lue",
  "user:pa55Word", "user:", ":pa55Word", "deploy:Tr0ub4dor&3", "admin:S3cr3tPassw0rd", "alice:", "us:pw",
  "\"user\":'pa55Word'", "${U}:pw12345", "root:root", "user:password",
  "eyJhbGciOiJIUzI1NiJ9", "eyJ0eXAiOiJKV1QifQ", "eyJhbGciOiJub25lIn0.e30.", "e30", "WyJhbGciXQ", "eyJhbGciOiJIUzI1NiJ9x",
  "ghp_" + "a".repeat(30) + "000000", "ab:cd", "a\uD800b\uDC00c1D", "\uD83D\uDE00\uD83D",
  // U+FFFF, the last BMP code point, then another character: not one repeated character
  "\uFFFFa", "\uFFFF\uFFFF", "\uFFFFxY1z9", "u:\uFFFFab",
  // U+10000, the first astral code point, repeated; a letter first and then only symbols
  "\u{10000}\u{10000}\u{10000}\u{10000}", "a😀😁😂🤣😃", "!a😀😁😂🤣", "\uFFFFa!😀😁😂", "\"a😀😁😂🤣😃🥲🙂\""];
// hand-worked answers shared with tests/test_dlp_validators_answers.py (each with its reason); their values join the
// twin comparison too
const HAND = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/dlp/validators_hand_answers.json", import.meta.url), "utf8"));
WORDS.push(...new Set(HAND.cases.map((c) => c.value)));
// discord_bot_token gets what its rule's pattern hands it: base64url of the id's ASCII digits (15 to 22 of them, a
// leading 0, a letter or a character next to the digits inside), cut to lengths 1 mod 4, then ".<6>.<27>"
const DISCORD = [];
for (let n = 15; n <= 22; n++) {
  for (const id of ["1".padEnd(n, "7"), "0".padEnd(n, "7"), "9".padEnd(n - 1, "7") + "a", "1".padEnd(n - 1, "7") + "/",
    "1".padEnd(n - 1, "7") + ":"]) {
    const head = Buffer.from(id).toString("base64url");
    DISCORD.push(`${head}.AbCdEf.${"x".repeat(27)}`, `${head.slice(0, -1)}.AbCdEf.${"x".repeat(27)}`, head);
  }
}
const ALL = [...CARDS, ...IBANS, ...NUMBERS, ...WORDS, ...DISCORD];
const NAMES = Object.keys(VALIDATORS).sort();
// each validator on the values its rule's pattern can hand it (the digit checks get digits, IBAN upper case and digits)
const DIGITS = ["inn10", "inn12", "ogrn", "ogrnip"];
const domain = (n) => (DIGITS.includes(n) ? [...CARDS, ...NUMBERS].filter((x) => /^[0-9]+$/.test(x))
  : n === "iban" ? IBANS : ["luhn", "card", "snils"].includes(n) ? [...CARDS, ...NUMBERS]
    : n === "discord_bot_token" ? DISCORD : WORDS);
const JOBS = NAMES.map((n) => [n, domain(n)]);

const PY = `
import json, sys
from eventlog.dlp import validators as v
req = json.load(sys.stdin)
out = {"names": sorted(v.VALIDATORS), "answers": [[v.VALIDATORS[n](s) for s in vals] for n, vals in req["jobs"]],
       "entropy": [v.entropy(s) if s else None for s in req["values"]], "length": [len(s) for s in req["values"]]}
json.dump(out, sys.stdout)
`;
const py = JSON.parse(execFileSync("python3", ["-c", PY], {
  cwd: ROOT, env: { ...process.env, PYTHONPATH: ROOT }, input: JSON.stringify({ jobs: JOBS, values: ALL }),
  maxBuffer: 64 * 1024 * 1024,
}));

test("every validator agrees with its Python twin on card, IBAN, check-digit and credential edge values", () => {
  assert.deepEqual(py.names, NAMES);
  let trues = 0;
  JOBS.forEach(([n, vals], k) => {
    const got = vals.map((x) => VALIDATORS[n](x));
    assert.deepEqual(got, py.answers[k], n);
    trues += got.filter(Boolean).length;
    if (n !== "github_crc32") assert.ok(got.includes(true) && got.includes(false), `${n}: both answers`);
  });
  assert.ok(trues > 200, `the values reach both answers (${trues} true)`);
  // the generated card numbers are accepted only for the brand's lengths: both answers occur for every brand prefix
  for (const p of ["4", "51", "2200", "2221", "34", "6011", "3528", "62", "300", "50"]) {
    const ok = CARDS.filter((c) => c.startsWith(p) && !c.includes(" ")).map((c) => VALIDATORS.card(c));
    assert.ok(ok.includes(true) && ok.includes(false), p);
  }
});

test("entropy and code point length agree with Python (astral characters count once)", () => {
  ALL.forEach((s, k) => {
    assert.equal(cpLength(s), py.length[k], JSON.stringify(s));
    if (s) assert.ok(Math.abs(entropy(s) - py.entropy[k]) < 1e-12, JSON.stringify(s));
  });
});

test("hand answers: lengths of the brands, uniform and one-kind values, quotes", () => {
  // Mir (2200–2204) takes 16 to 19 digits, Mastercard 2221–2720 exactly 16, Maestro 50/56–58/63/67 12 to 19 but a card
  // number has at least 13 digits
  const lens = (p) => [12, 13, 15, 16, 17, 19, 20].filter((n) => VALIDATORS.card(withCheck(p + "7".repeat(n - 1 - p.length))));
  assert.deepEqual(lens("2204"), [16, 17, 19]);
  assert.deepEqual(lens("2720"), [16]);
  assert.deepEqual(lens("58"), [13, 15, 16, 17, 19]);
  assert.deepEqual(lens("4"), [13, 16, 19]);
  // a value of one repeated character (astral too) is a placeholder, so never a URL password
  assert.equal(VALIDATORS.url_password(`${E}${E}${E}${E}`), false);
  assert.equal(VALIDATORS.url_password(`${E}${E}${E}x`), true);
  assert.equal(VALIDATORS.url_password("\uFFFFa"), true);
  assert.equal(VALIDATORS.url_password("\uFFFF\uFFFF"), false);
  assert.equal(VALIDATORS.url_password("\u{10000}\u{10000}\u{10000}\u{10000}"), false);
  assert.equal(VALIDATORS.credential("a😀😁😂🤣😃"), true); // one letter is enough for "has a letter or digit"
  assert.equal(VALIDATORS.credential("!a😀😁😂🤣"), true);
  assert.equal(VALIDATORS.credential("\uFFFFa!😀😁😂"), true); // U+FFFF is one code point: the a after it counts
  // quoted values, one kind of character, lengths: tests/vectors/dlp/validators_hand_answers.json (next test)
  // symbols only (astral): no letter or digit, so no credential even quoted
  assert.equal(VALIDATORS.credential(`"${E}😁😂🤣😃😄🥲🙂"`), false);
});

test("hand answers shared with Python (tests/vectors/dlp/validators_hand_answers.json)", () => {
  for (const c of HAND.cases) assert.equal(VALIDATORS[c.validator](c.value), c.expect, `${c.validator}(${c.value}): ${c.why}`);
  for (const e of HAND.entropy) assert.ok(Math.abs(entropy(e.value) - e.bits) < 1e-12, `${e.value}: ${e.why}`);
});
