// Vendor token families (issue 25 item 4): the shared vectors tests/vectors/dlp/families.json against the JS engine;
// pytest runs the same file against the Python engine (tests/test_dlp_families.py). Expectations come from the
// documented formats (make_families.py plants generated fake secrets), not from either engine.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createScanner, loadRules } from "../dlp.mjs";
import { VALIDATORS } from "../dlp-validators.mjs";

const doc = JSON.parse(readFileSync(new URL("../../../../../tests/vectors/dlp/families.json", import.meta.url), "utf8"));
const scanner = createScanner({ rules: loadRules(), key: Buffer.alloc(32, 0x19) });

for (const c of doc.cases) {
  test(`family ${c.name}`, () => {
    if (c.preview) {
      const out = scanner.filter(c.text, { preview: true });
      assert.deepEqual({ held: out.held, text: out.text, findings: out.findings }, { held: c.held, text: c.shown, findings: [] });
      return;
    }
    const res = scanner.scan(c.text);
    assert.deepEqual(res.findings.map((f) => ({ rule: f.rule, start: f.start, end: f.end })), c.expect);
    if (c.expect.length) {
      const red = scanner.redact(c.text, res.findings);
      const cps = Array.from(c.text);
      const secret = cps.slice(c.expect[0].start, c.expect[0].end).join("");
      assert.equal(red.action, "redact");
      assert.ok(!red.text.includes(secret) && red.text.includes(`[REDACTED:${c.family}]`));
    }
  });
}

test("validator hand answers shared with Python (families.json)", () => {
  for (const c of doc.validators) assert.equal(VALIDATORS[c.validator](c.value), c.expect, `${c.validator}(${c.value}): ${c.why}`);
});
