"""`make mutate-py`: mutation testing of the Python DLP engine, the writer and verify with mutmut (issue 15 item 1).

The tool, its version (pyproject.toml extra `mutate`) and the test selection ([tool.mutmut] in pyproject.toml) are
configured there; this script runs `mutmut run` from a clean `mutants/` (unless --keep), then prints per module the
mutants, kills and survivors and the score = killed / (all mutants that ran or had no test), i.e. a mutant no selected
test reaches counts as a survivor. Timeouts count as killed (the mutant hung the tests). Exit 0 when the run completed,
whatever the score (the scores are recorded in docs/mutation.md, not gated here); exit 1 when mutmut failed.

    tools/mutate/run.py [--keep] [--jobs N] [--survivors] [--json PATH] [--no-run]

--no-run summarises mutants/ as the last run left it (no mutmut run): after the timed `make mutate`,
`tools/mutate/run.py --no-run --survivors` prints every survivor's diff (one `mutmut show` each, ~1 s).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KILLED = {1: "killed", 3: "killed", 36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout",
          37: "killed"}
SURVIVED = {0: "survived", 5: "no tests", 33: "no tests"}


def classify(code: int | None) -> str:
    if code in KILLED:
        return KILLED[code]
    if code in SURVIVED:
        return SURVIVED[code]
    if code is None:
        return "not checked"
    if code == 34:
        return "skipped"
    return "suspicious"  # a crash of the worker (-9/-11 …): neither a kill nor a survivor; listed, not scored


def module_results(mutants: Path) -> dict[str, dict[str, int | None]]:
    out: dict[str, dict[str, int | None]] = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        rel = meta.relative_to(mutants).as_posix()[: -len(".meta")]
        out[rel] = json.loads(meta.read_text())["exit_code_by_key"]
    return out


def summarise(results: dict[str, dict[str, int | None]]) -> list[dict]:
    rows = []
    for module, codes in results.items():
        kinds = [classify(c) for c in codes.values()]
        n = {k: kinds.count(k) for k in ("killed", "timeout", "survived", "no tests", "suspicious", "not checked",
                                         "skipped")}
        killed = n["killed"] + n["timeout"]
        scored = killed + n["survived"] + n["no tests"]
        rows.append({"module": module, "mutants": len(kinds), **n,
                     "score": round(killed / scored, 3) if scored else None,
                     "survivors": sorted(k for k, c in codes.items() if classify(c) in ("survived", "no tests"))})
    return rows


def show(name: str) -> str:
    p = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=REPO, capture_output=True, text=True)
    return p.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="reuse mutants/ and mutmut's cached results")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel mutant workers (default: cores)")
    ap.add_argument("--survivors", action="store_true", help="print the diff of every survivor")
    ap.add_argument("--json", type=Path, help="write the per-module summary here")
    ap.add_argument("--no-run", action="store_true", help="only summarise mutants/ of the last run")
    a = ap.parse_args()
    mutants = REPO / "mutants"
    if a.no_run:
        if not mutants.is_dir():
            print("mutate-py: no mutants/ to summarise (run it first)", file=sys.stderr)
            return 2
        return report(summarise(module_results(mutants)), a, None, None)
    if not a.keep and mutants.exists():
        shutil.rmtree(mutants)
    tmp = Path(tempfile.mkdtemp(prefix="mutate-py-"))  # pytest's tmp dirs of the workers, away from everyone else's
    env = {**os.environ, "TMPDIR": str(tmp)}
    t0, c0 = time.monotonic(), os.times()
    p = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(a.jobs)], cwd=REPO, env=env)
    wall, c1 = time.monotonic() - t0, os.times()
    shutil.rmtree(tmp, ignore_errors=True)
    cpu = (c1.children_user + c1.children_system) - (c0.children_user + c0.children_system)
    rows = summarise(module_results(mutants))
    if p.returncode != 0 or not rows:
        print(f"mutate-py: mutmut failed (exit {p.returncode})", file=sys.stderr)
        return 1
    return report(rows, a, wall, cpu)


def report(rows: list[dict], a: argparse.Namespace, wall: float | None, cpu: float | None) -> int:
    if a.survivors:  # after the timing: one `mutmut show` (~1 s) per survivor
        for r in rows:
            for name in r["survivors"]:
                print(f"\n## {name}\n{show(name)}")
    if wall is not None:
        print(f"\nmutate-py: {wall / 60:.1f} min wall, {cpu / 60:.1f} min CPU, {a.jobs} workers")
    # timeouts count as killed and are shown apart: a run slower than its stats run (a loaded machine) can time out a
    # mutant that only made the tests slower
    print(f"{'module':<28} {'mutants':>7} {'killed':>6} {'timeout':>7} {'survived':>8} {'no tests':>8} {'other':>5}"
          "  score")
    for r in rows:
        other = r["suspicious"] + r["not checked"] + r["skipped"]
        score = "-" if r["score"] is None else f"{r['score']:.3f}"
        print(f"{r['module']:<28} {r['mutants']:>7} {r['killed']:>6} {r['timeout']:>7} {r['survived']:>8} "
              f"{r['no tests']:>8} {other:>5}  {score}")
    if a.json and wall is not None:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"wall_s": round(wall), "cpu_s": round(cpu), "jobs": a.jobs, "modules": rows},
                                     indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
