"""The reader's fold: what the engines scan instead of the raw text (docs/dlp.md, "What the engines scan: the fold").

A token split by characters a reader does not see (`ghp_abc<U+200B>def…`) or written in fullwidth ASCII (`ｇｈｐ＿…`) is
the token to whoever copies it off the screen. Before matching, both engines (this module and the JS twin
eventlog/patches/openclaw/runtime/dlp-fold.mjs) delete every Default_Ignorable_Code_Point and map fullwidth ASCII
U+FF01–U+FF5E to U+0021–U+007E and the ideographic space U+3000 to U+0020. The fold is global, not per rule: it only
deletes characters no rule can want and maps to ASCII what renders as ASCII, so every rule (Cyrillic ones included)
sees the text a reader sees; the case fold (engine.FOLD) then runs on the folded text as before. One exception: an
emoji's presentation selector or joiner run is kept (_EMOJI_RUN).

Offsets: a folded offset maps back to the original one by segments (a new segment starts after each deleted run), so a
finding covers the original span from its first to its last folded character, the deleted characters inside included.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

# Default_Ignorable_Code_Point, Unicode 17.0 DerivedCoreProperties.txt (unchanged since 9.0; checked against Node's
# /\p{Default_Ignorable_Code_Point}/u and Perl's \p{DI} by tests/test_dlp_fold.py). The whole property, Hangul fillers
# (U+115F U+1160 U+3164 U+FFA0: blank in every font, a known "invisible name" trick) and the unassigned ranges it
# reserves for future invisibles included: deleting them can only join what a reader already sees as joined.
IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
FULLWIDTH = (0xFF01, 0xFF5E)  # → minus 0xFEE0: U+0021–U+007E
IDEOGRAPHIC_SPACE = 0x3000  # → U+0020

_CLASS = "".join(f"\\U{a:08x}" + (f"-\\U{b:08x}" if b != a else "") for a, b in IGNORABLE)
_DELETE = re.compile(f"[{_CLASS}]+")
# The fast path: one search of a precompiled class (after the O(1) ASCII test). `re` checks a class per character as
# a BMP bitmap plus one comparison per astral range, so the astral part is written as two ranges, the first a superset
# (U+1BCA0..U+1D17A: Duployan and musical symbols, rare); a superset hit only costs the exact fold below.
_BMP = "".join(f"\\u{a:04x}" + (f"-\\u{b:04x}" if b != a else "") for a, b in IGNORABLE if b < 0x10000)
_FOLDABLE = re.compile(f"[{_BMP}\\uff01-\\uff5e\\u3000\\U0001bca0-\\U0001d17a\\U000e0000-\\U000e0fff]")
# A run of only U+200D ZWJ, U+FE0E/U+FE0F presentation selectors right after a symbol or emoji (a code point >= U+2100
# that does not fold: `❤️`, `👨‍👩‍👧`, `✔️`) is kept. Deleting it joins nothing a rule could match (no rule's token
# characters are at or above U+2100) and would cost every such chat message a second scan for nothing. After an ASCII
# or Cyrillic letter, a digit or a fullwidth form the same characters are deleted like any other.
_EMOJI_RUN = re.compile("[\u200d\ufe0e\ufe0f]+")


def _symbol(c: str) -> bool:
    o = ord(c)
    return o >= 0x2100 and not (0xFF01 <= o <= 0xFF5E or o == IDEOGRAPHIC_SPACE)


_WIDE = {c: c - 0xFEE0 for c in range(FULLWIDTH[0], FULLWIDTH[1] + 1)} | {IDEOGRAPHIC_SPACE: 0x20}
_WIDE_RX = re.compile(f"[\\U{FULLWIDTH[0]:08x}-\\U{FULLWIDTH[1]:08x}\\u3000]")


@dataclass(frozen=True)
class Folded:
    text: str
    seg_f: list[int]  # folded offset where each segment begins (seg_f[0] == 0)
    seg_o: list[int]  # the original offset of that folded offset
    n: int  # length of the original text

    def orig(self, j: int) -> int:
        """The original offset of folded offset j (j == len(text): the original's length)."""
        if j >= len(self.text):
            return self.n
        k = bisect_right(self.seg_f, j) - 1
        return self.seg_o[k] + j - self.seg_f[k]

    def span(self, s: int, e: int) -> tuple[int, int]:
        """The original span of folded span [s, e) (e > s): from its first to its last character."""
        return self.orig(s), self.orig(e - 1) + 1


def fold(t: str) -> Folded | None:
    """t folded with its offset map, or None when t has no foldable character (the fast path)."""
    if t.isascii() or _FOLDABLE.search(t) is None:  # isascii: O(1), CPython keeps the flag; no foldable is ASCII
        return None
    seg_f, seg_o = [0], [0]
    gone = 0
    parts: list[str] = []
    pos = 0
    for m in _DELETE.finditer(t):
        a, b = m.span()
        if a and _EMOJI_RUN.fullmatch(t, a, b) and _symbol(t[a - 1]):
            continue  # kept: an emoji's presentation selector or joiner (see _EMOJI_RUN)
        parts.append(t[pos:a])
        gone += b - a
        pos = b
        if a - (gone - (b - a)) == seg_f[-1]:
            seg_o[-1] = b  # a deleted run at the start of a segment moves the segment's origin
        else:
            seg_f.append(a - (gone - (b - a)))
            seg_o.append(b)
    parts.append(t[pos:])
    text = "".join(parts) if gone else t
    if _WIDE_RX.search(text) is not None:
        text = text.translate(_WIDE)
    elif not gone:
        return None  # a superset hit of the fast path's class (U+1BCA4..U+1D172), or only emoji runs: nothing folds
    return Folded(text, seg_f, seg_o, len(t))


def fold_text(t: str) -> str:
    """The folded text alone (t itself when nothing folds)."""
    f = fold(t)
    return t if f is None else f.text
