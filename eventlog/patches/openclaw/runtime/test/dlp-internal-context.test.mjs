// OpenClaw's internal-context block streamed as preview edits (issue 25 item 5; docs/dlp.md "OpenClaw's
// internal-context block"): no piece of the BEGIN marker or of the block shows in any preview, the final message
// carries the redaction marker and keeps the reply around it. Expectations follow from the documented rule (span from
// BEGIN to END or to the end of the text; hold-back of a partial marker), not from a captured run.
// tests/test_dlp_internal_context.py runs the same sequence against the Python engine.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createScanner, loadRules } from "../dlp.mjs";

const scanner = createScanner({ rules: loadRules(), key: Buffer.alloc(32, 7) });
const B = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>", E = "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>";
const BODY = '\nConversation info: (openclaw:ctx)\n{"chat_id":"telegram:100200300","sender":{"name":"Ann Example"}}\n';
const FULL = `Sure, here it is.\n${B}${BODY}${E}\n\nThe answer is 42.`;

test("a streamed internal-context block never shows, the final message is redacted around it", () => {
  for (let n = 1; n < FULL.length; n += 3) { // preview edits of growing length, cut anywhere (inside the markers too)
    const { text } = scanner.filter(FULL.slice(0, n), { preview: true });
    assert.ok(!text.includes("<<<B") && !text.includes("Conversation info") && !text.includes("chat_id"), text);
    assert.ok(!text.endsWith("<"), `partial marker shown: ${JSON.stringify(text)}`);
  }
  const fin = scanner.filter(FULL);
  assert.equal(fin.text, "Sure, here it is.\n[REDACTED:openclaw-internal-context]\n\nThe answer is 42.");
  assert.equal(fin.action, "redact");
  assert.deepEqual(fin.findings.map((f) => [f.rule, f.severity, f.action]), [["openclaw-internal-context", "high", "redact"]]);
});

test("a block without END is redacted to the end of the text", () => {
  const fin = scanner.filter(`Answer first.\n${B}${BODY}#session:1 User: hi`);
  assert.equal(fin.text, "Answer first.\n[REDACTED:openclaw-internal-context]");
});

test("text that only resembles the marker is not held or redacted", () => {
  for (const t of ["a <<< b", "<<<BEGIN_SOMETHING_ELSE>>> done.", "1 < 2 and 3 > 2 holds"]) {
    const f = scanner.filter(t, { preview: true });
    assert.deepEqual([f.text, f.held], [t, 0]);
  }
});
