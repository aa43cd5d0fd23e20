"""The Python engine's keyword prefilter: which rules have a keyword in the lower-cased text, in a few regex scans.

The selection is exactly "some keyword of the rule is a substring of the lower-cased text" (the JS engine's prefilter
selects the same set in its own way); only the cost differs. CPython has no multi-needle search, and one `k in text`
costs 1–4 µs per 2.4 KB message (a message with an emoji is a 4-byte-per-character string), so ~130 keywords cost
~200 µs. Here each keyword is found through its rarest character (its *anchor*): one compiled regex per anchor
character starts with that character as a literal, so `re` skips to its occurrences in a tight C loop, and tries
there, as alternatives, each keyword's rest after the anchor (literals) and the whole keyword behind (a fixed-width
lookbehind).
Rare anchor characters share one regex (a charset prefix: one scan for all of them). Python code runs only per real
keyword occurrence.

Exactness. A regex reports the first alternative that matches at a position; alternatives go longest first, and a
reported keyword also proves every keyword that is a substring of it. Two keywords that could both match at the same
anchor position while neither contains the other go to different regexes ("layers"), so no occurrence is shadowed.
Single-character keywords are one character-class search per set of rules they select. tests/test_dlp_prefilter.py
checks the selection against the plain `k in low` definition on the vectors, the external corpus and random text.
"""
from __future__ import annotations

import re
from typing import Iterable, Mapping

# Characters from rare to common in chat text (punctuation and digits, then Latin, then Cyrillic letters by frequency);
# a character not listed is rarer than all of them.
RARITY = {c: i for i, c in enumerate("_:/*.-0123456789zqxjkvbpygfwmucldrhsnioate"
                                     "ёъфэщцюшжхйчбзгьыяупдмклврстниаео ")}
# anchor characters up to this rank share one regex; the more common ones get a regex each
SHARED_RANK = RARITY["m"]
# keyword occurrences one regex reports before its keywords are looked up one by one instead (bounds the Python loop
# on a text that repeats a keyword: `pay pay pay …`)
MAX_MATCHES = 32


def _anchor(k: str) -> int:
    """Offset of k's rarest character (the first of equals), not the last one: the rest after the anchor is then never
    empty, so every alternative begins with a literal (an alternative that begins with a lookbehind is entered at
    every occurrence of the anchor: a line of 4,000 dashes took 6x the old prefilter)."""
    return min(range(len(k) - 1), key=lambda j: RARITY.get(k[j], -1))


def _offsets(k: str, s: str) -> list[int]:
    """Every offset at which s occurs in k."""
    return [o for o in range(len(k) - len(s) + 1) if k.startswith(s, o)]


def _compatible(a: str, ja: int, b: str, jb: int) -> bool:
    """a and b, aligned on their anchors, agree on every character they share (so both can match at one position)."""
    lo = max(-ja, -jb)
    hi = min(len(a) - ja, len(b) - jb)
    return all(a[ja + x] == b[jb + x] for x in range(lo, hi))


def _contains(a: str, ja: int, b: str, jb: int) -> bool:
    """b's aligned window lies inside a's."""
    return -jb >= -ja and len(b) - jb <= len(a) - ja


class KeywordPrefilter:
    def __init__(self, keywords: Mapping[str, Iterable[int]], track: Iterable[int] = ()) -> None:
        """keywords: lower-cased keyword -> indices of the rules it selects. track: rules whose keyword occurrences
        `scan` also reports (the keyword-anchored rules), as start offsets."""
        kw = {k: frozenset(v) for k, v in keywords.items() if k}
        # a keyword found proves every keyword that is a substring of it
        self._proves = {k: frozenset().union(*(v for s, v in kw.items() if s in k)) for k in kw}
        # tracked rules with a one-character keyword are left to the caller (those are found by a class search)
        self.tracked = frozenset(track) - {i for k, v in kw.items() if len(k) == 1 for i in v}
        # ... and at each occurrence of a keyword, every occurrence of a tracked rule's keyword inside it, as
        # (rule, offset from the keyword's start)
        self._inside = {k: tuple((i, o) for s, v in kw.items() for o in _offsets(k, s) for i in v if i in self.tracked)
                        for k in kw}
        by_set: dict[frozenset[int], list[str]] = {}
        for k, v in kw.items():
            if len(k) == 1:
                by_set.setdefault(v, []).append(k)
        self._singles = [(re.compile("[" + "".join(re.escape(c) for c in sorted(cs)) + "]"), v)
                         for v, cs in by_set.items()]
        groups: dict[str, list[list[tuple[str, int]]]] = {}
        for k in sorted((k for k in kw if len(k) > 1), key=lambda k: (-len(k), k)):
            j = _anchor(k)
            layers = groups.setdefault(k[j], [])
            for layer in layers:
                if not any(_compatible(k, j, o, jo) and not _contains(o, jo, k, j) for o, jo in layer):
                    layer.append((k, j))
                    break
            else:
                layers.append([(k, j)])
        shared: list[list[tuple[str, int]]] = []  # layer number -> keywords of rare anchors
        own: list[list[tuple[str, int]]] = []
        for c, layers in groups.items():
            if RARITY.get(c, -1) <= SHARED_RANK:
                for n, layer in enumerate(layers):
                    if n == len(shared):
                        shared.append([])
                    shared[n] += layer
            else:
                own += layers
        # each regex: (compiled, proved rule sets by group number, (anchor offset, tracked occurrences) by group,
        # its keywords)
        self._scans: list[tuple[re.Pattern[str], list[frozenset[int]],
                                list[tuple[int, tuple[tuple[int, int], ...]]], list[str]]] = []
        for layer in shared + own:
            by_char: dict[str, list[tuple[str, int]]] = {}
            # Within a layer the keywords that match at one position are nested, so the longest proves the rest: the
            # longest must come first. Each alternative begins with the literal rest after the anchor (never empty),
            # which `re` rejects with one comparison.
            for k, j in sorted(layer, key=lambda x: (-len(x[0]), x[0])):
                by_char.setdefault(k[j], []).append((k, j))
            alts: list[str] = []
            # by group number (one empty group per keyword, in order): the rules it proves, and its anchor offset and
            # tracked occurrences
            proves: list[frozenset[int]] = [frozenset()]
            inside: list[tuple[int, tuple[tuple[int, int], ...]]] = [(0, ())]
            for c, ks in by_char.items():
                one = []
                for k, j in ks:
                    # the rest of the keyword consumed, then the whole keyword checked behind
                    one.append(re.escape(k[j + 1:]) + (f"(?<={re.escape(k)})" if j else "") + "()")
                    proves.append(self._proves[k])
                    inside.append((j, self._inside[k]))
                alts.append(f"{re.escape(c)}(?:{'|'.join(one)})")
            words = [k for ks in by_char.values() for k, _ in ks]
            self._scans.append((re.compile("|".join(alts)), proves, inside, words))

    def select(self, low: str) -> set[int]:
        """Indices of the rules with a keyword in `low` (already lower-cased)."""
        return self.scan(low)[0]

    def scan(self, low: str) -> tuple[set[int], dict[int, set[int]]]:
        """(the rules with a keyword in `low`, for each tracked one of them the start offsets of all occurrences of
        its keywords)."""
        sel: set[int] = set()
        starts: dict[int, set[int]] = {}
        for rx, v in self._singles:
            if rx.search(low) is not None:
                sel |= v
        for rx, proves, inside, words in self._scans:
            # a match consumes the keyword's rest, so the next search starts one character after its anchor
            m = rx.search(low)
            n = MAX_MATCHES
            while m is not None:
                n -= 1
                if n < 0:  # a text that repeats a keyword: the plain definition costs less from here
                    self._plain(low, words, sel, starts)
                    break
                g = m.lastindex
                sel |= proves[g]  # type: ignore[index]
                j, occ = inside[g]  # type: ignore[index]
                k0 = m.start() - j
                for i, o in occ:
                    starts.setdefault(i, set()).add(k0 + o)
                m = rx.search(low, m.start() + 1)
        return sel, starts

    def _plain(self, low: str, words: list[str], sel: set[int], starts: dict[int, set[int]]) -> None:
        """What the scans of `words` would add to (sel, starts), by `k in low` and `find`."""
        for k in words:
            i = low.find(k)
            if i < 0:
                continue
            sel |= self._proves[k]
            if self._inside[k]:
                while i >= 0:
                    for r, o in self._inside[k]:
                        starts.setdefault(r, set()).add(i + o)
                    i = low.find(k, i + 1)
