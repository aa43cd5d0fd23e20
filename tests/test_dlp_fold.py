"""The reader's fold (docs/dlp.md, "What the engines scan: the fold"; issue 25 item 2): both engines scan a text with its
Default_Ignorable_Code_Point characters deleted and fullwidth ASCII mapped to ASCII, report offsets in the original
text, fingerprint the folded secret. tests/vectors/dlp/fold.json is written by hand (the JS side runs it in
eventlog/patches/openclaw/runtime/test/dlp-fold.test.mjs); the character table is checked against Node's own
/\\p{Default_Ignorable_Code_Point}/u and Python's unicodedata; a property test inserts foldable characters into the
conformance corpus's secrets and asks both engines for the same answer. LABELLED TEST CORPUS: the secrets are fake."""
from __future__ import annotations

import hashlib
import hmac
import json
import random
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from dlp_support import REPO, github_token, node_bin, run_driver

from eventlog.agent.tool import handle
from eventlog.cli.main import cli
from eventlog.dlp import fold as fold_mod
from eventlog.dlp.engine import Scanner
from eventlog.dlp.rules import load_rules
from eventlog.store.writer import EventLog

sys.path.insert(0, str(REPO / "tools"))
import dlp_corpus  # noqa: E402

VEC = json.loads((REPO / "tests" / "vectors" / "dlp" / "fold.json").read_text(encoding="utf-8"))
KEY = bytes.fromhex(VEC["key_hex"])
FOLD_MJS = REPO / "eventlog" / "patches" / "openclaw" / "runtime" / "dlp-fold.mjs"
U = lambda s: int(s[2:], 16)  # noqa: E731  "U+200B" -> 0x200B


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner(load_rules(), KEY)


# -- the character table ------------------------------------------------------------------------------------------------

def test_the_table_is_the_vectors_and_nodes_default_ignorable_property() -> None:
    """fold.py's IGNORABLE == the hand-written ranges == dlp-fold.mjs's IGNORABLE == every code point Node (ICU,
    Unicode 17) puts in \\p{Default_Ignorable_Code_Point}."""
    hand = [(U(a), U(b)) for a, b, _ in VEC["ignorable"]]
    assert list(fold_mod.IGNORABLE) == hand
    js = r"""
import { IGNORABLE } from %s;
const rx = /\p{Default_Ignorable_Code_Point}/u, live = [];
for (let c = 0; c <= 0x10ffff; c++) {
  if (c >= 0xd800 && c <= 0xdfff || !rx.test(String.fromCodePoint(c))) continue;
  if (live.length && live[live.length - 1][1] === c - 1) live[live.length - 1][1] = c; else live.push([c, c]);
}
console.log(JSON.stringify({ table: IGNORABLE, live, unicode: process.versions.unicode }));
""" % json.dumps(FOLD_MJS.as_uri())
    p = subprocess.run([node_bin(), "--input-type=module", "-e", js], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    out = json.loads(p.stdout)
    assert [tuple(x) for x in out["table"]] == hand
    assert [tuple(x) for x in out["live"]] == hand, out["unicode"]


def test_fullwidth_is_the_wide_decomposition() -> None:
    """U+FF01..U+FF5E and U+3000 are exactly the <wide> compatibility forms of ASCII (UnicodeData.txt), and fold.py
    maps each to that ASCII character; nothing else folds outside the ignorables."""
    wide = {c for c in range(0x110000) if unicodedata.decomposition(chr(c)).startswith("<wide> ")
            and int(unicodedata.decomposition(chr(c)).split()[1], 16) < 0x80}
    assert wide == set(range(0xFF01, 0xFF5F)) | {0x3000}
    for c in wide:
        target = chr(int(unicodedata.decomposition(chr(c)).split()[1], 16))
        assert fold_mod.fold_text(chr(c)) == target
    for u in VEC["not_folded"]:
        assert fold_mod.fold(chr(U(u))) is None, u


def test_the_fast_path_class_covers_every_foldable_character() -> None:
    """fold.py's fast-path class (one regex search) matches every code point the fold changes: a text it passes over
    really has nothing to fold."""
    folding = [c for a, b in fold_mod.IGNORABLE for c in range(a, b + 1)] + list(range(0xFF01, 0xFF5F)) + [0x3000]
    assert all(fold_mod._FOLDABLE.match(chr(c)) for c in folding)
    assert all(fold_mod.fold(f"a{chr(c)}b") is not None for c in folding)


# -- the hand-written vectors -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", VEC["fold"], ids=[c["name"] for c in VEC["fold"]])
def test_fold_vector(case: dict[str, Any]) -> None:
    f = fold_mod.fold(case["input"])
    if case["folded"] == case["input"]:
        assert f is None
        return
    assert f is not None and f.text == case["folded"]
    assert [f.orig(j) for j in range(len(f.text))] == case["orig"]
    assert f.orig(len(f.text)) == len(case["input"])


@pytest.mark.parametrize("case", VEC["scan"], ids=[c["name"] for c in VEC["scan"]])
def test_scan_vector(scanner: Scanner, case: dict[str, Any]) -> None:
    res = scanner.scan(case["input"], html=case["html"], preview=case["preview"])
    want = [{k: f[k] for k in ("rule", "start", "end", "masked")} for f in case["findings"]]
    assert [{k: getattr(f, k) for k in ("rule", "start", "end", "masked")} for f in res.findings] == want
    for f, w in zip(res.findings, case["findings"], strict=True):
        assert f.fingerprint == hmac.new(KEY, w["secret"].encode(), hashlib.sha256).hexdigest()
        assert not any(fold_mod.fold(c) for c in f.masked)  # a masked preview shows no invisible character
    assert res.hold_back == case["hold_back"]
    assert scanner.redact(case["input"], res.findings, html=case["html"])[0] == case["redacted"]
    if "filtered" in case:
        filt = scanner.filter(case["input"], html=case["html"], preview=True)
        assert (filt["text"], filt["held"]) == (case["filtered"], case["hold_back"])


def test_an_allowlisted_token_stays_allowed_with_invisible_characters_inside(tmp_path: Path) -> None:
    from eventlog.dlp.keys import Allowlist

    tok = VEC["scan"][0]["findings"][0]["secret"]
    fp = hmac.new(KEY, tok.encode(), hashlib.sha256).hexdigest()
    path = tmp_path / "allowlist.json"
    path.write_text(json.dumps({"version": 1, "entries": [{"fingerprint": fp, "rule": "github-token"}]}))
    sc = Scanner(load_rules(), KEY, Allowlist(path))
    assert sc.scan(f"ok {tok}").findings == []
    assert sc.scan(f"ok {tok[:9]}\u200b\u00ad{tok[9:]}").findings == []


# -- both engines, on random insertions into the corpus's secrets --------------------------------------------------------

def _foldable(r: random.Random, c: str) -> str:
    """A random foldable character to insert, or c rewritten in fullwidth (same length)."""
    if "!" <= c <= "~" and r.random() < 0.3:
        return chr(ord(c) + 0xFEE0)
    a, b = r.choice(fold_mod.IGNORABLE)
    return chr(r.randint(a, b))


def _mutate(r: random.Random, text: str, s: int, e: int) -> tuple[str, list[int]]:
    """text with 1–3 foldable characters put strictly inside [s, e) (or a character there made fullwidth); the
    positions of the inserted characters (before the original character at that position)."""
    chars = list(text)
    ins: list[int] = []
    for p in sorted(r.sample(range(s + 1, e), min(e - s - 1, r.randint(1, 3)))):
        x = _foldable(r, chars[p])
        if len(x) == 1 and ord(x) - 0xFEE0 == ord(chars[p]):
            chars[p] = x
        else:
            ins.append(p)
            chars[p] = x + chars[p]
    return "".join(chars), ins


def test_engines_agree_on_folded_corpus_secrets(scanner: Scanner) -> None:
    """Plain corpus messages with a planted secret get foldable characters inside the secret. Both engines give the same
    findings, hold-back and filtered text (whole texts and growing previews), and the Python findings are the ones of
    the unchanged message, offsets shifted by the insertions, fingerprints and masks unchanged."""
    r = random.Random(2025)
    msgs = [m for m in dlp_corpus.corpus(4000, seed=21) if m["labels"] and not m["html"]]
    items, expect = [], {}
    for m in msgs[:1500]:
        lab = r.choice(m["labels"])
        if lab["end"] - lab["start"] < 2:
            continue
        text, ins = _mutate(r, m["text"], lab["start"], lab["end"])
        base = scanner.scan(m["text"]).findings
        shift = lambda o, le, ins=ins: o + sum(1 for p in ins if (p < o if le else p <= o))  # noqa: E731
        expect[m["id"]] = [dict(f.to_dict(), start=shift(f.start, False), end=shift(f.end, True)) for f in base]
        items.append({"id": m["id"], "text": text})
        cut = r.randint(1, len(text))
        items.append({"id": m["id"] + "p", "text": text[:cut], "preview": True})
    assert len(expect) > 1000
    js = {o["id"]: o for o in run_driver(items, KEY.hex())}
    mismatches = []
    for it in items:
        pv = it.get("preview", False)
        res = scanner.scan(it["text"], preview=pv)
        filt = scanner.filter(it["text"], preview=pv)
        py = {"findings": [f.to_dict() for f in res.findings], "holdBack": res.hold_back,
              "filter": {"text": filt["text"], "action": filt["action"], "held": filt["held"]}}
        j = js[it["id"]]
        if {k: j[k] for k in py} != py:
            mismatches.append((it, py, {k: j[k] for k in py}))
        if not pv and py["findings"] != expect[it["id"]]:
            mismatches.append((it, py["findings"], expect[it["id"]]))
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[0]}"
    # the log re-scan's batch pass gives the per-text findings on these texts too
    whole = [it["text"] for it in items if not it.get("preview")]
    assert scanner.scan_batch(whole) == [scanner.scan(t).findings for t in whole]


# -- the paths that use the engine: at rest, the agent tool ---------------------------------------------------------------



SPLITTERS = ("\u200b", "\u00ad", "\u2060")


@pytest.fixture
def split_log(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "root"
    w = EventLog(root)
    tok = github_token()
    for i, z in enumerate(SPLITTERS):
        w.append({"event": "message:received", "channel": "telegram", "chat_id": "111", "direction": "in",
                  "ts": f"2026-11-29T09:0{i}:00Z", "from": {"id": 111, "username": "u111"},
                  "text": f"my github token is {tok[:11]}{z}{tok[11:]} keep it ({'abc'[i]})"})
    # the question being answered (the tool leaves it out of the hits)
    w.append({"event": "message:received", "channel": "telegram", "chat_id": "111", "direction": "in",
              "ts": "2026-11-29T09:05:00Z", "from": {"id": 111, "username": "u111"}, "text": "what is my github token?"})
    return root, tok


def _no_piece(tok: str, out: str) -> None:
    for i in range(len(tok) - 11):
        assert tok[i:i + 12] not in fold_mod.fold_text(out), (tok[i:i + 12], out)


def test_agent_search_redacts_a_token_split_by_invisible_characters(split_log: tuple[Path, str]) -> None:
    """The issue's case: a GitHub token with U+200B, U+00AD or U+2060 inside came back whole through the agent tool."""
    root, tok = split_log
    out = handle({"tool": "search", "args": {"query": "github token"}, "chat": "111", "requester": "111",
                  "t0_ms": 0, "origin": {}}, root)
    assert out["ok"] and out["hits"] == 3, out
    assert out["text"].count("[REDACTED:github-token]") == 3
    _no_piece(tok, out["text"])
    r = CliRunner().invoke(cli, ["agent", "search", "github token", "--chat", "111", "--root", str(root)],
                           catch_exceptions=False)
    assert r.exit_code == 0 and r.output.count("[REDACTED:github-token]") == 3, r.output
    _no_piece(tok, r.output)


def test_log_rescan_finds_each_split_token_with_one_fingerprint(split_log: tuple[Path, str]) -> None:
    root, tok = split_log
    r = CliRunner().invoke(cli, ["dlp", "scan", "--log", "--json", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert [x["rule"] for x in rows] == ["github-token"] * 3
    assert all(x["new_alert"] for x in rows)
    r = CliRunner().invoke(cli, ["dlp", "alerts", "--json", "--root", str(root)], catch_exceptions=False)
    alerts = [json.loads(x) for x in r.output.splitlines()]
    assert len(alerts) == 3 and len({a["fingerprint"] for a in alerts}) == 1  # one secret, whatever splits it
    assert all(x["start"] == 19 and x["end"] == 19 + len(tok) + 1 for x in rows), rows
    assert all(x["masked"] == tok[:4] + f"…[{len(tok)}]" for x in rows)  # no invisible character in the preview
