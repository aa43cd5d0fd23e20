"""Telegram-HTML awareness: the visible text of a `parse_mode: HTML` payload, mapped back to payload offsets.

OpenClaw renders replies Markdown → HTML, so a key can arrive as `sk-ant-<i>api03</i>-…` or `&#115;k-ant-…`. The
engine scans the visible text (tags removed, entities decoded) and every attribute value (an href can carry
`https://user:pass@host`), then redacts in the payload. The JS twin is eventlog/patches/openclaw/runtime/dlp-html.mjs; both
walk the payload with the same rules, so offsets agree (code points).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

TAG_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>")
TAG_START_RE = re.compile(r"</?[A-Za-z]")
ATTR_RE = re.compile(r"([A-Za-z_:][A-Za-z0-9_:.-]*)(?:[ \t\r\n]*=[ \t\r\n]*(?:\"([^\"]*)\"|'([^']*)'|([^ \t\r\n\"'>]+)))?")
ENTITY_RE = re.compile(r"&(?:#([0-9]{1,7})|#[xX]([0-9A-Fa-f]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));")
PARTIAL_ENTITY_RE = re.compile(r"&(?:#[xX]?[0-9A-Fa-f]{0,7}|[A-Za-z][A-Za-z0-9]{0,31})")
NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'", "nbsp": "\u00a0"}


@dataclass
class Segment:
    """A piece of decoded text and where each of its code points came from in the payload. Stored as pieces (a run of
    plain characters, or one decoded entity) and mapped on demand: most messages have no finding to map."""
    text: str
    vpos: list[int]     # visible offset where each piece starts
    pstart: list[int]   # payload offset where each piece starts
    pend: list[int]     # payload offset where each piece ends
    single: list[bool]  # the piece is one decoded entity (all of it maps to [pstart, pend))
    visible: bool

    def start(self, i: int) -> int:
        """Payload offset of the i-th code point."""
        k = bisect_right(self.vpos, i) - 1
        return self.pstart[k] if self.single[k] else self.pstart[k] + (i - self.vpos[k])

    def end(self, i: int) -> int:
        """Payload offset just after the i-th code point."""
        k = bisect_right(self.vpos, i) - 1
        return self.pend[k] if self.single[k] else self.pstart[k] + (i - self.vpos[k]) + 1


@dataclass
class Parsed:
    visible: Segment
    attrs: list[Segment] = field(default_factory=list)
    tags: list[tuple[int, int, str, bool]] = field(default_factory=list)  # (start, end, lower name, closing)
    open_tail: int | None = None  # start of an unterminated tag or entity at the very end (for previews)


def _entity(m: re.Match[str]) -> str | None:
    if m.group(3) is not None:
        return NAMED.get(m.group(3))
    v = int(m.group(1), 10) if m.group(1) is not None else int(m.group(2), 16)
    if v == 0 or v > 0x10FFFF or 0xD800 <= v <= 0xDFFF:
        return None
    return chr(v)


SPECIAL_RE = re.compile(r"[<&]")


class _Buf:
    """Collects the pieces of a Segment; plain runs are kept whole (a 2.5 KB message has a few dozen tags and
    entities, not thousands)."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.vpos: list[int] = []
        self.pstart: list[int] = []
        self.pend: list[int] = []
        self.single: list[bool] = []
        self.n = 0

    def run(self, p: str, i: int, j: int) -> None:
        self.chunks.append(p[i:j])
        self.vpos.append(self.n)
        self.pstart.append(i)
        self.pend.append(j)
        self.single.append(False)
        self.n += j - i

    def one(self, ch: str, s: int, e: int) -> None:
        self.chunks.append(ch)
        self.vpos.append(self.n)
        self.pstart.append(s)
        self.pend.append(e)
        self.single.append(True)
        self.n += 1

    def segment(self, visible: bool) -> Segment:
        return Segment("".join(self.chunks), self.vpos, self.pstart, self.pend, self.single, visible)


def _decode(p: str, start: int, end: int, visible: bool) -> Segment:
    b = _Buf()
    i = start
    while i < end:
        j = p.find("&", i, end)
        if j < 0:
            j = end
        if j > i:
            b.run(p, i, j)
            i = j
            continue
        m = ENTITY_RE.match(p, i, end)
        ch = _entity(m) if m else None
        if m is not None and ch is not None:
            b.one(ch, i, m.end())
            i = m.end()
        else:
            b.one("&", i, i + 1)
            i += 1
    return b.segment(visible)


def parse(p: str) -> Parsed:
    b = _Buf()
    attrs: list[Segment] = []
    tags: list[tuple[int, int, str, bool]] = []
    open_tail = None
    i, n = 0, len(p)
    last_gt = p.rfind(">")  # no tag can start after the last '>': skip the regex (keeps hostile input linear)
    while i < n:
        sm = SPECIAL_RE.search(p, i)
        j = sm.start() if sm else n
        if j > i:
            b.run(p, i, j)
            i = j
            continue
        c = p[i]
        if c == "<":
            m = TAG_RE.match(p, i) if i < last_gt else None
            if m:
                tags.append((i, m.end(), m.group(2).lower(), m.group(1) == "/"))
                for am in ATTR_RE.finditer(p, m.start(3), m.end(3)):
                    for g in (2, 3, 4):
                        if am.group(g):
                            attrs.append(_decode(p, am.start(g), am.end(g), False))
                i = m.end()
                continue
            if open_tail is None and i > last_gt and TAG_START_RE.match(p, i):
                open_tail = i
        else:
            m = ENTITY_RE.match(p, i)
            if m:
                ch = _entity(m)
                if ch is not None:
                    b.one(ch, i, m.end())
                    i = m.end()
                    continue
            elif open_tail is None:
                pm = PARTIAL_ENTITY_RE.match(p, i)
                if pm and pm.end() == n:
                    open_tail = i
        b.one(c, i, i + 1)
        i += 1
    return Parsed(b.segment(True), attrs, tags, open_tail)


def closers(tags: list[tuple[int, int, str, bool]], cut: int) -> str:
    """Closing tags for every element still open at `cut` (Telegram rejects unbalanced HTML in a cut preview)."""
    stack: list[str] = []
    for _s, e, name, closing in tags:
        if e > cut:
            break
        if closing:
            if name in stack:
                while stack.pop() != name:
                    pass
        else:
            stack.append(name)
    return "".join(f"</{name}>" for name in reversed(stack))


def tags_within(p: str, tags: list[tuple[int, int, str, bool]], start: int, end: int) -> str:
    """The tags lying inside [start, end) — kept when a span is redacted, so the HTML stays balanced. A tag with
    attributes is re-emitted bare: an attribute inside a redacted span must not carry anything out."""
    out = []
    for s, e, name, closing in tags:
        if s >= start and e <= end:
            out.append(f"</{name}>" if closing else (p[s:e] if e - s == len(name) + 2 else f"<{name}>"))
    return "".join(out)
