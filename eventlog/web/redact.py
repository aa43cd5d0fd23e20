"""Every text the page shows passes the DLP scanner (eventlog/dlp/engine.py) and is masked before it is rendered.

The page masks whatever the rules find, ignoring the allowlist: a reviewer's "false positive" turns off future alerts,
not masking on a page that anyone with the token can read. A text whose parse mode is unknown (the `messages` view
does not carry it) may be Telegram HTML: it is scanned both as plain text and as HTML (visible text and attribute
values, mapped back to offsets in the text), and the union of the findings is masked. The result is shown as text
(autoescaped), so no tag of it survives as markup.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..dlp.engine import REDACTED, Scanner, open_scanner


class Redactor:
    """One scanner for the page's lifetime (the rules and the root's key load once)."""

    def __init__(self, root: Path) -> None:
        base = open_scanner(root)  # an ephemeral key when the root has none: nothing is written by reading
        self.scanner = Scanner(base.rules, base.key, None)

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, rule) of every finding, plain and (when the text has markup characters) HTML, merged."""
        found = [(f.start, f.end, f.rule) for f in self.scanner.scan(text).findings]
        if "<" in text or "&" in text:
            found += [(f.start, f.end, f.rule) for f in self.scanner.scan(text, html=True).findings]
        found.sort()
        merged: list[tuple[int, int, str]] = []
        for s, e, rule in found:
            if merged and s < merged[-1][1]:
                ps, pe, prule = merged[-1]
                merged[-1] = (ps, max(pe, e), prule)
            else:
                merged.append((s, e, rule))
        return merged

    def text(self, text: Any) -> Any:
        """`text` masked ([REDACTED:rule] for each span); anything that is not a string comes back as it is."""
        if not isinstance(text, str) or not text:
            return text
        out: list[str] = []
        pos = 0
        for s, e, rule in self.spans(text):
            out.append(text[pos:s])
            out.append(REDACTED.format(rule=rule))
            pos = e
        out.append(text[pos:])
        return "".join(out)
