"""Where a mutmut run's time went, from its own records (docs/mutation.md, Run time).

    tools/mutate/cost.py [MUTANTS_DIR] [--limit M C] [--without TEST] [--top N]   # default: mutants/ of the last run

mutmut keeps per mutant its exit code, its wall time and the summed stats-run time `t` of the tests it ran
(`*.meta`), and per test its stats-run time and per function the tests that called it (`mutmut-stats.json`). This
prints the worker-seconds (the sum of the mutants' wall times; divided by the workers ~ the mutation phase) by
outcome, module and function; what the timeouts cost; per slow test (>= 0.4 s) its cost over the survivors (a survivor
runs every test of its function) and how many killed mutants may have reached it (mutmut runs a mutant's tests fastest
first and stops at the first failure, so a killed mutant whose wall time is under half the summed time of the tests
before it never ran it: only the others can be kills that need it); and, for a timeout limit M x (t + C), the
worker-seconds it would have cost and the smallest ratio limit / wall of a survivor (below 1 = a correct mutant
counted as killed by timeout). --without TEST replays that with TEST deselected: `t` and each survivor's wall lose TEST's
stats time (valid only if no kill needed TEST — check that by a run). Stdlib only; reads, never writes.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import classify  # noqa: E402  (a sibling tool script, not the package)


def load(mutants: Path) -> tuple[list[tuple[str, str, str, float, float]], dict, dict]:
    """(module, function, mutant, wall s, t s, outcome) per mutant that ran; test durations; tests per function."""
    stats = json.loads((mutants / "mutmut-stats.json").read_text())
    rows = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        d = json.loads(meta.read_text())
        module = meta.relative_to(mutants).as_posix()[: -len(".py.meta")]
        for key, code in d["exit_code_by_key"].items():
            if key not in d["durations_by_key"]:
                continue
            rows.append((module, key.split("__mutmut_")[0], key, d["durations_by_key"][key],
                         d["estimated_durations_by_key"].get(key, 0.0), classify(code)))
    return rows, stats["duration_by_test"], stats["tests_by_mangled_function_name"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mutants", nargs="?", type=Path, default=Path(__file__).resolve().parents[2] / "mutants")
    ap.add_argument("--limit", nargs=2, type=float, action="append", metavar=("M", "C"),
                    help="a timeout limit M x (t + C) to evaluate (repeatable; default 3 10, 2 5, 2 3)")
    ap.add_argument("--without", action="append", default=[], metavar="TEST", help="replay the limits without TEST")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args(argv)
    if not (a.mutants / "mutmut-stats.json").is_file():
        print(f"cost: {a.mutants} has no mutmut-stats.json (not a mutmut run)", file=sys.stderr)
        return 2
    rows, dur, tests_of = load(a.mutants)
    total = sum(r[3] for r in rows)
    by_kind, n_kind = Counter(), Counter()
    by_mod: dict[str, Counter] = defaultdict(Counter)
    by_fn: dict[str, Counter] = defaultdict(Counter)
    for module, fn, _, wall, _, kind in rows:
        by_kind[kind] += wall
        n_kind[kind] += 1
        by_mod[module][kind] += wall
        by_fn[fn][kind] += wall
    print(f"{len(rows)} mutants ran, {total:.0f} worker-seconds ({total / 120:.1f} min on 2 workers); "
          f"stats-run sum of test times {sum(dur.values()):.1f} s over {len(dur)} tests")
    for kind in sorted(by_kind, key=lambda k: -by_kind[k]):
        print(f"  {kind:<10} {n_kind[kind]:>5} mutants {by_kind[kind]:>7.0f} s  ({by_kind[kind] / total:.0%}, "
              f"{by_kind[kind] / n_kind[kind]:.2f} s each)")
    print("\nby module (worker-seconds: killed / timeout / survived)")
    for module, c in sorted(by_mod.items(), key=lambda x: -sum(x[1].values())):
        print(f"  {module:<28} {sum(c.values()):>6.0f}  {c['killed']:.0f} / {c['timeout']:.0f} / {c['survived']:.0f}")
    print(f"\nthe {a.top} costliest functions (worker-seconds; t = their tests' stats-run time; the slowest tests)")
    for fn, c in sorted(by_fn.items(), key=lambda x: -sum(x[1].values()))[: a.top]:
        ts = sorted(tests_of.get(fn, []), key=lambda t: -dur.get(t, 0))
        slow = ", ".join(f"{t.split('::')[-1][:40]} {dur[t]:.2f}" for t in ts[:2])
        print(f"  {sum(c.values()):>6.0f} t={sum(dur.get(t, 0) for t in ts):>5.2f} {fn[:50]:<50} "
              f"k/t/s {c['killed']:.0f}/{c['timeout']:.0f}/{c['survived']:.0f}  [{slow}]")
    print("\nslow tests: cost over the survivors, killed mutants that may have reached them")
    exposure, reach = Counter(), Counter()
    slow_tests = {t for t, d in dur.items() if d >= 0.4}
    for _, fn, _, wall, _, kind in rows:
        cum = 0.0
        for t in sorted(tests_of.get(fn, []), key=lambda t: dur.get(t, 0)):
            if t in slow_tests:
                exposure[t] += dur[t] if kind == "survived" else 0
                reach[t] += kind in ("killed", "timeout") and wall >= 0.5 * cum
            cum += dur.get(t, 0)
    for t in sorted(slow_tests, key=lambda t: -exposure[t]):
        print(f"  {exposure[t]:>6.0f} s over survivors, {reach[t]:>4} killed may have reached it, {dur[t]:.2f} s  {t}")
    without = set(a.without)
    print("\ntimeout limit M x (t + C): worker-seconds, and the smallest limit / wall of a survivor"
          + (f" (without {len(without)} tests)" if without else ""))
    for m, c in a.limit or [(3, 10), (2, 5), (2, 3)]:
        cost, margin = 0.0, float("inf")
        for _, fn, _, wall, t, kind in rows:
            cut = sum(dur.get(x, 0) for x in tests_of.get(fn, []) if x in without)
            t, lim = t - cut, m * (t - cut + c)
            if kind == "survived":
                wall = max(0.05, wall - cut)
                margin = min(margin, lim / wall)
            cost += lim if kind == "timeout" else min(wall, lim)
        print(f"  {m:g} x (t + {c:g}): {cost:>6.0f} worker-seconds ({cost / 120:.1f} min on 2 workers), "
              f"survivor margin {margin:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
