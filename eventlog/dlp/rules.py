"""The rule file: loading, compiling, and the portability linter.

One rules.json serves Python `re` and JavaScript `RegExp` (compiled with the `u` flag). The linter rejects every
construct whose meaning differs between the two (see docs/dlp.md, "Portable regex subset") and every rule without a
prefilter keyword. Both engines then stay identical through tests/vectors/dlp/.
"""
from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from ..errors import EventlogError
from .validators import VALIDATORS

SEVERITIES = ("critical", "high", "medium", "low")
ACTIONS = ("redact", "block")
FIELDS = {"id", "description", "pattern", "flags", "group", "keywords", "validator", "entropy", "context", "left",
          "stopwords", "severity", "action", "holdback", "anchor", "near"}
NEAR_FIELDS = {"pattern", "group", "entropy", "reason"}
TIERS = ("confirmed", "near_format")
REQUIRED = {"id", "description", "pattern", "keywords", "severity", "action"}
ID_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
# Keywords and context words are matched against lower-cased text: lower-case ASCII, Cyrillic and a little punctuation,
# so str.lower() and String.prototype.toLowerCase() agree on every character involved.
WORD_RE = re.compile(r"[a-z0-9а-яё _:/.\-*=!]+")


class RuleError(EventlogError):
    """The rule file is unreadable or fails the linter."""


@dataclass
class Rule:
    index: int
    id: str
    description: str
    pattern: str
    flags: str
    group: int
    keywords: list[str]
    validator: str | None
    entropy: float | None
    context: dict[str, Any] | None
    left: str
    stopwords: list[str]
    severity: str
    action: str
    holdback: dict[str, Any] | None
    # "keywords": every match starts at an occurrence of a keyword (case-insensitively), so the engines try the regex
    # only there instead of scanning every position (same findings, a fraction of the cost for rules that must begin
    # with a common letter)
    anchor: str | None
    # the near-format tier (docs/dlp.md, "Two tiers"): {pattern, group?, entropy?, reason} or None
    near: dict[str, Any] | None = None
    rx: re.Pattern[str] = field(repr=False, default=None)  # type: ignore[arg-type]  # compiled by _compile, always
    near_rx: re.Pattern[str] | None = field(repr=False, default=None)
    left_rx: re.Pattern[str] | None = field(repr=False, default=None)
    body_rx: re.Pattern[str] | None = field(repr=False, default=None)
    ctx_words: list[tuple[str, bool]] = field(default_factory=list)  # (word, is_stem)


@dataclass
class RuleSet:
    version: int
    rules: list[Rule]
    source: str
    # publicly documented example values (doc["examples"], each with its source): never a finding
    examples: frozenset[str] = frozenset()

    def by_id(self, rule_id: str) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)


def default_path() -> Path:
    return Path(str(resources.files("eventlog.dlp").joinpath("rules.json")))


def read_doc(path: str | Path | None = None) -> tuple[dict[str, Any], str]:
    # the given file, else $EVENTLOG_DLP_RULES (as the tap's dlp.mjs), else the shipped one: every command scans
    # with the rules the tap uses
    p = Path(path or os.environ.get("EVENTLOG_DLP_RULES") or default_path())
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise RuleError(f"cannot read rule file {p}: {exc.strerror}") from None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RuleError(f"{p}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rules"), list):
        raise RuleError(f"{p}: expected an object with a `rules` list")
    return doc, str(p)


def load_rules(path: str | Path | None = None) -> RuleSet:
    """Load, lint and compile. Any lint problem is a RuleError: an engine never runs a non-portable rule."""
    doc, src = read_doc(path)
    problems = lint_doc(doc)
    if problems:
        raise RuleError(f"{src}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    return RuleSet(doc["version"], [_compile(i, r) for i, r in enumerate(doc["rules"])], src,
                   frozenset(e["value"] for e in doc.get("examples") or []))


def _compile(i: int, r: dict[str, Any]) -> Rule:
    rule = Rule(
        index=i, id=r["id"], description=r["description"], pattern=r["pattern"], flags=r.get("flags") or "",
        group=r.get("group") or 0, keywords=list(r["keywords"]), validator=r.get("validator"),
        entropy=r.get("entropy"), context=r.get("context"), left=r.get("left", "A-Za-z0-9_"),
        stopwords=list(r.get("stopwords") or []), severity=r["severity"], action=r["action"],
        holdback=r.get("holdback"), anchor=r.get("anchor"), near=r.get("near"),
    )
    rule.rx = re.compile(rule.pattern, re.IGNORECASE if "i" in rule.flags else 0)
    if rule.near:
        rule.near_rx = re.compile(rule.near["pattern"], re.IGNORECASE if "i" in rule.flags else 0)
    rule.left_rx = re.compile(f"[{rule.left}]") if rule.left else None
    if rule.holdback:
        rule.body_rx = re.compile(f"[{rule.holdback['chars']}]*")
    if rule.context:
        rule.ctx_words = [(w[:-1], True) if w.endswith("*") else (w, False) for w in rule.context["words"]]
    return rule


# --- the linter -----------------------------------------------------------------------------------------------------

_SYNTAX = set("^$\\.*+?()[]{}|/")  # the only punctuation JS (u flag) lets you escape outside a class
_CLASS_ESC = _SYNTAX | {"-"}
_CTRL_ESC = set("nrtfv")
_DIFFERS = {
    "b": r"\b is Unicode-aware in Python, ASCII-only in JS (\bпароль\b never matches in JS)",
    "B": r"\B differs like \b", "w": r"\w is Unicode in Python, ASCII in JS: write [A-Za-z0-9_]",
    "W": r"\W differs like \w", "d": r"\d matches any Unicode digit in Python, ASCII only in JS: write [0-9]",
    "D": r"\D differs like \d", "s": r"\s differs (Python adds \x1c-\x1f, JS adds \ufeff): write [ \t\r\n]",
    "S": r"\S differs like \s", "A": r"\A does not exist in JS", "Z": r"\Z does not exist in JS",
    "z": r"\z is a literal 'z' in JS without u and an error with u", "G": r"\G does not exist in either",
    "p": r"\p{…} does not exist in Python re", "P": r"\P{…} does not exist in Python re",
    "k": r"\k<name> named backreference is JS-only", "N": r"\N{…} is Python-only",
    "a": r"\a is Python-only", "c": r"\cX is JS-only", "h": r"\h does not exist in either",
}


def lint_pattern(pat: str, flags: str = "") -> list[str]:
    """Every construct in `pat` whose meaning differs between Python re and JS RegExp (u flag), or is ambiguous."""
    out: list[str] = []
    i, n = 0, len(pat)
    in_class = False
    class_start = -1
    prev_quant = False  # the previous token was a quantifier (so a following + would be possessive)
    while i < n:
        c = pat[i]
        if c == "\\":
            if i + 1 >= n:
                out.append("trailing backslash")
                break
            e = pat[i + 1]
            if e in _DIFFERS:
                out.append(f"\\{e}: {_DIFFERS[e]}")
            elif e.isdigit():
                out.append(f"\\{e}: backreferences and octal escapes differ between Python and JS")
            elif e == "x":
                if not re.fullmatch(r"[0-9A-Fa-f]{2}", pat[i + 2:i + 4]):
                    out.append(r"\x needs exactly two hex digits")
                i += 2
            elif e == "u":
                if pat[i + 2:i + 3] == "{":
                    out.append(r"\u{…} is JS-only")
                elif not re.fullmatch(r"[0-9A-Fa-f]{4}", pat[i + 2:i + 6]):
                    out.append(r"\u needs exactly four hex digits")
                i += 4
            elif e in _CTRL_ESC:
                pass
            elif e.isalpha():
                out.append(f"\\{e}: unknown escape (an error in JS with u, or a different meaning)")
            elif not (e in _CLASS_ESC if in_class else e in _SYNTAX):
                out.append(f"\\{e}: JS (u flag) rejects escaping {e!r}; write it unescaped")
            i += 2
            prev_quant = False
            continue
        if in_class:
            if c == "[":
                if pat[i + 1:i + 2] in (":", ".", "="):
                    out.append("POSIX class [[:…:]] silently never matches in either engine")
                else:
                    out.append("unescaped [ inside a class: a nested set in Python (FutureWarning), literal in JS")
            elif pat[i:i + 2] in ("&&", "--", "||", "~~") and i > class_start + 1:
                out.append(f"{pat[i:i + 2]!r} inside a class is a set operation in Python's future syntax")
            elif c == "]":
                if i == class_start + 1 or (i == class_start + 2 and pat[class_start + 1] == "^"):
                    out.append("empty class [] / [^]: never matches in JS, a literal ] in Python")
                in_class = False
            i += 1
            prev_quant = False
            continue
        if c == "[":
            in_class, class_start = True, i
            if pat[i + 1:i + 2] == "^":
                class_start = i
            i += 1
            prev_quant = False
            continue
        if c == "(":
            if pat[i + 1:i + 2] == "?":
                head = pat[i + 2:i + 5]
                if not (head.startswith((":", "=", "!")) or head.startswith(("<=", "<!"))):
                    if head.startswith("P"):
                        out.append("(?P…) named groups/backrefs are Python-only: use numbered groups")
                    elif head.startswith("<"):
                        out.append("(?<name>…) named groups differ: use numbered groups")
                    elif head.startswith(">"):
                        out.append("(?>…) atomic groups do not exist in JS")
                    elif head.startswith("#"):
                        out.append("(?#…) comments are Python-only")
                    else:
                        out.append("inline flags (?…) are not JS: use the rule's `flags` field")
            i += 1
            prev_quant = False
            continue
        if c == ".":
            out.append("'.' differs (JS also stops at \\r, U+2028, U+2029): use an explicit class")
        elif c in "^$":
            out.append(f"anchor {c!r}: Python's $ also matches before a final newline; the scanner needs none")
        elif c == "{":
            m = re.match(r"\{([0-9]+)(,([0-9]*))?\}", pat[i:])
            if not m:
                out.append("'{' that is not a {n}, {n,} or {n,m} quantifier ({,m} is literal in JS)")
            else:
                if m.group(3) and int(m.group(3)) < int(m.group(1)):
                    out.append("quantifier {n,m} with m < n")
                i += m.end()
                if pat[i:i + 1] == "+":
                    out.append("possessive quantifier does not exist in JS")
                prev_quant = True
                continue
        elif c == "}":
            out.append("lone '}' is an error in JS with u")
        elif c in "*+?":
            if c == "+" and prev_quant:
                out.append("possessive quantifier (*+, ++, ?+) does not exist in JS")
            prev_quant = c != "?" or not prev_quant
            i += 1
            continue
        elif ord(c) > 127 and "i" in flags:
            out.append("non-ASCII literal with the i flag: case folding differs between engines")
        i += 1
        prev_quant = False
    if in_class:
        out.append("unterminated character class")
    return out


def _lint_words(words: Any, what: str) -> list[str]:
    if not isinstance(words, list) or not words or not all(isinstance(w, str) and w for w in words):
        return [f"{what} must be a non-empty list of strings"]
    return [f"{what} {w!r} must be lower-case ASCII/Cyrillic" for w in words
            if w != w.lower() or not WORD_RE.fullmatch(w)]


def _lint_class(body: Any, what: str) -> list[str]:
    if not isinstance(body, str):
        return [f"{what} must be a string (the inside of a character class)"]
    if body == "":
        return []
    probs = lint_pattern(f"[{body}]")
    try:
        re.compile(f"[{body}]")
    except re.error as exc:
        probs.append(f"does not compile: {exc}")
    return [f"{what}: {p}" for p in probs]


def _lint_regex(pat: str, flags: str, group: Any, prefix: str) -> list[str]:
    """A rule's (prefix "") or its near pattern's (prefix "near."): portable, compiles in Python without a warning,
    cannot match the empty string, and its secret group exists."""
    out = [f"{prefix}pattern: {p}" if prefix else p for p in lint_pattern(pat, flags)]
    rx = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rx = re.compile(pat, re.IGNORECASE if flags else 0)
        except re.error as exc:
            out.append(f"{prefix}pattern does not compile in Python: {exc}")
    # Python's FutureWarnings flag syntax whose meaning will change (nested sets, set operations)
    out += [f"{prefix}pattern: Python warns: {w.message}" if prefix else f"Python warns: {w.message}" for w in caught]
    if rx is not None:
        if rx.search("") is not None:
            out.append(f"{prefix}pattern matches the empty string")
        if not isinstance(group, int) or group < 0 or group > rx.groups:
            out.append(f"{prefix}group {group!r} does not exist in the {prefix[:-1] + ' ' if prefix else ''}pattern")
    return out


def lint_rule(r: Any) -> list[str]:
    if not isinstance(r, dict):
        return ["a rule must be an object"]
    out = [f"unknown field {k!r}" for k in r if k not in FIELDS]
    out += [f"missing field {k!r}" for k in sorted(REQUIRED - set(r))]
    if out:
        return out
    if not isinstance(r["id"], str) or not ID_RE.fullmatch(r["id"]):
        out.append("id must be lower-case kebab-case")
    flags = r.get("flags") or ""
    if flags not in ("", "i"):
        out.append("flags must be '' or 'i' (JS compiles with u, plus i)")
    pat = r["pattern"]
    if not isinstance(pat, str) or not pat:
        return out + ["pattern must be a non-empty string"]
    out += _lint_regex(pat, flags, r.get("group") or 0, "")
    kw = r["keywords"]
    if not kw:
        out.append("no prefilter keyword: every rule needs at least one")
    else:
        out += _lint_words(kw, "keyword")
    v = r.get("validator")
    if v is not None and v not in VALIDATORS:
        out.append(f"unknown validator {v!r} (known: {', '.join(sorted(VALIDATORS))})")
    ent = r.get("entropy")
    if ent is not None and (not isinstance(ent, (int, float)) or not 0 < ent < 8):
        out.append("entropy must be a number of bits per character in (0, 8)")
    ctx = r.get("context")
    if ctx is not None:
        if not isinstance(ctx, dict) or set(ctx) - {"words", "before", "after"}:
            out.append("context must be {words, before, after}")
        else:
            out += _lint_words(ctx.get("words"), "context word")
            for k in ("before", "after"):
                if not isinstance(ctx.get(k, 0), int) or ctx.get(k, 0) < 0:
                    out.append(f"context.{k} must be a non-negative integer")
            if not ctx.get("before") and not ctx.get("after"):
                out.append("context needs a before or after window")
    out += _lint_class(r.get("left", "A-Za-z0-9_"), "left")
    sw = r.get("stopwords") or []
    if sw:
        out += _lint_words(sw, "stopword")
    if r["severity"] not in SEVERITIES:
        out.append(f"severity must be one of {', '.join(SEVERITIES)}")
    if r["action"] not in ACTIONS:
        out.append(f"action must be one of {', '.join(ACTIONS)}")
    if r.get("anchor") not in (None, "keywords"):
        out.append("anchor must be null or 'keywords' (every match starts at a keyword)")
    nr = r.get("near")
    if nr is not None:
        out += _lint_near(nr, flags)
    hb = r.get("holdback")
    if hb is not None:
        if not isinstance(hb, dict) or not {"prefixes", "chars"} <= set(hb) <= {"prefixes", "chars", "left"}:
            out.append("holdback must be {prefixes: [...], chars: <class>, left?: <class>}")
        else:
            p = hb["prefixes"]
            if not isinstance(p, list) or not p or not all(isinstance(x, str) and x for x in p):
                out.append("holdback.prefixes must be a non-empty list of strings")
            out += _lint_class(hb["chars"], "holdback.chars")
            if "left" in hb:
                out += _lint_class(hb["left"], "holdback.left")
    return out


def _lint_near(nr: Any, flags: str) -> list[str]:
    """The near-format pattern of a rule: the same portability rules as the main pattern, a reason from the vendor's
    format, an optional entropy floor and secret group. (That a near match contains one of the rule's keywords, so the
    prefilter selects the rule wherever it can match, is checked by both engines at match time.)"""
    if not isinstance(nr, dict) or set(nr) - NEAR_FIELDS or "pattern" not in nr or "reason" not in nr:
        return ["near must be {pattern, group?, entropy?, reason}"]
    out: list[str] = []
    if flags:
        # a vendor prefix is case-sensitive; and the engines' case folding (FOLD) is not applied to near matches
        out.append("near needs a case-sensitive rule (flags ''): vendor prefixes have one spelling")
    pat = nr["pattern"]
    if not isinstance(pat, str) or not pat:
        return out + ["near.pattern must be a non-empty string"]
    out += _lint_regex(pat, flags, nr.get("group") or 0, "near.")
    ent = nr.get("entropy")
    if ent is not None and (isinstance(ent, bool) or not isinstance(ent, (int, float)) or not 0 < ent < 8):
        out.append("near.entropy must be a number of bits per character in (0, 8)")
    why = nr.get("reason")
    if not isinstance(why, str) or not why.strip():
        out.append("near.reason must say, from the vendor's format, why the prefix is distinctive")
    return out


def lint_doc(doc: dict[str, Any]) -> list[str]:
    """All problems of a rule file, each prefixed with the rule id."""
    out = []
    if doc.get("version") != 1:
        out.append("version must be 1")
    seen: set[str | None] = set()
    for i, r in enumerate(doc.get("rules") or []):
        rid = r.get("id") if isinstance(r, dict) else None
        label = f"rule {rid or '#' + str(i)}"
        if rid in seen:
            out.append(f"{label}: duplicate id")
        seen.add(rid)
        out += [f"{label}: {p}" for p in lint_rule(r)]
    if not doc.get("rules"):
        out.append("no rules")
    ex = doc.get("examples", [])
    if not isinstance(ex, list):
        out.append("examples must be a list")
        ex = []
    for k, e in enumerate(ex):
        if not (isinstance(e, dict) and isinstance(e.get("value"), str) and e["value"]
                and isinstance(e.get("source"), str) and e["source"] and e.get("rule") in seen):
            out.append(f"examples[{k}]: needs a non-empty value, the rule id it silences and its public source")
    return out
