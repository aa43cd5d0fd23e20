"""Mutation testing of the JS runtime (issue 15 item 1): `make mutate-js` (docs/mutation-js.md).

    python3 tools/mutate/js.py [--jobs N] [--group G] [--only FILE[:LINE]] [--sample N] [--rerun REPORT]
                               [--report PATH] [--named-only]

Mutants come from tools/mutate/js_mutants.mjs (acorn, pinned in eventlog/toolchain.py; the operators are listed
there), plus the named mutants of tools/mutate/js_named.json (the ones issue 15 asks to see killed). Each mutant is
applied alone to a private copy of eventlog/ + tests/vectors/ (one copy per worker, in a temp dir; the repo is never
touched), and only the node:test files relevant to its module run — of those, only the files whose clean run executed
the mutated code (V8 block coverage per file, child processes included) — fastest killers first, one process per file
(--test-isolation=none inside it) with a reporter that stops at the first failing test; the first failing file ends
the mutant. A mutant is killed when a test fails or the run exceeds its timeout (per file 3x its clean run + 10 s, in
all 3x the list's clean run + 10 s); it survives when every test passes. A mutant on code that no test executes is
reported as "no coverage" without running — it counts as surviving. Stdlib only. Prints per-module scores at the end (before =
without the NEW_TESTS files, which run last; now = with them) and writes the JSON report (every mutant, its status and
the test that killed it). Exit 1 if a named mutant survives, 2 if the clean run fails, acorn is missing, or the
selection is empty (`--group` with `--only`: the intersection; an --only outside every --group is refused).
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # a tool, not the package: read the pinned toolchain
from eventlog import toolchain  # noqa: E402

RT = "eventlog/patches/openclaw/runtime"
HERE = Path(__file__).resolve().parent
T = "test/"
# module -> (group, test files in the order they are tried)
DLP_TESTS = [T + "dlp-validators-kat.test.mjs", T + "dlp-alerts.test.mjs", T + "dlp.test.mjs", T + "tap.test.mjs",
             T + "dlp-allowlist.test.mjs"]
WRITER_TESTS = [T + "writer.test.mjs", T + "writer-lease.test.mjs", T + "tap.test.mjs", T + "writer-head.test.mjs",
                T + "writer-lock-symlink.test.mjs", T + "writer-thread.test.mjs"]
MODULES = {
    "dlp-validators.mjs": ("dlp", DLP_TESTS),
    "dlp.mjs": ("dlp", [T + "dlp.test.mjs"] + [t for t in DLP_TESTS if not t.endswith("/dlp.test.mjs")]),
    "dlp-html.mjs": ("dlp", [T + "dlp.test.mjs", T + "tap.test.mjs", T + "dlp-validators-kat.test.mjs",
                             T + "dlp-allowlist.test.mjs"]),
    "dlp-alerts.mjs": ("dlp", [T + "dlp-alerts.test.mjs", T + "tap.test.mjs"]),
    "dlp-fold.mjs": ("dlp", [T + "dlp-fold.test.mjs", T + "tap-fold.test.mjs", T + "dlp.test.mjs", T + "dlp-near.test.mjs"]),
    "writer.mjs": ("writer", WRITER_TESTS),
    "writer-format.mjs": ("writer", WRITER_TESTS),
    "writer-commit.mjs": ("writer", WRITER_TESTS),
    "writer-head.mjs": ("writer", [T + "writer-head.test.mjs"] + [t for t in WRITER_TESTS if "writer-head" not in t]),
    "writer-io.mjs": ("writer", WRITER_TESTS),
    "writer-seal.mjs": ("writer", WRITER_TESTS),
    "writer-lock.mjs": ("writer", [T + "writer-lock-symlink.test.mjs", T + "writer-lease.test.mjs", T + "writer.test.mjs",
                                   T + "tap.test.mjs", T + "writer-head.test.mjs"]),
    "tap-core.mjs": ("tap-core", [T + "tap.test.mjs", T + "tap-release.test.mjs"]),
    # the writer in its own thread ($EVENTLOG_WRITER_THREAD=1): the thread test, then the tap's (thread death refuses)
    "writer-thread.mjs": ("writer", [T + "writer-thread.test.mjs"] + WRITER_TESTS[:-1]),
    "writer-worker.mjs": ("writer", [T + "writer-thread.test.mjs"] + WRITER_TESTS[:-1]),
}
# Test files written for issue 15 item 1 (to kill survivors). They run LAST for each module, so a mutant whose first
# failing file is one of them survived the suite as it was before: one run gives the score before and after them.
NEW_TESTS = {
    "dlp": [T + "dlp-validators-edges.test.mjs", T + "dlp-github-crc.test.mjs", T + "dlp-offsets.test.mjs",
            T + "dlp-alerts-edges.test.mjs", T + "dlp-html-twin.test.mjs",
            T + "dlp-engine-twin.test.mjs", T + "dlp-validators-twin.test.mjs",
            T + "tap-casefold.test.mjs"],
    "writer": [T + "writer-edges.test.mjs", T + "writer-damage.test.mjs", T + "writer-lock-protocol.test.mjs",
               T + "writer-format-kat.test.mjs", T + "writer-checkpoint.test.mjs",
               T + "writer-tail.test.mjs", T + "writer-autoseal.test.mjs", T + "writer-durability.test.mjs",
               T + "writer-seal-handoff.test.mjs", T + "writer-lock-edges.test.mjs",
               T + "writer-thread-edges.test.mjs"],
    "tap-core": [T + "tap-failclosed.test.mjs", T + "tap-core-edges.test.mjs"],
}
MODULES = {_f: (_g, _tests + NEW_TESTS[_g]) for _f, (_g, _tests) in MODULES.items()}


def node_cmd(node: str, tests: list[str]) -> list[str]:
    return [node, "--test", "--test-isolation=none", f"--test-reporter={HERE / 'bail-reporter.mjs'}", *tests]


def run_tests(node: str, cwd: Path, tests: list[str], timeout: float, env: dict,
              file_limits: list[float] | None = None, times: list[float] | None = None,
              cov_base: Path | None = None) -> tuple[str, str, float]:
    """Run the test files one process each, in order, until one fails: ('pass'|'fail'|'timeout', line, seconds).
    file_limits: a time limit per file (a hung mutant is stopped in the file where it hangs, not after the whole list's
    budget); times: filled with each file's seconds (the clean run); cov_base: V8 coverage of file k (and of the
    processes it spawns) goes to cov_base/k."""
    t0 = time.monotonic()
    for k, t in enumerate(tests):
        f0 = time.monotonic()
        left = timeout - (f0 - t0)
        limit = min(left, file_limits[k]) if file_limits else left
        fenv = env if cov_base is None else dict(env, NODE_V8_COVERAGE=str(cov_base / str(k)))
        p = subprocess.Popen(node_cmd(node, [t]), cwd=cwd, env=fenv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=max(1.0, limit))
            status = "pass" if p.returncode == 0 and "PASS" in out else "fail"
        except subprocess.TimeoutExpired:
            status, out = "timeout", f"TIMEOUT {t}"
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # children a bailed run left behind
            except ProcessLookupError:
                pass
            p.wait()
        if times is not None:
            times.append(time.monotonic() - f0)
        if status != "pass":
            line = next((ln for ln in out.splitlines() if ln.startswith(("FAIL", "TIMEOUT"))),
                        f"FAIL {t} :: exit {p.returncode} " + out.strip()[:150])
            return status, line, time.monotonic() - t0
    return "pass", "PASS", time.monotonic() - t0


def make_copy(dst: Path) -> Path:
    shutil.copytree(REPO / "eventlog", dst / "eventlog", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "tests" / "vectors", dst / "tests" / "vectors")
    return dst / RT


def covered_offsets(cov_dir: Path, rt: Path, test: str = "") -> dict[str, list[list[tuple[int, int, int]]]]:
    """file name -> per process, V8 block ranges (start, end, count) of the clean run, for the mutated modules.
    A process that could not write its coverage (a child under a file-size limit leaves an empty file) adds nothing."""
    ranges: dict[str, list[list[tuple[int, int, int]]]] = {}
    for f in cov_dir.glob("*.json"):
        try:
            doc = json.loads(f.read_text())
        except json.JSONDecodeError:
            print(f"mutate-js: warning: {test or cov_dir}: a process left {'an empty' if f.stat().st_size == 0 else 'a cut'}"
                  f" coverage file {f.name} (a size-limited child?): no coverage from that process", file=sys.stderr)
            continue
        for script in doc.get("result", []):
            url = script.get("url", "")
            if not url.startswith("file://"):
                continue
            p = Path(url[7:].split("?")[0])  # a test may import a private instance: writer-format.mjs?kat=…
            if p.parent != rt or p.name not in MODULES:
                continue
            ranges.setdefault(p.name, []).append([(r["startOffset"], r["endOffset"], r["count"])
                                                  for fn in script["functions"] for r in fn["ranges"]])
    return ranges


def executed(per_process: list[list[tuple[int, int, int]]], start: int, end: int) -> bool:
    """In some process, the innermost range holding [start, end) ran at least once (no data: assume it ran)."""
    if not per_process:
        return True
    for ranges in per_process:
        best = None
        for s, e, c in ranges:
            if s <= start and end <= e and (best is None or e - s < best[1] - best[0]):
                best = (s, e, c)
        if best is None or best[2] > 0:
            return True
    return False


def ran(per_process: list[list[tuple[int, int, int]]], start: int, end: int) -> bool:
    """This test file executed [start, end) in some process (no data: the module was never loaded — it did not)."""
    return bool(per_process) and executed(per_process, start, end)


def generate(node: str, rt: Path, files: list[str]) -> list[dict]:
    acorn = toolchain.acorn_dir()
    out = subprocess.run([node, str(HERE / "js_mutants.mjs"), str(acorn), *files], cwd=rt, capture_output=True,
                         text=True, check=True).stdout
    return [json.loads(ln) for ln in out.splitlines()]


def named(rt: Path) -> list[dict]:
    """The named mutants (js_named.json): {id, file, find, replace, why}; find must occur exactly once."""
    out = []
    for m in json.loads((HERE / "js_named.json").read_text()):
        src = (rt / m["file"]).read_text()
        if src.count(m["find"]) != 1:
            raise SystemExit(f"mutate-js: named mutant {m['id']}: its text occurs {src.count(m['find'])} times "
                             f"in {m['file']} (the source moved; update tools/mutate/js_named.json)")
        start = src.index(m["find"])
        out.append({"file": m["file"], "line": src.count("\n", 0, start) + 1, "col": 1, "start": start,
                    "end": start + len(m["find"]), "repl": m["replace"], "op": "named", "orig": m["find"][:80],
                    "id": m["id"], "why": m["why"]})
    return out


def select(only: list[str], groups: list[str]) -> dict[str, set[int] | None]:
    """--only and --group -> {module: the lines whose mutants run, None for all}, in MODULES order. Both given: the
    intersection. An --only that can select nothing — no such module, a LINE that is not a number, a module outside
    every --group — is refused (ValueError, one line), not silently dropped."""
    if not only:
        return {f: None for f, (g, _) in MODULES.items() if not groups or g in groups}
    sel: dict[str, set[int] | None] = {}
    for o in only:
        name, colon, line = o.partition(":")
        if name not in MODULES:
            raise ValueError(f"--only {o}: {name} is not a mutated module (one of {', '.join(MODULES)})")
        if groups and MODULES[name][0] not in groups:
            raise ValueError(f"--only {o}: {name} is in group {MODULES[name][0]}, outside --group {', '.join(groups)}")
        if colon and not line.isdigit():
            raise ValueError(f"--only {o}: LINE must be a line number")
        if not colon:
            sel[name] = None  # the whole module, whatever lines of it are named too
        elif sel.get(name, set()) is not None:
            sel.setdefault(name, set()).add(int(line))  # type: ignore[union-attr]
    return {f: sel[f] for f in MODULES if f in sel}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mutate-js")
    ap.add_argument("--jobs", type=int, default=4, help="parallel mutant runs (the writer tests mostly wait)")
    ap.add_argument("--only", action="append", default=[], help="FILE or FILE:LINE (repeatable)")
    ap.add_argument("--report", default=str(REPO / "build" / "mutation-js.json"))
    ap.add_argument("--named-only", action="store_true")
    ap.add_argument("--sample", type=int, default=1, metavar="N",
                    help="run every N-th generated mutant of each module (a score estimate; default 1 = all)")
    ap.add_argument("--group", action="append", default=[], choices=sorted({g for g, _ in MODULES.values()}),
                    help="only the modules of this group (repeatable; default all)")
    ap.add_argument("--rerun", metavar="REPORT", help="take the killed mutants of REPORT (a report, or the .partial.jsonl "
                    "of an interrupted run) as killed and run the rest; the sources must be unchanged since REPORT")
    a = ap.parse_args(argv)
    try:
        selection = select(a.only, a.group)
    except ValueError as exc:
        print(f"mutate-js: {exc}", file=sys.stderr)
        return 2
    files = list(selection)
    node = toolchain.node_or_default()
    if not toolchain.acorn_dir().joinpath("node_modules", "acorn", "package.json").is_file():
        print(f"mutate-js: acorn is not installed in {toolchain.acorn_dir()} (run `make acorn`)", file=sys.stderr)
        return 2
    env = dict(os.environ, EVENTLOG_OPENCLAW_DIR=str(toolchain.dev_openclaw_dir()), NO_COLOR="1")
    t_start, c_start = time.monotonic(), os.times()
    tmp = Path(tempfile.mkdtemp(prefix="mutate-js-"))
    stop = threading.Event()  # SIGTERM/SIGINT: workers finish their mutant, then the copies are removed
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        rts = [make_copy(tmp / f"w{i}") for i in range(max(1, a.jobs))]
        mutants = [m for m in (named(rts[0]) if a.named_only else generate(node, rts[0], files) + named(rts[0]))
                   if m["file"] in files]
        if a.sample > 1:
            nth: dict[str, int] = {}
            keep = []
            for m in mutants:
                k = nth[m["file"]] = nth.get(m["file"], -1) + 1
                if m["op"] == "named" or k % a.sample == 0:
                    keep.append(m)
            mutants = keep
        prior: dict[tuple, dict] = {}
        if a.rerun:
            text = Path(a.rerun).read_text()
            olds = ([json.loads(ln) for ln in text.splitlines() if ln.strip()] if a.rerun.endswith(".jsonl")
                    else json.loads(text)["mutants"])
            prior = {(m["file"], m["start"], m["end"], m["repl"]): m for m in olds}
        mutants = [m for m in mutants if m["op"] == "named" or selection[m["file"]] is None
                   or m["line"] in selection[m["file"]]]  # type: ignore[operator]
        if not mutants:
            print("mutate-js: no mutant in the selection (no mutable code on those lines, or --sample left none)",
                  file=sys.stderr)
            return 2
        # clean runs: every group must pass as it is (else nothing can be judged), timed, with block coverage
        base: dict[tuple[str, ...], float] = {}
        limits: dict[tuple[str, ...], list[float]] = {}  # per file: 3x its clean run + 10 s
        cov: dict[str, list] = {}
        # per test list, per file: which code that file ran (a mutant runs only the files that execute it)
        per_file: dict[tuple[str, ...], list[dict[str, list]]] = {}
        for f in files:
            tests = tuple(MODULES[f][1])
            if tests in base:
                continue
            cov_dir = tmp / f"cov{len(base)}"
            times: list[float] = []
            st, line, secs = run_tests(node, rts[0], list(tests), 600, env, times=times, cov_base=cov_dir)
            if st != "pass":
                print(f"mutate-js: the clean run of {' '.join(tests)} does not pass: {line}", file=sys.stderr)
                return 2
            base[tests] = secs
            limits[tests] = [3 * x + 10 for x in times]
            per_file[tests] = [covered_offsets(cov_dir / str(k), rts[0], tests[k]) for k in range(len(tests))]
            for by_name in per_file[tests]:
                for name, r in by_name.items():
                    cov.setdefault(name, []).extend(r)
        print(f"mutate-js: {len(mutants)} mutants over {len(files)} modules, {a.jobs} jobs; clean runs: "
              + ", ".join(f"{len(t)} files {s:.1f}s" for t, s in base.items()), flush=True)
        todo: queue.Queue = queue.Queue()
        stream = open(Path(a.report).with_suffix(".partial.jsonl"), "w") if not Path(a.report).parent.mkdir(
            parents=True, exist_ok=True) else None
        for i, m in enumerate(mutants):
            old = prior.get((m["file"], m["start"], m["end"], m["repl"]))
            if old is not None and old["status"] in ("killed", "timeout"):
                m["status"], m["by"], m["secs"] = old["status"], old["by"], 0.0
            elif m["op"] != "named" and not executed(cov.get(m["file"], []), m.get("cs", m["start"]), m.get("ce", m["end"])):
                m["status"], m["by"], m["secs"] = "nocov", "", 0.0
            else:
                todo.put(i)
        done = [0]
        lock = threading.Lock()
        total_run = todo.qsize()

        def worker(rt: Path) -> None:
            while not stop.is_set():
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                m = mutants[i]
                path = rt / m["file"]
                orig = path.read_text()
                path.write_text(orig[:m["start"]] + m["repl"] + orig[m["end"]:])
                key = tuple(MODULES[m["file"]][1])
                pick = [k for k, by_name in enumerate(per_file[key])
                        if m["op"] == "named" or ran(by_name.get(m["file"], []), m.get("cs", m["start"]), m.get("ce", m["end"]))]
                tests = [key[k] for k in pick]
                try:
                    st, line, secs = run_tests(node, rt, tests, 3 * base[key] + 10, env, [limits[key][k] for k in pick])
                finally:
                    path.write_text(orig)
                m["status"] = {"pass": "survived", "fail": "killed", "timeout": "timeout"}[st]
                m["by"], m["secs"] = line, round(secs, 2)
                with lock:
                    stream.write(json.dumps(m, ensure_ascii=False) + "\n")
                    stream.flush()
                    done[0] += 1
                    if done[0] % 50 == 0 or m["status"] == "survived" and m["op"] == "named":
                        print(f"  {done[0]}/{total_run} run ({time.monotonic() - t_start:.0f}s)", flush=True)

        threads = [threading.Thread(target=worker, args=(rt,)) for rt in rts]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(0.5)
        if stop.is_set():
            print("mutate-js: interrupted; the results so far are in the .partial.jsonl file", file=sys.stderr)
            return 130
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wall, c_end = time.monotonic() - t_start, os.times()
    cpu = sum(c_end[:4]) - sum(c_start[:4])  # this process and the test processes it waited for (user + system)
    Path(a.report).parent.mkdir(parents=True, exist_ok=True)
    Path(a.report).write_text(json.dumps({"wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1), "jobs": a.jobs,
                                          "sample": a.sample, "mutants": mutants},
                                         indent=1, ensure_ascii=False))
    return summarize(mutants, wall, a.report)


def summarize(mutants: list[dict], wall: float, report: str) -> int:
    named_ms = [m for m in mutants if m["op"] == "named"]
    gen = [m for m in mutants if m["op"] != "named"]
    survivors = [m for m in gen if m["status"] in ("survived", "nocov")]
    for m in sorted(survivors, key=lambda m: (m["file"], m["start"])):
        print(f"SURVIVED {m['file']}:{m['line']}:{m['col']} [{m['op']}] {m['orig']!r} -> {m['repl']!r}"
              + (" (no coverage)" if m["status"] == "nocov" else ""))
    print("\nnamed mutants (issue 15):")
    bad = 0
    for m in named_ms:
        ok = m["status"] in ("killed", "timeout")
        bad += not ok
        print(f"  {'KILLED  ' if ok else 'SURVIVED'} {m['id']}: {m['file']}:{m['line']} — {m['by']}")
    new = {t for ts in NEW_TESTS.values() for t in ts}

    def before_killed(m: dict) -> bool:
        return m["status"] in ("killed", "timeout") and not any(f"/{t} ::" in m["by"] or m["by"].endswith(t)
                                                                for t in new)
    rows: dict[str, list[int]] = {}
    for m in gen:
        for key in (m["file"], "group " + MODULES[m["file"]][0]):
            r = rows.setdefault(key, [0, 0, 0, 0, 0])
            r[4] += before_killed(m)
            r[0] += m["status"] in ("killed", "timeout")
            r[1] += m["status"] == "survived"
            r[2] += m["status"] == "nocov"
            r[3] += m["status"] == "timeout"
    print(f"\n{'module':28} {'mutants':>7} {'killed':>6} {'surv':>5} {'nocov':>5} {'t/o':>4} {'before':>6} {'score':>6}")
    for key in sorted(rows, key=lambda k: (k.startswith("group"), k)):
        k, s, n, to, kb = rows[key]
        tot = k + s + n
        print(f"{key:28} {tot:7} {k:6} {s:5} {n:5} {to:4} {kb / tot if tot else 0:6.3f} {k / tot if tot else 0:6.3f}")
    print("(before: the score without the test files of issue 15 item 1, NEW_TESTS; a mutant they killed first "
          "survived the rest)")
    print(f"\nmutate-js: {len(mutants)} mutants in {wall:.0f} s wall; report {report}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
