// The reader's fold through the real tap (docs/dlp.md, "What the engines scan: the fold"; issue 25 item 2): a GitHub
// token split by a zero-width space, soft hyphen or word joiner, or written with a fullwidth prefix, is redacted before
// the Bot API call leaves — plain and HTML, whole replies and growing previews — with one alert per leak and nothing
// of it on disk. LABELLED TEST CORPUS: the tokens are generated fake values.
import { test } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { allBytes, botWithTap, createTap, fakeTelegram, leaksPiece, rand, readAll, realDeps, tempRoot } from "./tap-helpers.mjs";
import { foldText } from "../dlp-fold.mjs";

const CHAT = 626262;

async function setup() {
  const root = tempRoot();
  const tg = await fakeTelegram();
  const tap = createTap({ deps: realDeps(root), stderr: () => {} });
  const { bot } = botWithTap(tg, tap);
  return { root, tg, tap, bot, done: async () => { await tg.close(); rmSync(root, { recursive: true, force: true }); } };
}
const alerts = (root) => readAll(root, "dlp").filter((e) => e.event === "dlp:alert");
const split = (tok, z, at = 11) => tok.slice(0, at) + z + tok.slice(at);

for (const [name, z] of [["U+200B", "\u200b"], ["U+00AD", "\u00ad"], ["U+2060", "\u2060"]]) {
  for (const html of [false, true]) {
    test(`a token split by ${name} is redacted before send (${html ? "HTML" : "plain"})`, async () => {
      const s = await setup();
      try {
        const tok = `ghp_${rand(36)}`;
        const body = split(tok, html && z === "\u200b" ? "&#8203;" : z);
        const text = html ? `<b>Your token</b>: <code>${body}</code> (keep it)` : `Your token: ${body} (keep it)`;
        await s.bot.api.sendMessage(CHAT, text, html ? { parse_mode: "HTML" } : {});
        const out = s.tg.requests[0].body.text;
        assert.match(out, /\[REDACTED:github-token\]/);
        assert.equal(leaksPiece(foldText(out), tok), null);
        await s.tap.flush();
        assert.equal(alerts(s.root).length, 1);
        assert.equal(leaksPiece(foldText(allBytes(s.root)), tok), null);
      } finally { await s.done(); }
    });
  }
}

test("a growing preview of a split token never shows a piece of it and ends redacted, with one alert", async () => {
  const s = await setup();
  try {
    const tok = `ghp_${rand(36)}`;
    const full = `Here it is: ${split(tok, "\u200b", 5)} — keep it safe.`;
    const first = await s.bot.api.sendMessage(CHAT, full.slice(0, 8));
    for (let n = 9; n <= full.length; n += 2) {
      await s.bot.api.editMessageText(CHAT, first.message_id, full.slice(0, n)).catch(() => {});
    }
    await s.bot.api.editMessageText(CHAT, first.message_id, full).catch(() => {});
    const shown = s.tg.requests.map((r) => foldText(r.body.text ?? ""));
    for (const t of shown) {
      for (let i = 4; i <= tok.length; i++) assert.ok(!t.includes(tok.slice(0, i)), `preview leaked ${tok.slice(0, i)}`);
    }
    assert.ok(shown.at(-1).includes("[REDACTED:github-token]") && shown.at(-1).endsWith("keep it safe."), shown.at(-1));
    await s.tap.flush();
    assert.equal(alerts(s.root).length, 1);
    assert.equal(leaksPiece(foldText(allBytes(s.root)), tok), null);
  } finally { await s.done(); }
});

test("a preview tail `ghp_<U+200B>Abc` is held back", async () => {
  const s = await setup();
  try {
    const first = await s.bot.api.sendMessage(CHAT, "ok then");
    await s.bot.api.editMessageText(CHAT, first.message_id, "ok then ghp_\u200bAbc");
    assert.equal(s.tg.requests.at(-1).body.text, "ok then ");
  } finally { await s.done(); }
});

test("a fullwidth prefix is redacted", async () => {
  const s = await setup();
  try {
    const tok = `ghp_${rand(36)}`;
    await s.bot.api.sendMessage(CHAT, `token ｇｈｐ＿${tok.slice(4)} ok`);
    const out = s.tg.requests[0].body.text;
    assert.equal(out, "token [REDACTED:github-token] ok");
  } finally { await s.done(); }
});

test("a held tail is released as a reader sees it: a public prefix split by an invisible character, never a body", async () => {
  const { tailReleasable } = await import("../tap-release.mjs");
  const prefixes = ["ghp_", "sk-ant-"];
  assert.equal(tailReleasable("ok gh\u200b", 3, [], { prefixes }), true);
  assert.equal(tailReleasable("ok ghp\u00ad_", 5, [], { prefixes }), true);
  assert.equal(tailReleasable("ok ｇｈｐ＿", 4, [], { prefixes }), true);
  assert.equal(tailReleasable("ok ghp_\u200bAbc", 8, [], { prefixes }), false);
});
