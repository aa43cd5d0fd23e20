// The scanner itself (dlp.mjs) on what the vectors and the HTML twin test lack (issue 15 item 1: the dlp.mjs mutants
// that survived them). (1) The conformance idea again — the JS engine and the Python engine (eventlog/dlp/engine.py,
// an independent implementation of the same contract) on the same inputs must give the same findings, hold-back and
// filtered text for the full text and every prefix as a preview: astral text around, inside and between secrets and
// their context words (code point offsets, context windows counted in code points), a rule file with the rule shapes
// rules.json does not use (no flags, no left class, an empty left class, an optional reported group, a hold-back with
// its own left class, stopwords, entropy, context after the candidate, keyword-anchored rules with interleaved
// keywords, a documented example value), and an allowlist that drops some findings of a text (the overlap resolution
// after it). Python is spawned once. (2) Hand answers: the refusals of a bad rule file, arguments or key file, the
// defaults of scan/redact, the scanner's rule list.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtempSync, writeFileSync, rmSync, mkdirSync, statSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createScanner, loadRules, loadKey, defaultRulesPath } from "../dlp.mjs";

const ROOT = fileURLToPath(new URL("../../../../../", import.meta.url));
const KEY = "3a".repeat(32);
const KEYBUF = Buffer.from(KEY, "hex");
const DIR = mkdtempSync(join(tmpdir(), "dlp-engine-twin-"));
process.on("exit", () => rmSync(DIR, { recursive: true, force: true }));

const GH = "ghu_yEN5qBHLVar1uFJtGed4GJDwuDosUo4ej43e";
const AWS = "AKIAUAQDSSJOFTYZ6VBG";
const IBAN = "GB36847025572654632566";
const INN = "7707083893"; // ИНН-10 of Sberbank, as published in its own registration data (check digit 3)
const CARD = "2221785631798936";
const E = "😀", M = "𝔘", F = "🇷🇺";

// (a) real rules, astral text. The context windows are 40 (ИНН) / 60 before + 40 after (card) code points: with n
// astral characters between word and number the word is inside the window for small n and outside for large n, and
// a window counted in UTF-16 units would lose it twice as early.
const ASTRAL = [
  `${E} ${GH} ${M}${M} ${IBAN} ${F}`, `${E}${GH}${E}`, `x${M}${AWS}${M}`, `${F}${F} password: Hunter${E}42x!`,
  `${M} https://deploy:S3cr${E}tPassw0rd@git.example.com/r.git ${E}`, `${E}${E} token=${GH}${GH} ${M}`,
  `<b>${E}</b> ${GH} <i>${M}${IBAN}</i>`, `${E}\uD800 ${GH} \uDC00${AWS}`, `İİ инн ${E} ${INN} İnn ${INN}`,
  `${E}${E}${E}${E} sk-ant-api03-${"Ab3".repeat(31)}AA`, `ИНН\uD83D ${INN}`,
  // a masked secret that begins with astral characters (mask keeps its first code points, not units)
  `https://u:${E}${M}${F}Passw0rd1@h.example/ ok`,
];
// whole-word context: the letters at the ends of the ranges a-z, а-я, ё and the characters just outside them, right
// before and right after the word
for (const c of ["a", "z", "`", "{", "а", "я", "ё", "ж", "ѐ", "Я", "Ё", "1", "_"]) {
  ASTRAL.push(`${c}inn ${INN}`, `inn${c} ${INN}`, `${c}инн ${INN}`, `инн${c} ${INN}`);
}
for (const n of [34, 35, 36, 37, 38]) ASTRAL.push(`инн ${E.repeat(n)} ${INN}`);
for (const n of [17, 18, 19, 20]) ASTRAL.push(`visa ${E.repeat(n)}${M.repeat(n)}${CARD}`);
for (const n of [33, 34, 35, 36]) ASTRAL.push(`${CARD} ${E.repeat(n)} card`, `${CARD}${M.repeat(n)}card.`);
for (const n of [58, 59, 60, 61]) ASTRAL.push(`card${F.repeat(n / 2)}${"x".repeat(n % 2)} ${CARD}`);
// a text longer than the prefilter's first lower-case buffer (4096 units), its keyword and secret at the end: no
// prefixes
const LONG = `${"Съешь же ещё этих мягких французских булок ".repeat(100)}${E} password: Hunter42x! ${GH}`;

// (b) a rule file with the shapes rules.json lacks (linted by the Python side, so portable by construction)
const RULES = {
  version: 1, name: "twin", comment: "test rule shapes",
  rules: [
    { id: "no-flags", description: "no flags, no left: the default left class", pattern: "zz[0-9]{4}", keywords: ["zz"],
      severity: "low", action: "redact" },
    { id: "ci-no-left", description: "i flag, empty left", flags: "i", left: "", pattern: "qq-[a-z]{3}",
      keywords: ["qq-"], severity: "low", action: "redact" },
    { id: "optional-group", description: "an optional reported group", pattern: "val(?:=([0-9]{3}))?", group: 1,
      keywords: ["val"], severity: "low", action: "redact" },
    { id: "hold-no-left", description: "hold-back with an empty left class", pattern: "HB_[A-Z]{6}", keywords: ["hb_"],
      severity: "high", action: "redact", holdback: { prefixes: ["HB_", "H"], chars: "A-Z", left: "" } },
    { id: "hold-own-left", description: "hold-back with its own left class", pattern: "YY[0-9]{5}", keywords: ["yy"],
      left: "A-Z", severity: "high", action: "redact", holdback: { prefixes: ["YY"], chars: "0-9", left: "x" } },
    { id: "hold-rule-left", description: "hold-back using the rule's left class", pattern: "WW[0-9]{5}",
      keywords: ["ww"], left: "A-Z", severity: "high", action: "redact", holdback: { prefixes: ["WW", "9W"], chars: "0-9" } },
    { id: "stop", description: "stopwords", pattern: "ST[a-z]{6}", keywords: ["st"], stopwords: ["test", "mple"],
      severity: "low", action: "redact" },
    { id: "entropy", description: "entropy floor", pattern: "EN[a-z]{8}", keywords: ["en"], entropy: 2.5,
      severity: "low", action: "redact" },
    { id: "ctx-both", description: "context before and after, stems", pattern: "n:[0-9]{6}", keywords: ["n:"],
      context: { words: ["abc*", "word", "ёж"], before: 6, after: 5 }, severity: "medium", action: "redact" },
    { id: "ctx-after", description: "context after only", pattern: "m:[0-9]{4}", keywords: ["m:"],
      context: { words: ["tail"], after: 6 }, severity: "medium", action: "redact" },
    { id: "block-me", description: "a block rule", pattern: "BLOCKME[0-9]", keywords: ["blockme"],
      severity: "critical", action: "block" },
    { id: "anchored", description: "keyword-anchored, interleaved keywords", flags: "i", anchor: "keywords", group: 1,
      pattern: "(?:foo|bar)=([a-z]{2,})", keywords: ["foo", "bar"], severity: "high", action: "redact" },
    { id: "ctx-one", description: "a context window of one code point", left: "", pattern: "p:[0-9]{4}",
      keywords: ["p:"], context: { words: ["x"], before: 1 }, severity: "medium", action: "redact" },
    { id: "hold-gt", description: "a hold-back whose body may hold a '>'", pattern: "GT[0-9]{6}", keywords: ["gt"],
      severity: "high", action: "redact", holdback: { prefixes: ["GT"], chars: "0-9>" } },
    { id: "astral-start", description: "a rejected match that starts with an astral character", left: "",
      pattern: "[^ ]?q[0-9]{4}", keywords: ["q"], severity: "low", action: "redact" },
    { id: "hold-astral", description: "hold-back classes with a range of astral characters", pattern: "EM[0-9]{4}",
      keywords: ["em"], severity: "high", action: "redact", holdback: { prefixes: ["EM"], chars: "0-9😀-🙏", left: "😀-🙏" } },
    { id: "left-astral", description: "a left class of astral characters", pattern: "LA[0-9]{3}", left: "😀-🙏",
      keywords: ["la"], severity: "low", action: "redact" },
    { id: "overlap-long", description: "overlaps the next", pattern: "OV[0-9]{6}", keywords: ["ov"],
      severity: "low", action: "redact" },
    { id: "overlap-short", description: "overlaps the previous", left: "", pattern: "[0-9]{3}OV", keywords: ["ov"],
      severity: "low", action: "redact" },
  ],
  examples: [{ value: "zz0000", rule: "no-flags", source: "test: a documented example is never a finding" },
    { value: "😀q1234", rule: "astral-start", source: "test: rejects a match that starts with an astral character" }],
};
const RULES_PATH = join(DIR, "rules.json");
writeFileSync(RULES_PATH, JSON.stringify(RULES));
const CUSTOM = [
  "zz1234 azz1234 _zz1234 -zz1234 zz0000 ZZ1234", "QQ-abc xqq-abc qq-ABC Qq-aBc", "val=123 val val=12 xval=456",
  "HB_ABCDEF xHB_ABCDEF aHB_AB", "see HB_ABC", "aH", "YY12345 xYY12345 AYY12345 YY123", "x YY12", "xYY12", "AYY1",
  "WW12345 AWW12345 WW1", "AWW1", "AWW", "9W1", "STabcdef STtestxx STsample STqwerty", "ENaaaaaaaa ENabcdefgh",
  "abcdef n:123456 wordn:123456 n:123456 word, n:654321 ёж", "xabc n:123456", "abd n:123456", "ab n:123456", "ab word n:111111 abcx",
  "m:1234 tail m:5678 tails m:4321 ..tail", "ok BLOCKME1 and zz1234", "foo=ab bar=cd FOO=ef xbar=gh foo= bar=ij",
  "barfoo=zz foo=ab", "OV123456OV 123OV OV999999", "zz1234qq-abc", "HH", "xHH", "xp:1234 x p:1234",
  "<b x=GT12> <b x=GT123456>", "😀q1234 a😀q1234 𝔘q1234", "x EM1😀", "😀EM1", "🚀EM1", "😀LA123 xLA123 𝔘LA123 🙏LA123",
  "\uD800AYY12345 \uD800YY12345 \uDC00AYY1", `${E}qq-abc ${M}HB_ABCDEF ${F}n:123456 abc`,
];

// (c) an allowlist holding the fingerprints of some findings of a text: they go, the rest (and what they overlapped)
// stays
const fp = (s) => createHmac("sha256", KEYBUF).update(s, "utf8").digest("hex");
const ALLOW_PATH = join(DIR, "allowlist.json");
writeFileSync(ALLOW_PATH, JSON.stringify({ v: 1, entries: [GH, "OV123456"].map((s) => ({ fingerprint: fp(s), rule: "x" })) }));
const ALLOWED = [`${GH} ${AWS} ${IBAN}`, `${AWS} ${GH}`, `only ${GH}`, `token=${GH}${GH}`];
const ALLOWED_CUSTOM = ["OV123456OV", "OV123456 zz1234", "OV654321OV"];

const PY = `
import json, sys
from pathlib import Path
from eventlog.dlp.engine import Scanner
from eventlog.dlp.keys import Allowlist
from eventlog.dlp.rules import load_rules
req = json.load(sys.stdin)
key = bytes.fromhex(req["key"])
def eng(sc, t, html, preview):
    r = sc.scan(t, html=html, preview=preview)
    f = sc.filter(t, html=html, preview=preview)
    return {"findings": [x.to_dict() for x in r.findings], "holdBack": r.hold_back,
            "filter": {"text": f["text"], "action": f["action"], "held": f["held"]}}
out = []
for job in req["jobs"]:
    allow = Allowlist(Path(job["allow"]), check_every=0) if job["allow"] else None
    sc = Scanner(load_rules(job["rules"]), key, allow)
    out.append([[eng(sc, t, h, False)] + ([eng(sc, t[:k], h, True) for k in range(1, len(t) + 1)] if p else [])
                for t, h, p in job["inputs"]])
json.dump(out, sys.stdout)
`;

const real = loadRules();
const custom = loadRules(RULES_PATH);
const JOBS = [
  { rules: null, allow: null, inputs: [...ASTRAL.map((t) => [t, t.includes("<b>"), true]), [LONG, false, false]] },
  { rules: RULES_PATH, allow: null, inputs: CUSTOM.map((t) => [t, false, true]) },
  { rules: null, allow: ALLOW_PATH, inputs: ALLOWED.map((t) => [t, false, true]) },
  { rules: RULES_PATH, allow: ALLOW_PATH, inputs: ALLOWED_CUSTOM.map((t) => [t, false, true]) },
];
const py = JSON.parse(execFileSync("python3", ["-c", PY], {
  cwd: ROOT, env: { ...process.env, PYTHONPATH: ROOT },
  input: JSON.stringify({ key: KEY, jobs: JOBS }), maxBuffer: 256 * 1024 * 1024,
}));

function agree(job, want) {
  const scanner = createScanner({ rules: job.rules ? custom : real, key: KEYBUF,
    allowlistPath: job.allow, allowlistCheckMs: 0 });
  let findings = 0;
  job.inputs.forEach(([t, html, prefixes], k) => {
    const cps = Array.from(t);
    const texts = [t, ...(prefixes ? cps.map((_, i) => cps.slice(0, i + 1).join("")) : [])];
    assert.equal(want[k].length, texts.length);
    texts.forEach((x, i) => {
      const preview = i > 0;
      const r = scanner.scan(x, { html, preview });
      const f = scanner.filter(x, { html, preview });
      const got = { findings: r.findings, holdBack: r.holdBack, filter: { text: f.text, action: f.action, held: f.held } };
      assert.deepEqual(got, want[k][i], `${JSON.stringify(x)} html=${html} preview=${preview}`);
      findings += r.findings.length;
    });
  });
  return findings;
}

test("astral text around secrets and context words: the JS and Python engines agree for every prefix", () => {
  assert.ok(agree(JOBS[0], py[0]) > 200);
  assert.ok(LONG.length > 4096);
  assert.equal(createScanner({ rules: real, key: KEYBUF }).scan(LONG).findings.length, 2);
  // the context-window inputs really straddle the window's edge: some are findings, some not (both engines)
  const s = createScanner({ rules: real, key: KEYBUF });
  const inn = [34, 35, 36, 37, 38].map((n) => s.scan(`инн ${E.repeat(n)} ${INN}`).findings.length);
  assert.deepEqual(inn, [1, 1, 0, 0, 0]);
  const after = [33, 34, 35, 36].map((n) => s.scan(`${CARD} ${E.repeat(n)} card`).findings.length);
  assert.deepEqual(after, [1, 1, 0, 0]);
});

test("rule shapes rules.json does not use: the JS and Python engines agree for every prefix", () => {
  assert.ok(agree(JOBS[1], py[1]) > 100);
});

test("an allowlist dropping some findings of a text: the JS and Python engines agree for every prefix", () => {
  agree(JOBS[2], py[2]);
  agree(JOBS[3], py[3]);
  const s = createScanner({ rules: custom, key: KEYBUF, allowlistPath: ALLOW_PATH, allowlistCheckMs: 0 });
  // the allowed longer match goes, and the shorter one it overlapped is reported instead
  assert.deepEqual(s.scan("OV123456OV").findings.map((f) => [f.rule, f.start, f.end]), [["overlap-short", 5, 10]]);
  const t = `${GH} ${AWS}`;
  assert.deepEqual(s.scan(t).findings, []); // custom rules: nothing; real rules below
  const r = createScanner({ rules: real, key: KEYBUF, allowlistPath: ALLOW_PATH, allowlistCheckMs: 0 }).scan(t);
  assert.deepEqual(r.findings.map((f) => [f.rule, f.fingerprint]), [["aws-access-key-id", fp(AWS)]]);
});

test("hand answers on the custom rules: defaults, boundaries, groups, anchors", () => {
  const s = createScanner({ rules: custom, key: KEYBUF });
  const spans = (t) => s.scan(t).findings.map((f) => [f.rule, Array.from(t).slice(f.start, f.end).join("")]);
  assert.deepEqual(spans("zz1234 azz1234 -zz1234 zz0000 ZZ1234"), [["no-flags", "zz1234"], ["no-flags", "zz1234"]]);
  assert.deepEqual(spans("xqq-abc QQ-ABC"), [["ci-no-left", "qq-abc"], ["ci-no-left", "QQ-ABC"]]);
  assert.deepEqual(spans("val val=123"), [["optional-group", "123"]]);
  assert.deepEqual(spans("bar-foo=zz barfoo=yy FOO=ab"), [["anchored", "zz"], ["anchored", "ab"]]);
  assert.deepEqual(spans("STsample STqwerty ENaaaaaaaa"), [["stop", "STqwerty"]]);
  assert.deepEqual(spans("word n:123456 m:1234 tail"), [["ctx-both", "n:123456"], ["ctx-after", "m:1234"]]);
  // the stem "abc*" is cut by its * only: "abd" and "ab" are not it, "abcd" is
  assert.deepEqual(["abd n:123456", "ab n:123456", "abcd n:123456"].map((t) => spans(t).length), [0, 0, 1]);
  assert.equal(s.filter("ok BLOCKME1 zz1234").text, "[withheld by DLP: block-me]");
  // hold-back: own left "x" rules out only x; an empty left rules out nothing; the rule's left class for "WW"
  const held = (t) => s.scan(t, { preview: true }).holdBack;
  assert.deepEqual(s.scan("zz1234qq-abc").findings.map((f) => [f.start, f.end]), [[0, 6], [6, 12]]); // touching
  assert.deepEqual(["xp:1234", "x p:1234"].map((t) => spans(t).length), [1, 0]);
  assert.equal(held("HH"), 2);
  // astral hold-back classes: body characters and the left class counted per code point
  assert.deepEqual(["x EM1😀", "😀EM1", "🚀EM1"].map(held), [4, 0, 3]);
  assert.deepEqual(spans("😀LA123 xLA123 𝔘LA123 🙏LA123"), [["left-astral", "LA123"], ["left-astral", "LA123"]]);
  // after a lone high surrogate the character before the match is the one right before it, not the two
  assert.deepEqual(spans("\uD800AYY12345 \uD800YY12345"), [["hold-own-left", "YY12345"]]);
  // a match rejected at an astral character: the next try starts one code point (two units) on
  assert.deepEqual(s.scan("😀q1234").findings.map((f) => [f.rule, f.start, f.end]), [["astral-start", 1, 6]]);
  // plain text is never parsed as HTML: a cut inside "<b …>" stays where it is, and no closing tag is added
  assert.deepEqual(s.filter("<b x=GT12>", { preview: true }), { text: "<b x=", action: "pass", findings: [], held: 5 });
  assert.deepEqual(["x YY12", "xYY12", "AYY12", "aH", "AWW1", "9W1", "a WW1"].map(held), [4, 0, 4, 1, 0, 3, 3]);
  assert.deepEqual(s.rules, RULES.rules.map((r) => r.id));
});

test("redact takes the findings in any order: astral text redacted the same from reversed or shuffled findings", () => {
  const s = createScanner({ rules: real, key: KEYBUF });
  for (const t of [`${E} ${GH} ${M}${M} ${IBAN} ${F} ${AWS} ${E}`, `${F}${AWS}${E}x ${GH}`]) {
    const f = s.scan(t).findings;
    assert.ok(f.length >= 2);
    const want = s.redact(t, f);
    assert.ok(!want.text.includes(GH) && !want.text.includes(AWS) && want.text.startsWith(t.slice(0, 2)), want.text);
    assert.deepEqual(s.redact(t, [...f].reverse()), want);
    assert.deepEqual(s.redact(t, [f[1], f[0], ...f.slice(2)]), want);
  }
});

test("scan and redact default to plain text (html off); preview off holds nothing", () => {
  const s = createScanner({ rules: real, key: KEYBUF });
  const t = `a &lt;b&gt; ${GH.slice(0, 4)}&#${GH.charCodeAt(4)};${GH.slice(5)} <b>${GH}</b>`;
  assert.deepEqual(s.scan(t), s.scan(t, { html: false, preview: false }));
  assert.notDeepEqual(s.scan(t).findings, s.scan(t, { html: true }).findings); // the entity-split token is found only as HTML
  const f = s.scan(t).findings;
  assert.deepEqual(s.redact(t, f), s.redact(t, f, { html: false }));
  assert.equal(s.scan(`see ${GH.slice(0, 6)}`).holdBack, 0);
  assert.equal(s.scan(`see ${GH.slice(0, 6)}`, { preview: true }).holdBack, 6);
});

test("refusals: bad arguments, an unknown validator, a rule file of another version, a damaged or unreadable key", () => {
  assert.throws(() => createScanner({ key: KEYBUF }), /needs the parsed rules\.json/);
  assert.throws(() => createScanner({ rules: { rules: {} }, key: KEYBUF }), /needs the parsed rules\.json/);
  assert.throws(() => createScanner({ rules: real }), /needs the HMAC key/);
  assert.throws(() => createScanner({ rules: real, key: Buffer.alloc(0) }), /needs the HMAC key/);
  const bad = { version: 1, rules: [{ ...RULES.rules[0], validator: "no_such_check" }] };
  assert.throws(() => createScanner({ rules: bad, key: KEYBUF }), /unknown validator no_such_check/);
  const p = join(DIR, "v2.json");
  writeFileSync(p, JSON.stringify({ version: 2, rules: [] }));
  assert.throws(() => loadRules(p), /not a version 1 rule file/);
  writeFileSync(p, JSON.stringify({ version: 1, rules: {} }));
  assert.throws(() => loadRules(p), /not a version 1 rule file/);
  // the rule file named by EVENTLOG_DLP_RULES wins
  const old = process.env.EVENTLOG_DLP_RULES;
  try {
    process.env.EVENTLOG_DLP_RULES = RULES_PATH;
    assert.equal(defaultRulesPath(), RULES_PATH);
    assert.deepEqual(loadRules().rules.map((r) => r.id), RULES.rules.map((r) => r.id));
  } finally {
    if (old === undefined) delete process.env.EVENTLOG_DLP_RULES; else process.env.EVENTLOG_DLP_RULES = old;
  }
  // a damaged key (31 bytes) and a key path that cannot be read (dlp is a file: ENOTDIR, not "missing")
  const r1 = join(DIR, "root1");
  mkdirSync(join(r1, "dlp"), { recursive: true });
  writeFileSync(join(r1, "dlp", "key"), Buffer.alloc(31));
  assert.throws(() => loadKey(r1), /damaged \(31 bytes\)/);
  const r2 = join(DIR, "root2");
  mkdirSync(r2);
  writeFileSync(join(r2, "dlp"), "not a directory");
  assert.throws(() => loadKey(r2), (e) => e.code === "ENOTDIR");
  assert.equal(statSync(join(r2, "dlp")).size, 15);
  // a first use creates <root>/dlp (0700) holding only the key (0600, 32 bytes): no temporary file left behind
  const r3 = join(DIR, "root3");
  const k = loadKey(r3);
  assert.equal(k.length, 32);
  assert.equal(statSync(join(r3, "dlp")).mode & 0o777, 0o700);
  assert.equal(statSync(join(r3, "dlp", "key")).mode & 0o777, 0o600);
  assert.deepEqual(readdirSync(join(r3, "dlp")), ["key"]);
  assert.deepEqual(loadKey(r3), k);
});
