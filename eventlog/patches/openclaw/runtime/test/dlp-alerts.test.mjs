// One alert per leak: the JS decision replays the shared vectors (tests/vectors/dlp/alert_merge.json).
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { AlertMerger } from "../dlp-alerts.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const VEC = JSON.parse(fs.readFileSync(path.join(HERE, "../../../../../tests/vectors/dlp/alert_merge.json"), "utf8"));

for (const seq of VEC.sequences) {
  test(`alert merge: ${seq.name}`, () => {
    const m = new AlertMerger();
    const ids = [];
    seq.steps.forEach((st, i) => {
      let [kind, id] = m.decide(st.chat, st.message_id, st.rule, st.start, st.end, st.field, st.head);
      let got;
      if (kind === "new") { id = `A${i}`; m.add(st.chat, st.message_id, st.rule, st.start, st.end, id, st.field, st.head); got = "new"; }
      else got = `${kind}:${ids.indexOf(id)}`;
      ids.push(kind === "new" ? id : null);
      assert.equal(got, st.expect, `step ${i}`);
    });
  });
}
