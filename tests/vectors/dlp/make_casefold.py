#!/usr/bin/env python3
"""Regenerate tests/vectors/dlp/casefold.json: where Python `re` and JS `RegExp` disagree on single characters, found by
exhaustive comparison (docs/dlp.md, "Case-insensitive matching").

Every atom of the rules — each literal character and character class of every pattern, compiled with its rule's flags
as the engines compile it (Python `re.IGNORECASE` for "i"; JS "u" + "i"), every `left` and hold-back class (no i), and
the 52 ASCII letters with and without i — is tested against every code point 0..0x10FFFF except surrogates: Python
`re.compile(atom, flags).fullmatch(c)`, JS `new RegExp(atom, flags).test(c)` (tests/vectors/dlp/casefold_atoms.mjs).
Lower-casing (the prefilter, context words) is compared the same way: `str.lower()` against `String#toLowerCase()`.

The table records the disagreements and the fold map both engines apply (eventlog/dlp/engine.py FOLD, runtime/dlp.mjs
FOLD): every non-ASCII code point that either engine's case-insensitive matching equates with an ASCII letter, mapped
to that letter. tests/test_dlp_casefold.py recomputes the table with the Python and Node at hand and checks the file.

    .venv/bin/python tests/vectors/dlp/make_casefold.py [--check]
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = HERE / "casefold.json"
JS = HERE / "casefold_atoms.mjs"
_SYNTAX = set("()|?*+{}^$.")


def atoms_of(pattern: str) -> list[str]:
    """Each literal character (escaped or not) and each character class of a portable pattern, as a regex of its own."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "[":
            j = i + 1
            if pattern[j:j + 1] == "^":
                j += 1
            j += 1  # a ] right after [ or [^ is a member (the linter forbids it anyway)
            while pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            out.append(pattern[i:j + 1])
            i = j + 1
        elif c == "\\":
            k = 6 if pattern[i + 1] == "u" else 4 if pattern[i + 1] == "x" else 2
            out.append(pattern[i:i + k])
            i += k
        elif c == "(" and pattern[i + 1:i + 2] == "?":
            i += 4 if pattern[i + 2:i + 3] == "<" else 3
        elif c == "{" and re.match(r"\{[0-9]+(,[0-9]*)?\}", pattern[i:]):
            i = pattern.index("}", i) + 1
        elif c in _SYNTAX:
            i += 1
        else:
            out.append(c)
            i += 1
    return out


def atoms() -> list[dict]:
    """[{atom, i, where}] without repeats: every atom of rules.json plus the ASCII letters with and without i."""
    doc = json.loads((ROOT / "eventlog" / "dlp" / "rules.json").read_text(encoding="utf-8"))
    seen: dict[tuple[str, bool], set[str]] = {}
    for r in doc["rules"]:
        ci = "i" in (r.get("flags") or "")
        for a in atoms_of(r["pattern"]):
            seen.setdefault((a, ci), set()).add(r["id"])
        for what, body in (("left", r.get("left", "A-Za-z0-9_")), *(
                [("holdback.chars", r["holdback"]["chars"])] if r.get("holdback") else [])):
            if body:
                seen.setdefault((f"[{body}]", False), set()).add(f"{r['id']} {what}")
    for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
        for ci in (True, False):
            seen.setdefault((c, ci), set()).add("ASCII letter")
    return [{"atom": a, "i": ci, "where": sorted(w)} for (a, ci), w in sorted(seen.items())]


def codepoints() -> list[int]:
    return [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


def python_side(items: list[dict]) -> tuple[list[list[int]], dict[int, str]]:
    cps = codepoints()
    chars = [chr(c) for c in cps]
    hits = []
    for it in items:
        fm = re.compile(it["atom"], re.IGNORECASE if it["i"] else 0).fullmatch
        hits.append([c for c, s in zip(cps, chars, strict=True) if fm(s)])
    lower = {c: s.lower() for c, s in zip(cps, chars, strict=True) if s.lower() != s}
    return hits, lower


def js_side(node: str, items: list[dict]) -> dict:
    req = {"atoms": [{"atom": it["atom"], "flags": "u" + ("i" if it["i"] else "")} for it in items]}
    p = subprocess.run([node, str(JS)], input=json.dumps(req).encode(), capture_output=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(p.stderr.decode()[-2000:])
    return json.loads(p.stdout)


def table(node: str) -> dict:
    items = atoms()
    py_hits, py_lower = python_side(items)
    js = js_side(node, items)
    rows = []
    fold: dict[int, str] = {}
    for it, ph, jh in zip(items, py_hits, js["atoms"], strict=True):
        p, j = set(ph), set(jh)
        if len(it["atom"]) == 1 and it["atom"].isascii() and it["atom"].isalpha() and it["i"]:
            for c in p | j:
                if c > 0x7F:
                    fold[c] = it["atom"].lower()
        if p != j:
            rows.append({**it, "python_only": [f"U+{c:04X} {chr(c)}" for c in sorted(p - j)],
                         "js_only": [f"U+{c:04X} {chr(c)}" for c in sorted(j - p)]})
    js_lower = {int(k): v for k, v in js["lower"].items()}
    lower_diff = [{"cp": f"U+{c:04X}", "python": py_lower.get(c, chr(c)), "js": js_lower.get(c, chr(c)),
                   "name": unicodedata.name(chr(c), "")}
                  for c in sorted(set(py_lower) | set(js_lower)) if py_lower.get(c, chr(c)) != js_lower.get(c, chr(c))]
    # the characters the keywords and context words are written in (rules.WORD_RE): a lower-casing difference that
    # produces one of them would make the prefilters disagree
    word = re.compile(r"[a-z0-9а-яё _:/.\-*=!]")
    return {
        "generator": "tests/vectors/dlp/make_casefold.py (+ casefold_atoms.mjs)",
        "python": sys.version.split()[0], "python_unicode": unicodedata.unidata_version,
        "node": js["node"], "node_unicode": js["unicode"], "node_icu": js["icu"],
        "codepoints_tested": len(codepoints()), "atoms_tested": len(items),
        "disagreements": rows,
        "disagreement_count": sum(len(r["python_only"]) + len(r["js_only"]) for r in rows),
        "fold": {f"U+{c:04X} {chr(c)}": x for c, x in sorted(fold.items())},
        "lower_differences": lower_diff,
        "lower_differences_into_keyword_letters": [d for d in lower_diff
                                                   if word.search(d["python"]) or word.search(d["js"])],
        "atoms": items,
    }


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from eventlog import toolchain
    node = str(toolchain.pinned_node())
    t = table(node)
    text = json.dumps(t, ensure_ascii=False, indent=1) + "\n"
    if "--check" in sys.argv:
        old = json.loads(OUT.read_text(encoding="utf-8"))
        keys = ("disagreements", "fold", "lower_differences_into_keyword_letters", "atoms")
        return 0 if all(old[k] == t[k] for k in keys) else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"{t['disagreement_count']} disagreeing (atom, code point) pairs in {len(t['disagreements'])} atoms; "
          f"fold {t['fold']}; {len(t['lower_differences'])} lower-casing differences "
          f"({len(t['lower_differences_into_keyword_letters'])} into keyword letters)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
