// The shared DLP vectors (tests/vectors/dlp/cases.json) run against the JS engine; pytest runs the same file against
// the Python engine (tests/test_dlp_vectors.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createScanner, loadRules } from "../dlp.mjs";

const VEC = fileURLToPath(new URL("../../../../../tests/vectors/dlp/cases.json", import.meta.url));
const doc = JSON.parse(readFileSync(VEC, "utf8"));
const scanner = createScanner({ rules: loadRules(), key: Buffer.from(doc.key_hex, "hex") });

test("every rule compiles with the u flag", () => {
  const rules = loadRules();
  for (const r of rules.rules) assert.doesNotThrow(() => new RegExp(r.pattern, "u" + (r.flags || "")), r.id);
  assert.equal(scanner.rules.length, rules.rules.length);
});

for (const c of doc.cases) {
  test(`vector ${c.name}`, () => {
    const res = scanner.scan(c.text, { html: c.html, preview: c.preview });
    assert.deepEqual(res.findings.map((f) => f.rule), c.expect_rules);
    assert.deepEqual(res.findings, c.findings);
    assert.equal(res.holdBack, c.holdBack);
    assert.deepEqual(scanner.redact(c.text, res.findings, { html: c.html }), c.redact);
    const f = scanner.filter(c.text, { html: c.html, preview: c.preview });
    assert.deepEqual({ text: f.text, action: f.action, held: f.held }, c.filter);
  });
}

for (const [name, frame] of [["emoji-before-key", "Sure 😀 here it is: "], ["emoji-before-card", "Sure 😀 the card is "]])
test(`a growing preview never shows a prefix of the secret (${name})`, () => {
  const c = doc.cases.find((x) => x.name === name);
  const f = c.findings[0];
  const secret = Array.from(c.text).slice(f.start, f.end).join("");
  const full = `${frame}${secret} — keep it safe`;
  const cps = Array.from(full);
  for (let n = 1; n <= cps.length; n++) {
    const shown = scanner.filter(cps.slice(0, n).join(""), { preview: true }).text;
    for (let k = 3; k <= secret.length; k++) {
      // any shown piece of the secret of length >= 3 starting at its first character is a leaked prefix
      if (shown.includes(secret.slice(0, k))) assert.fail(`prefix of ${k} chars shown at n=${n}`);
    }
  }
});
