"""Case-insensitive matching agrees between the engines (docs/dlp.md, "Case-insensitive matching").

Python `re.IGNORECASE` equates İ (U+0130) and ı (U+0131) with i, JS `/iu` does not; both equate ſ (U+017F) with s and
K (U+212A) with k, which the lower-casing prefilter did not. Both engines fold these (FOLD) before their
case-insensitive steps. Checked here: exhaustively over every code point, with the Python and Node at hand, that after
the fold no atom of an `i` rule matches differently (tests/vectors/dlp/casefold.json is the recorded table), and that
both engines give the same findings — found, not missed — on keyword variants written with the fold characters.
LABELLED TEST CORPUS: the secrets below are fake values."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from dlp_support import REPO, node_bin, run_driver

from eventlog.dlp import engine
from eventlog.dlp.engine import Scanner
from eventlog.dlp.rules import load_rules

VEC = REPO / "tests" / "vectors" / "dlp"
sys.path.insert(0, str(VEC))
import make_casefold  # noqa: E402

KEY = "5c" * 32
TABLE = json.loads((VEC / "casefold.json").read_text(encoding="utf-8"))
FOLD = {int(k.split()[0][2:], 16): v for k, v in TABLE["fold"].items()}
DLP_MJS = REPO / "eventlog" / "patches" / "openclaw" / "runtime" / "dlp.mjs"

# one message per case-insensitive rule that it finds (the keyword part is what the variants rewrite)
BASES = [
    ("secret-assignment", 'API_KEY = "S3cr3tValue99"'),
    ("secret-assignment", "private_token: Zx9QwErTy77aK2"),
    ("secret-assignment", 'const client_secret = "S3cr3tValue99";'),
    ("secret-comparison", 'if ("hunter2hunter2" == user.password) {'),
    ("authorization-header", "Authorization: Bearer abcdEFGH1234ijklMNOP"),
    ("http-header-credential", "curl -sS -H 'X-Auth-Token: abcd1234efgh5678ijkl' https://api.example.test/v1"),
    ("connection-string-password", "Server=db1.internal;Database=app;User Id=sa;Password=Xy7kLm9qZ2;"),
]


def _ranges(cps: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for c in cps:
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def _expand(ranges: list[list[int]]) -> set[int]:
    return {c for a, b in ranges for c in range(a, b + 1)}


JS_ATOMS = r"""
import { readFileSync } from "node:fs";
const atoms = JSON.parse(readFileSync(0, "utf8"));
let all = "";
for (let c = 0; c <= 0x10ffff; c++) if (c < 0xd800 || c > 0xdfff) all += String.fromCodePoint(c);
const out = atoms.map(({ atom, i }) => {
  const rx = new RegExp(atom, "gu" + (i ? "i" : ""));
  const r = [];
  for (const m of all.matchAll(rx)) {
    const c = m[0].codePointAt(0);
    if (r.length && r[r.length - 1][1] === c - 1) r[r.length - 1][1] = c; else r.push([c, c]);
  }
  return r;
});
process.stdout.write(JSON.stringify(out));
"""


def test_after_the_fold_every_case_insensitive_atom_matches_alike() -> None:
    """Every atom of an `i` rule (and every ASCII letter with i), every code point: Python re on c equals JS RegExp on
    fold(c), and equals Python re on fold(c); the fold covers every disagreement. Computed live (a single-character
    atom searched over the string of all code points finds exactly the code points it fullmatches)."""
    atoms = [a for a in make_casefold.atoms() if a["i"]]
    assert len(atoms) > 60
    everything = "".join(chr(c) for c in make_casefold.codepoints())
    p = subprocess.run([node_bin(), "--input-type=module", "-e", JS_ATOMS], input=json.dumps(atoms).encode(),
                       capture_output=True, timeout=900)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    js_all = json.loads(p.stdout)
    disagree: set[int] = set()
    residual = []
    for a, jr in zip(atoms, js_all, strict=True):
        py = {ord(m.group()) for m in re.finditer(a["atom"], everything, re.IGNORECASE)}
        js = _expand(jr)
        disagree |= py ^ js
        js_folded = (js - FOLD.keys()) | {c for c, x in FOLD.items() if ord(x) in js}
        py_folded = (py - FOLD.keys()) | {c for c, x in FOLD.items() if ord(x) in py}
        if py != js_folded or py != py_folded:
            residual.append((a["atom"], sorted(py ^ js_folded)[:10], sorted(py ^ py_folded)[:10]))
    assert not residual, residual
    # the fold is not wider than the disagreements plus the characters /iu equates with a letter (ſ, K)
    assert disagree <= FOLD.keys() and {0x130, 0x131} <= disagree


def test_the_recorded_table_is_the_engines_fold() -> None:
    """casefold.json's fold map is engine.py's FOLD and dlp.mjs's FOLD; its disagreements are all folded."""
    assert {c: x for c, x in engine.FOLD.items()} == FOLD
    p = subprocess.run([node_bin(), "--input-type=module", "-e",
                        f"import {{ FOLD }} from {json.dumps(DLP_MJS.as_uri())}; console.log(JSON.stringify(FOLD))"],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert {ord(k): v for k, v in json.loads(p.stdout).items()} == FOLD
    assert TABLE["disagreement_count"] > 0
    for row in TABLE["disagreements"]:
        if row["i"]:
            assert all(int(x.split()[0][2:], 16) in FOLD for x in row["python_only"] + row["js_only"]), row
    # lower-casing: no difference between str.lower and String#toLowerCase produces a keyword character
    assert TABLE["lower_differences_into_keyword_letters"] == []


def variants() -> list[dict]:
    """Each base message, and the same with one keyword letter written as a fold character (every position, every
    character that folds to it), and with all of them at once."""
    rules = load_rules()
    inv: dict[str, list[str]] = {}
    for c, x in FOLD.items():
        inv.setdefault(x, []).append(chr(c))
    out = []
    for rule, text in BASES:
        r = rules.by_id(rule)
        m = r.rx.search(text)
        assert m is not None, (rule, text)
        gs, ge = m.span(r.group)
        pos = [i for i in range(m.start(), m.end()) if not gs <= i < ge and text[i].lower() in inv]
        assert pos, (rule, text)
        out.append({"id": f"{rule}/{len(out)}", "text": text, "secret": (gs, ge)})
        for i in pos:
            for c in inv[text[i].lower()]:
                out.append({"id": f"{rule}/{len(out)}", "text": text[:i] + c + text[i + 1:], "secret": (gs, ge)})
        all_at_once = "".join(inv[ch.lower()][-1] if i in pos else ch for i, ch in enumerate(text))
        out.append({"id": f"{rule}/{len(out)}", "text": all_at_once, "secret": (gs, ge)})
    return out


def test_engines_find_the_same_on_fold_variants() -> None:
    """Both engines give identical findings (offsets, fingerprints, masks, filtered text) on every variant, plain and
    as HTML, and a finding covers the secret in each (the union: neither engine misses what the other's regex sees)."""
    sc = Scanner(load_rules(), bytes.fromhex(KEY))
    items = []
    for v in variants():
        items.append({"id": v["id"], "text": v["text"], "html": False})
        items.append({"id": v["id"] + "h", "text": f"<b>{v['text'].replace('<', '&lt;')}</b>", "html": True})
    assert len(items) > 50
    js = {o["id"]: o for o in run_driver(items, KEY)}
    secrets = {v["id"]: v["secret"] for v in variants()}
    for it in items:
        res = sc.scan(it["text"], html=it["html"])
        filt = sc.filter(it["text"], html=it["html"])
        py = {"findings": [f.to_dict() for f in res.findings],
              "filter": {"text": filt["text"], "action": filt["action"], "held": filt["held"]}}
        j = js[it["id"]]
        assert {k: j[k] for k in py} == py, (it, j)
        s, e = secrets[it["id"].rstrip("h")]
        if it["html"]:
            s, e = s + 3, e + 3
        assert any(f.start <= s and e <= f.end for f in res.findings), (it, py)
        assert filt["action"] == "redact" and "[REDACTED:" in filt["text"], it
