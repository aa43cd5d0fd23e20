// Case-insensitive rules through the real tap (docs/dlp.md, "Case-insensitive matching"): a secret whose keyword is
// written with İ ı ſ or K (characters Python's re.IGNORECASE equates with ASCII letters, JS /iu partly not) is redacted
// before the Bot API call leaves, as the Python engine finds it. LABELLED TEST CORPUS: the secrets are fake values.
import { test } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { botWithTap, createTap, fakeTelegram, realDeps, tempRoot } from "./tap-helpers.mjs";

const CHAT = 616161;
const CASES = [
  ["APİ_KEY = \"S3cr3tValue99\"", "secret-assignment"], // U+0130: Python matches it as i, /iu did not
  ["apı_key = \"S3cr3tValue99\"", "secret-assignment"], // U+0131
  ["ſecret: \"S3cr3tValue99\"", "secret-assignment"], // U+017F: /iu matched, no keyword reached the prefilter
  ["toKen = \"S3cr3tValue99\"", "secret-assignment"], // U+212A KELVIN SIGN
  ["curl -H 'X-Apİ-Key: abcd1234efgh5678ijkl' https://x.test", "secret-assignment"], // (found first, like X-Api-Key)
  ["AuthorİzatIon: Bearer abcdEFGH1234ijklMNOP", "authorization-header"],
];

for (const [text, rule] of CASES) {
  test(`the tap redacts ${rule} in ${JSON.stringify(text.slice(0, 12))}`, async () => {
    const root = tempRoot();
    const tg = await fakeTelegram();
    const tap = createTap({ deps: realDeps(root), stderr: () => {} });
    const { bot } = botWithTap(tg, tap);
    try {
      await bot.api.sendMessage(CHAT, text);
      assert.equal(tg.requests.length, 1);
      const out = tg.requests[0].body.text;
      assert.match(out, new RegExp(`\\[REDACTED:${rule}\\]`));
      for (const secret of ["S3cr3tValue99", "abcd1234efgh5678ijkl", "abcdEFGH1234ijklMNOP"]) {
        assert.ok(!out.includes(secret), out);
      }
      await tap.flush();
    } finally { await tg.close(); rmSync(root, { recursive: true, force: true }); }
  });
}
