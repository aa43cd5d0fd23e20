"""The README's recall recipes run, unchanged, against a generated log that ends yesterday — and find something."""
from __future__ import annotations

import shlex
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
from gen_corpus import generate  # noqa: E402


def recipes() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Recall (grep, SQL, tail, compaction)", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("eventlog ")]


@pytest.fixture(scope="module")
def recent_log(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("docs") / "root"
    generate(root, chats=10, days=35, end=datetime.now(timezone.utc).date() - timedelta(days=1), seed=3)
    return root


def test_readme_has_recipes():
    assert len(recipes()) >= 6


@pytest.mark.parametrize("recipe", [r for r in recipes() if " -f" not in r])
def test_recipe_runs_and_finds_something(recipe, recent_log):
    argv = shlex.split(recipe)[1:] + ["--root", str(recent_log)]
    r = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert r.exit_code == 0, (recipe, r.output)
    assert r.stdout.strip()


def test_follow_recipe_starts(recent_log):
    (recipe,) = [r for r in recipes() if " -f" in r]
    p = subprocess.Popen([sys.executable, "-m", "eventlog", *shlex.split(recipe)[1:], "--root", str(recent_log)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    try:
        assert b"following" in p.stderr.readline()
        time.sleep(0.2)
        assert p.poll() is None
    finally:
        p.terminate()
        p.wait(timeout=10)
