// The reader's fold — the JS twin of eventlog/dlp/fold.py (docs/dlp.md, "What the engines scan: the fold").
// Before matching, every Default_Ignorable_Code_Point is deleted and fullwidth ASCII U+FF01–U+FF5E maps to
// U+0021–U+007E, the ideographic space U+3000 to U+0020: a token split by invisible characters or written in fullwidth
// is the token a reader copies (an emoji's presentation selector or joiner run excepted: EMOJI_RUN). Offsets here
// are UTF-16 units of the original text (dlp.mjs converts to code points afterwards); astral ignorables are deleted
// as whole pairs, so a folded unit is always one original unit.

// Default_Ignorable_Code_Point, Unicode 17.0 (the same table as fold.py's IGNORABLE; tests compare both with
// /\p{Default_Ignorable_Code_Point}/u)
export const IGNORABLE = Object.freeze([
  [0x00ad, 0x00ad], [0x034f, 0x034f], [0x061c, 0x061c], [0x115f, 0x1160], [0x17b4, 0x17b5], [0x180b, 0x180f],
  [0x200b, 0x200f], [0x202a, 0x202e], [0x2060, 0x206f], [0x3164, 0x3164], [0xfe00, 0xfe0f], [0xfeff, 0xfeff],
  [0xffa0, 0xffa0], [0xfff0, 0xfff8], [0x1bca0, 0x1bca3], [0x1d173, 0x1d17a], [0xe0000, 0xe0fff],
].map(Object.freeze));

const hex = (c) => `\\u{${c.toString(16)}}`;
const CLASS = IGNORABLE.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join("");
const DELETE = new RegExp(`[${CLASS}]+`, "gu");
// the fast path: one test of a precompiled class over a text that has none of these characters
const FOLDABLE = new RegExp(`[${CLASS}\\uff01-\\uff5e\\u3000]`, "u");
const WIDE = /[\uff01-\uff5e\u3000]/g;
// A run of only U+200D, U+FE0E, U+FE0F right after a symbol or emoji (a code point >= U+2100 that does not fold) is
// kept: deleting it joins nothing a rule could match (fold.py's _EMOJI_RUN).
const EMOJI_RUN = /^[\u200d\ufe0e\ufe0f]+$/;
const symbolBefore = (t, i) => { // the code point that ends at UTF-16 index i
  const c = t.codePointAt(i >= 2 && t.charCodeAt(i - 1) >= 0xdc00 && t.charCodeAt(i - 1) <= 0xdfff
    && t.charCodeAt(i - 2) >= 0xd800 && t.charCodeAt(i - 2) <= 0xdbff ? i - 2 : i - 1);
  return c >= 0x2100 && !(c >= 0xff01 && c <= 0xff5e) && c !== 0x3000;
};
const narrow = (c) => (c === "\u3000" ? " " : String.fromCharCode(c.charCodeAt(0) - 0xfee0));

/** t folded with its offset map, or null when t has no foldable character. */
export function fold(t) {
  if (!FOLDABLE.test(t)) return null;
  const segF = [0], segO = [0];
  let gone = 0, pos = 0, text = "";
  DELETE.lastIndex = 0;
  for (let m; (m = DELETE.exec(t)) !== null;) {
    const a = m.index, b = a + m[0].length;
    if (a > 0 && EMOJI_RUN.test(m[0]) && symbolBefore(t, a)) continue; // kept: an emoji's selector or joiner
    text += t.slice(pos, a);
    const f = a - gone; // the folded offset of b
    gone += b - a;
    pos = b;
    if (f === segF[segF.length - 1]) segO[segO.length - 1] = b; // a run at a segment's start moves its origin
    else { segF.push(f); segO.push(b); }
  }
  text += t.slice(pos);
  if (WIDE.test(text)) { WIDE.lastIndex = 0; text = text.replace(WIDE, narrow); }
  else if (gone === 0) return null; // only emoji runs: nothing folds
  WIDE.lastIndex = 0;
  const n = t.length;
  /** the original offset of folded offset j (j === text.length: the original's length) */
  const orig = (j) => {
    if (j >= text.length) return n;
    let lo = 0, hi = segF.length - 1; // the last segment starting at or before j
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (segF[mid] <= j) lo = mid; else hi = mid - 1; }
    return segO[lo] + j - segF[lo];
  };
  return { text, orig, span: (s, e) => [orig(s), orig(e - 1) + 1] };
}

/** The folded text alone (t itself when nothing folds). */
export const foldText = (t) => fold(t)?.text ?? t;
