"""The end of `make mutate`: one per-module table of both halves, Python (mutmut) and JS (the scripted runner).

    tools/mutate/table.py [PY_JSON] [JS_JSON]     # defaults: build/mutation-py.json build/mutation-js.json

Reads the summary `tools/mutate/run.py --json` wrote and the report of `tools/mutate/js.py`, prints the wall time of
each half and their sum, then per module: mutants run, killed (timeouts included), timeouts, survived, no tests / no
coverage, and the score = killed / (killed + survived + no tests). For a sampled JS run (every k-th mutant) the score
is an estimate; its binomial standard error sqrt(p(1-p)/n) is printed beside it. A half that did not complete (its
file missing) is said so, not left out silently. Exit 0 when both halves left their results, 1 otherwise.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def js_rows(report: dict) -> list[dict]:
    """Per module of the generated (not named) mutants, as js.py's own table counts them."""
    rows: dict[str, dict] = {}
    for m in report["mutants"]:
        if m.get("op") == "named" or "status" not in m:
            continue
        r = rows.setdefault(m["file"], {"module": m["file"], "killed": 0, "timeout": 0, "survived": 0, "none": 0})
        st = m["status"]
        r["killed"] += st in ("killed", "timeout")
        r["timeout"] += st == "timeout"
        r["survived"] += st == "survived"
        r["none"] += st == "nocov"
    return [rows[k] for k in sorted(rows)]


def py_rows(summary: dict) -> list[dict]:
    return [{"module": r["module"], "killed": r["killed"] + r["timeout"], "timeout": r["timeout"],
             "survived": r["survived"], "none": r["no tests"],
             "other": r["suspicious"] + r["not checked"] + r["skipped"]} for r in summary["modules"]]


def line(half: str, r: dict, sampled: bool) -> str:
    n = r["killed"] + r["survived"] + r["none"]
    p = r["killed"] / n if n else float("nan")
    score = "-" if not n else f"{p:.3f}"
    if sampled and n:
        score += f" ± {math.sqrt(p * (1 - p) / n):.3f}"
    other = r.get("other", 0)
    return (f"{half:<3} {r['module']:<28} {n + other:>7} {r['killed']:>6} {r['timeout']:>7} {r['survived']:>8} "
            f"{r['none']:>9} {other:>5}  {score}")


def main(argv: list[str]) -> int:
    py_path = Path(argv[0]) if argv else REPO / "build" / "mutation-py.json"
    js_path = Path(argv[1]) if len(argv) > 1 else REPO / "build" / "mutation-js.json"
    py = json.loads(py_path.read_text()) if py_path.is_file() else None
    js = json.loads(js_path.read_text()) if js_path.is_file() else None
    print("\n== make mutate: both halves ==")
    walls = []
    if py:
        walls.append(py["wall_s"])
        print(f"Python (mutmut, {py['jobs']} workers): {py['wall_s'] / 60:.1f} min wall, {py['cpu_s'] / 60:.1f} min CPU")
    else:
        print(f"Python: no results ({py_path} missing: the run failed or did not start)")
    sample = (js or {}).get("sample", 1)
    if js:
        walls.append(js["wall_seconds"])
        cpu = f", {js['cpu_seconds'] / 60:.1f} min CPU" if "cpu_seconds" in js else ""
        what = "every mutant" if sample == 1 else f"every {sample}th mutant per module + the named ones"
        print(f"JS ({what}, {js['jobs']} jobs): {js['wall_seconds'] / 60:.1f} min wall{cpu}")
    else:
        print(f"JS: no results ({js_path} missing: the run failed or did not start)")
    if len(walls) == 2:
        print(f"total: {sum(walls) / 60:.1f} min wall (the goal: under 60)")
    print(f"\n{'':<3} {'module':<28} {'mutants':>7} {'killed':>6} {'timeout':>7} {'survived':>8} {'no tests':>9} "
          f"{'other':>5}  score")
    for r in py_rows(py) if py else []:
        print(line("py", r, False))
    for r in js_rows(js) if js else []:
        print(line("js", r, sample > 1))
    print("(killed includes timeouts; score = killed / (killed + survived + no tests); JS 'no tests' = no coverage"
          + ("; ± = binomial standard error of a sampled score" if sample > 1 else "") + ")")
    return 0 if py and js else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
