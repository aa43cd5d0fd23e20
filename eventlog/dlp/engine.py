"""The Python DLP engine: keyword prefilter → selected rules → boundary/stopwords/entropy/validator/context → findings.

Semantics shared with the JS engine (eventlog/patches/openclaw/runtime/dlp.mjs), proven by tests/vectors/dlp/ and the
conformance corpus:
- offsets are code points of the scanned string (for HTML: of the payload, mapped back from the visible text);
- a rule's regex is searched from position 0; a candidate that fails any check is retried one character later, an
  accepted one continues after its end;
- candidates of all rules are merged: sorted by (start, longer first, rule order), a candidate overlapping an
  earlier kept one is dropped; allowlisted fingerprints are dropped before that;
- hold-back (previews): the number of trailing characters that could be the start of a secret.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Sequence

from ..errors import EventlogError
from . import htmltext
from .fold import Folded
from .fold import fold as reader_fold
from .fold import fold_text
from .keys import Allowlist, allowlist_path, fingerprint, load_key
from .prefilter import KeywordPrefilter
from .rules import Rule, RuleSet, load_rules
from .validators import VALIDATORS, entropy

BLOCK_NOTICE = "[withheld by DLP: {rules}]"
BATCH_SEP = "\n\x00\n"
REDACTED = "[REDACTED:{rule}]"


@dataclass
class Finding:
    rule: str
    start: int
    end: int
    severity: str
    action: str
    fingerprint: str
    masked: str
    # "confirmed": the rule's exact pattern with its checks; "near_format": its `near` pattern matched where the exact
    # one did not (docs/dlp.md, "Two tiers")
    tier: str = "confirmed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ScanResult:
    findings: list[Finding]
    hold_back: int


def mask(secret: str) -> str:
    """A preview that identifies a finding to a reviewer without revealing it: at most 4 leading characters (a quarter
    of the secret), an ellipsis and the length."""
    keep = min(4, len(secret) // 4)
    return f"{secret[:keep]}…[{len(secret)}]"


# A pattern that begins with a quantified character class, `[0-9]{10}`: CPython's `re` finds no first-character set
# for it and runs the whole matcher at every position. `[0-9][0-9]{9}` is the same regex (same matches, same
# backtracking order) and lets `re` skip in C to the positions that can begin a match (~2x on iban and the digit rules).
_LEAD_REPEAT = re.compile(r"(\[(?:\\.|[^\]\\])+\])\{([0-9]+)(?:(,)([0-9]*))?\}(?![?+])")


def fast_pattern(pattern: str) -> str:
    """pattern with a leading `[C]{n,m}` (n >= 1) written as `[C][C]{n-1,m-1}`; any other pattern unchanged."""
    m = _LEAD_REPEAT.match(pattern)
    if m is None or int(m.group(2)) < 1:
        return pattern
    cls, n, comma, hi = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    rest = f"{{{n - 1}}}" if not comma else f"{{{n - 1},{int(hi) - 1 if hi else ''}}}"
    return cls + cls + rest + pattern[m.end():]


# Case folding shared with the JS engine (docs/dlp.md, "Case-insensitive matching"): the non-ASCII characters that
# either engine's case-insensitive regex matching equates with an ASCII letter, found by exhaustive comparison of every
# code point (tests/vectors/dlp/casefold.json). The keyword prefilter and the keyword anchors look at the lower-cased
# text with these folded, so a rule is selected, and tried at the keyword, wherever its `i` regex can match: `APİ_KEY`,
# `apı_key`, `ſecret`. Same length: offsets are unchanged.
FOLD = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}
_FOLDABLE = re.compile("[\u0130\u0131\u017f\u212a]")


def fold(t: str) -> str:
    """t with the FOLD characters replaced by their ASCII letters (t itself when it has none)."""
    return t.translate(FOLD) if _FOLDABLE.search(t) is not None else t


def _letter(c: str) -> bool:
    return "a" <= c <= "z" or "а" <= c <= "я" or c == "ё"


def _has_word(part: str, words: list[tuple[str, bool]]) -> bool:
    """A context word occurs in the lower-cased window with a letter boundary on the left (and on the right unless the
    word is a stem): «инн» must not match inside «длинное»."""
    for w, stem in words:
        i = part.find(w)
        while i >= 0:
            j = i + len(w)
            if (i == 0 or not _letter(part[i - 1])) and (stem or j >= len(part) or not _letter(part[j])):
                return True
            i = part.find(w, i + 1)
    return False


def _occurrences(lower: str, words: list[str]) -> list[int]:
    """Sorted start offsets of every occurrence of any of `words` in `lower`."""
    found: set[int] = set()
    for w in words:
        i = lower.find(w)
        while i >= 0:
            found.add(i)
            i = lower.find(w, i + 1)
    return sorted(found)


def _refreshed(allow: Allowlist) -> Allowlist:
    """The allowlist after re-reading its file if that is due (so the emptiness check sees the current one)."""
    allow.refresh()
    return allow


def _hold_boundary(r: Rule, p: str) -> re.Pattern[str] | None:
    """The characters that must not come right before a held-back fragment of prefix p: the hold-back's own `left`
    class if the rule gives one, else the rule's `left` class if p begins with one of its characters (then p begins
    the match: `sk-`, `eyJ`, a card's first digit), else none (`:A` continues the bot id's digits)."""
    assert r.holdback is not None  # called for hold-back rules only
    left = r.holdback.get("left")
    if left is not None:
        return re.compile(f"[{left}]") if left else None
    if r.left_rx is not None and r.left_rx.match(p[0]):
        return r.left_rx
    return None


NEAR = "near_format"


def near_severity(severity: str) -> str:
    """A near-format finding's severity: one step below its rule's, never below medium (a rule below medium keeps its
    own)."""
    order = ("critical", "high", "medium", "low")
    i = order.index(severity) if severity in order else 0
    return severity if i >= 2 else order[i + 1]


def _get(f: Any, k: str) -> Any:
    return f[k] if isinstance(f, dict) else getattr(f, k)


class Scanner:
    def __init__(self, rules: RuleSet, key: bytes, allowlist: Allowlist | None = None) -> None:
        self.rules = rules
        self.key = key
        self.allowlist = allowlist
        self._examples = rules.examples
        kw: dict[str, list[int]] = {}
        for r in rules.rules:
            for k in r.keywords:
                kw.setdefault(k, []).append(r.index)
        self._prefilter = KeywordPrefilter(kw, track=[r.index for r in rules.rules if r.anchor])
        # rule index -> the compiled search regex (an equivalent, faster spelling of the pattern where one exists)
        self._rx = [r.rx if fast_pattern(r.pattern) == r.pattern else re.compile(fast_pattern(r.pattern), r.rx.flags)
                    for r in rules.rules]
        # the near-format patterns, spelled like the main ones (fast_pattern: same matches)
        self._near_rx: list[re.Pattern[str] | None] = [None if r.near is None or r.near_rx is None else
                         r.near_rx if fast_pattern(r.near["pattern"]) == r.near["pattern"] else
                         re.compile(fast_pattern(r.near["pattern"]), r.near_rx.flags) for r in rules.rules]
        self._hb = [(r, [(p, _hold_boundary(r, p)) for p in r.holdback["prefixes"]]) for r in rules.rules if r.holdback]

    # -- candidates ------------------------------------------------------------------------------------------------
    def _accept(self, r: Rule, t: str, m: Any) -> tuple[int, int] | None:
        ms = m.start()
        if r.left_rx is not None and ms > 0 and r.left_rx.match(t, ms - 1):
            return None
        s, e = m.span(r.group)
        if s < 0:
            return None
        secret = t[s:e]
        if secret in self._examples:
            return None
        if r.stopwords:
            low = secret.lower()
            if any(w in low for w in r.stopwords):
                return None
        if r.entropy is not None and entropy(secret) < r.entropy:
            return None
        if r.validator is not None and not VALIDATORS[r.validator](secret):
            return None
        if r.context is not None:
            b, a = r.context.get("before", 0), r.context.get("after", 0)
            ok = bool(b) and _has_word(t[max(0, s - b):s].lower(), r.ctx_words)
            if not ok and a:
                ok = _has_word(t[e:e + a].lower(), r.ctx_words)
            if not ok:
                return None
        return s, e

    def _accept_near(self, r: Rule, t: str, m: Any) -> tuple[int, int] | None:
        """A near-format candidate: the rule's left boundary, its stopwords and example values, the near entropy floor,
        and one of the rule's keywords inside the match (the prefilter selected the rule on it)."""
        ms = m.start()
        if r.left_rx is not None and ms > 0 and r.left_rx.match(t, ms - 1):
            return None
        near = r.near or {}
        s, e = m.span(near.get("group") or 0)
        if s < 0:
            return None
        secret = t[s:e]
        if secret in self._examples:
            return None
        low = m.group(0).lower()
        if r.stopwords and any(w in secret.lower() for w in r.stopwords):
            return None
        if not any(k in low for k in r.keywords):
            return None
        ent = near.get("entropy")
        if ent is not None and entropy(secret) < ent:
            return None
        return s, e

    def _near(self, r: Rule, t: str) -> list[tuple[int, int, int, int]]:
        rx = self._near_rx[r.index]
        assert rx is not None  # called for rules with a near tier only
        out = []
        pos = 0
        while True:
            m = rx.search(t, pos)
            if m is None:
                break
            span = self._accept_near(r, t, m)
            if span is None:
                pos = m.start() + 1
            else:
                out.append((r.index, span[0], span[1], 1))
                pos = m.end() if m.end() > m.start() else m.start() + 1
        return out

    def candidates(self, t: str) -> list[tuple[int, int, int, int]]:
        """(rule index, start, end, tier) for every accepted match in t, before overlap resolution; tier 0 is
        confirmed, 1 near-format (the rule's `near` pattern)."""
        lower = t.lower()
        # a FOLD character shows in the lower-cased text as a longer text (İ), ı or ſ (K is already k)
        if len(lower) != len(t) or "\u0131" in lower or "\u017f" in lower:
            lower = fold(t).lower()
        selected, kw_starts = self._prefilter.scan(lower)
        tracked = self._prefilter.tracked
        out = []
        rules = self.rules.rules
        same_len = len(lower) == len(t)
        for ri in sorted(selected):
            r = rules[ri]
            rx = self._rx[ri]
            pos = 0
            # anchored rules: every match starts at a keyword occurrence, so the regex is tried only there, in
            # order (the same result as searching every position)
            starts = None
            if r.anchor and same_len:
                starts = sorted(kw_starts.get(ri, ())) if ri in tracked else _occurrences(lower, r.keywords)
            k = 0
            while True:
                if starts is None:
                    m = rx.search(t, pos)
                else:
                    m = None
                    while m is None and k < len(starts):
                        p = starts[k]
                        k += 1
                        if p >= pos:
                            m = rx.match(t, p)
                if m is None:
                    break
                span = self._accept(r, t, m)
                if span is None:
                    pos = m.start() + 1
                else:
                    out.append((ri, span[0], span[1], 0))
                    pos = m.end() if m.end() > m.start() else m.start() + 1
            if self._near_rx[ri] is not None:
                out += self._near(r, t)
        return out

    def spans(self, t: str, f: Folded | None | Literal[True] = True) -> list[tuple[int, int, int, str, int]]:
        """(rule index, start, end, secret, tier) for every accepted match in what a reader sees of t (the fold,
        fold.py), offsets in t, the secret folded. A text with nothing to fold is matched as it is. Otherwise the
        folded text is matched first, and t itself too, for the matches the fold would lose by joining a token to its
        neighbours (`x<U+200B>ghp_…` loses its left boundary); those are kept only where they overlap no folded match
        of their tier or a better one (a confirmed one still beats a folded near-format one in _resolve).
        f: reader_fold(t) when the caller has it (True: not yet computed)."""
        if f is True:
            f = reader_fold(t)
        if f is None:
            return [(ri, s, e, t[s:e], tier) for ri, s, e, tier in self.candidates(t)]
        out = [(ri, *f.span(s, e), f.text[s:e], tier) for ri, s, e, tier in self.candidates(f.text)]
        firsts = [(s, e, tier) for _, s, e, _, tier in out]
        for ri, s, e, tier in self.candidates(t):
            if not any(s < e2 and s2 < e and t2 <= tier for s2, e2, t2 in firsts):
                out.append((ri, s, e, fold_text(t[s:e]), tier))
        return out

    def scan_batch(self, texts: Sequence[str], html: Sequence[bool] | None = None,
                   group: int = 64) -> list[list[Finding]]:
        """Findings of many texts, exactly `scan(t, html=h).findings` for each, with one regex pass over the batch.

        The scanned strings (a plain text, or an HTML payload's visible text and attribute values) are joined with
        "\n\0\n": no rule's pattern can match across a newline and NUL is in no boundary class, so the joint acts
        like the end and start of a string. Candidates in the joined text are a superset of the per-text candidates
        (context windows may only see more words), so only texts with a candidate are scanned again on their own.
        Texts go in groups of `group`: a larger joint text lets more rules through the keyword prefilter."""
        out: list[list[Finding]] = []
        for i in range(0, len(texts), group):
            out += self._scan_group(texts[i:i + group], html[i:i + group] if html is not None else None)
        return out

    def _scan_group(self, texts: Sequence[str], html: Sequence[bool] | None) -> list[list[Finding]]:
        owners: list[int] = []
        starts: list[int] = []
        parts: list[str] = []
        pos = 0
        for i, t in enumerate(texts):
            segs = [t]
            if html is not None and html[i]:
                parsed = htmltext.parse(t)
                segs = [parsed.visible.text, *(a.text for a in parsed.attrs)]
            for seg in segs:
                owners.append(i)
                starts.append(pos)
                parts.append(seg)
                pos += len(seg) + len(BATCH_SEP)
        hit = {owners[bisect_right(starts, c[1]) - 1] for c in self.spans(BATCH_SEP.join(parts))}
        return [self.scan(t, html=bool(html and html[i])).findings if i in hit else [] for i, t in enumerate(texts)]

    # -- hold-back -------------------------------------------------------------------------------------------------
    def hold(self, t: str) -> int:
        """Trailing characters of t that could be the beginning of a secret: a proper prefix of a hold-back literal
        (`s`, `sk`, `-----BEG`), or a full literal followed only by the rule's body characters (`sk-ant-api03-Xy`) —
        in both cases only where the rule could begin a match: a character of the prefix's boundary class right before
        it rules it out (`release` holds no `e`, `task-` no `sk-`, `v2` no `2`)."""
        n = len(t)
        best = 0
        for r, prefixes in self._hb:
            assert r.body_rx is not None  # compiled with the hold-back
            for p, b in prefixes:
                for k in range(min(len(p) - 1, n), 0, -1):
                    if t.endswith(p[:k]) and (b is None or k == n or not b.match(t, n - k - 1)):
                        best = max(best, k)
                        break
                # the tail after each occurrence is body characters up to `end`, already checked beyond it (so
                # a text of back-to-back `-----BEGIN…` headers costs one pass, not one per occurrence)
                i, end = t.rfind(p), n
                while i >= 0 and r.body_rx.fullmatch(t, i + len(p), end):
                    if b is None or i == 0 or not b.match(t, i - 1):
                        best = max(best, n - i)
                    end = i + len(p)
                    i = t.rfind(p, 0, i + len(p) - 1)
        return best

    def held(self, t: str, f: Folded | None | Literal[True] = True) -> int:
        """hold(t), and hold of what a reader sees of t mapped back to t (`ghp_<U+200B>Abc` is held whole): the
        larger. f: reader_fold(t) when the caller has it (True: not yet computed)."""
        h = self.hold(t)
        if f is True:
            f = reader_fold(t)
        if f is not None:
            hf = self.hold(f.text)
            if hf:
                h = max(h, len(t) - f.orig(len(f.text) - hf))
        return h

    # -- public API ------------------------------------------------------------------------------------------------
    def scan(self, text: str, html: bool = False, preview: bool = False) -> ScanResult:
        # (start, end, rule index, secret, tier) in payload offsets
        raw: list[tuple[int, int, int, str, int]] = []
        if html:
            parsed = htmltext.parse(text)
            vis_fold = reader_fold(parsed.visible.text)
            for seg in [parsed.visible, *parsed.attrs]:
                st = seg.text
                for ri, s, e, secret, tier in self.spans(st, vis_fold if seg is parsed.visible else True):
                    raw.append((seg.start(s), seg.end(e - 1), ri, secret, tier))
        else:
            text_fold = reader_fold(text)
            for ri, s, e, secret, tier in self.spans(text, text_fold):
                raw.append((s, e, ri, secret, tier))
        findings = self._resolve(raw)
        hb = 0
        if preview:
            if html:
                vis = parsed.visible
                h = self.held(vis.text, vis_fold)
                cut = vis.start(len(vis.text) - h) if h else len(text)
                if parsed.open_tail is not None:
                    cut = min(cut, parsed.open_tail)
                hb = len(text) - cut
            else:
                hb = self.held(text, text_fold)
        return ScanResult(findings, hb)

    def _resolve(self, raw: list[tuple[int, int, int, str, int]]) -> list[Finding]:
        """Confirmed candidates first, resolved among themselves (sorted by start, longer first, rule order; one
        overlapping an earlier kept one is dropped); then near-format candidates the same way, each also dropped where
        it overlaps a kept confirmed finding: confirmed wins at the same place."""
        rules = self.rules.rules
        allow = self.allowlist
        items: list[list[tuple[int, int, int, str, str]]] = [[], []]
        # with an empty allowlist nothing is dropped before the overlap resolution: fingerprint only what is kept
        lazy = len(raw) > 1 and (allow is None or not _refreshed(allow).fingerprints)
        for s, e, ri, secret, tier in raw:
            if lazy:
                items[tier].append((s, -e, ri, "", secret))
                continue
            fp = fingerprint(self.key, secret)
            if allow is not None and fp in allow:
                continue
            items[tier].append((s, -e, ri, fp, secret))
        out: list[Finding] = []
        for tier, group in enumerate(items):
            group.sort(key=lambda x: (x[0], x[1], x[2]))
            kept = [(f.start, f.end) for f in out]
            last_end = -1
            for s, ne, ri, fp, secret in group:
                if s < last_end or (tier and any(s < ke and ks < -ne for ks, ke in kept)):
                    continue
                r = rules[ri]
                fp = fp or fingerprint(self.key, secret)
                if tier:
                    out.append(Finding(r.id, s, -ne, near_severity(r.severity), "redact", fp, mask(secret), NEAR))
                else:
                    out.append(Finding(r.id, s, -ne, r.severity, r.action, fp, mask(secret)))
                last_end = -ne
        if items[1]:
            out.sort(key=lambda f: f.start)
        return out

    def redact(self, text: str, findings: Sequence[Any], html: bool = False) -> tuple[str, str]:
        """(new text, action): "block" replaces the whole text with a notice, "redact" replaces each span with
        [REDACTED:rule] (keeping the tags inside a span so the HTML stays balanced), "pass" changes nothing."""
        if not findings:
            return text, "pass"
        blocked = sorted({_get(f, "rule") for f in findings if _get(f, "action") == "block"})
        if blocked:
            return BLOCK_NOTICE.format(rules=", ".join(blocked)), "block"
        tags = htmltext.parse(text).tags if html else []
        out = []
        pos = 0
        for f in sorted(findings, key=lambda f: _get(f, "start")):
            s, e = _get(f, "start"), _get(f, "end")
            if s < pos:
                continue
            out.append(text[pos:s])
            out.append(REDACTED.format(rule=_get(f, "rule")))
            if html:
                out.append(htmltext.tags_within(text, tags, s, e))
            pos = e
        out.append(text[pos:])
        return "".join(out), "redact"

    def filter(self, text: str, html: bool = False, preview: bool = False) -> dict[str, Any]:
        """Everything a pre-send filter needs in one call: {text, action, findings, held}. For a preview the held-back
        tail (and any secret crossing it) is cut off, and open HTML tags are closed."""
        res = self.scan(text, html=html, preview=preview)
        findings = res.findings
        if any(f.action == "block" for f in findings):
            t, action = self.redact(text, findings, html)
            return {"text": t, "action": action, "findings": findings, "held": 0}
        cut = len(text) - res.hold_back
        moved = True
        while moved:
            moved = False
            for f in findings:
                if f.start < cut < f.end:
                    cut, moved = f.start, True
        tags: list[tuple[int, int, str, bool]] = []
        if html and cut < len(text):
            tags = htmltext.parse(text).tags
            for s, e, _, _ in tags:
                if s < cut < e:
                    cut = s
        keep = [f for f in findings if f.end <= cut]
        t, action = self.redact(text[:cut], keep, html)
        if html and cut < len(text):
            t += htmltext.closers(tags, cut)
        return {"text": t, "action": action, "findings": findings, "held": len(text) - cut}


def open_scanner(root: Path | None = None, rules_path: str | Path | None = None, key: bytes | None = None) -> Scanner:
    """A scanner with the packaged (or given) rules, the root's key (created on first use) and its allowlist."""
    rules = load_rules(rules_path)
    if key is None:
        if root is None:
            raise EventlogError("a log root or a key is needed")
        key = load_key(root)
    allow = Allowlist(allowlist_path(root)) if root is not None else None
    return Scanner(rules, key, allow)
