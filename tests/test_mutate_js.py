"""tools/mutate/js.py, the JS mutation runner: its selection (--group with --only is their intersection; an --only that
can select nothing is refused with one line and exit 2) and its reading of V8 coverage (a child under a file-size limit
leaves an empty coverage file: a warning and no coverage from that process, not a crash). Real Node writes the
coverage; the refusals run the tool as a command."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eventlog import toolchain

REPO = Path(__file__).resolve().parent.parent
TOOL = REPO / "tools" / "mutate" / "js.py"
RT = REPO / "eventlog" / "patches" / "openclaw" / "runtime"
_spec = importlib.util.spec_from_file_location("mutate_js", TOOL)
js = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(js)  # type: ignore[union-attr]


def test_group_and_only_select_their_intersection() -> None:
    assert js.select(["dlp.mjs:235"], ["dlp"]) == {"dlp.mjs": {235}}
    assert js.select(["writer.mjs", "writer-io.mjs:3"], ["writer", "tap-core"]) == {"writer.mjs": None,
                                                                                   "writer-io.mjs": {3}}
    assert js.select(["dlp.mjs:9", "dlp.mjs", "dlp.mjs:7"], []) == {"dlp.mjs": None}  # the whole file wins
    assert js.select(["dlp.mjs:9", "dlp.mjs:7"], []) == {"dlp.mjs": {7, 9}}
    assert list(js.select([], ["tap-core"])) == ["tap-core.mjs"]
    assert list(js.select([], [])) == list(js.MODULES)


@pytest.mark.parametrize("args, says", [
    (["--group", "writer", "--only", "dlp.mjs:235"], "--only dlp.mjs:235: dlp.mjs is in group dlp, outside --group writer"),
    (["--only", "runtime/dlp.mjs"], "--only runtime/dlp.mjs: runtime/dlp.mjs is not a mutated module (one of "),
    (["--only", "dlp.mjs:x"], "--only dlp.mjs:x: LINE must be a line number"),
    (["--only", "dlp.mjs:"], "--only dlp.mjs:: LINE must be a line number"),
])
def test_a_selection_of_nothing_is_refused_in_one_line(args: list[str], says: str) -> None:
    r = subprocess.run([sys.executable, str(TOOL), *args, "--report", os.devnull], capture_output=True, text=True,
                       timeout=120)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr.startswith(f"mutate-js: {says}") and r.stderr.count("\n") == 1, r.stderr


def test_lines_without_a_mutant_are_refused(tmp_path: Path) -> None:
    """Line 1 of dlp-alerts.mjs is a comment (and the module has no named mutant): the mutants are generated, none is
    on it, and the tool stops before any clean run."""
    if not toolchain.acorn_dir().joinpath("node_modules", "acorn", "package.json").is_file():
        pytest.fail("acorn is not installed (make acorn)")
    assert (RT / "dlp-alerts.mjs").read_text().startswith("//")
    r = subprocess.run([sys.executable, str(TOOL), "--only", "dlp-alerts.mjs:1", "--jobs", "1",
                        "--report", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.startswith("mutate-js: no mutant in the selection"), r.stderr
    assert r.stderr.count("\n") == 1


def test_an_empty_coverage_file_from_a_size_limited_child_is_no_coverage(tmp_path: Path, capsys) -> None:
    """Two real Node processes load dlp-validators.mjs under NODE_V8_COVERAGE; the second runs with a file-size limit of
    0 (prlimit), as writer-lock-edges.test.mjs's EFBIG child does, and leaves an empty coverage file."""
    node = toolchain.node_or_default()
    load = f"import({str(RT / 'dlp-validators.mjs')!r})"
    env = dict(os.environ, NODE_V8_COVERAGE=str(tmp_path))
    subprocess.run([node, "-e", load], env=env, check=True, timeout=120)
    subprocess.run(["prlimit", "--fsize=0", node, "-e", load], env=env, timeout=120)
    sizes = sorted(f.stat().st_size for f in tmp_path.glob("*.json"))
    assert len(sizes) == 2 and sizes[0] == 0 < sizes[1]
    got = js.covered_offsets(tmp_path, RT)
    assert list(got) == ["dlp-validators.mjs"] and len(got["dlp-validators.mjs"]) == 1  # one process's ranges
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"mutate-js: warning: {tmp_path}: a process left an empty coverage file coverage-")
    assert err.endswith("no coverage from that process\n")
