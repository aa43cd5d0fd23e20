"""`eventlog patch` CLI surface without an OpenClaw install: help, bad input -> one stderr line and exit 2."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli

VERBS = ["apply", "revert", "status", "audit", "diffs", "rebase", "drift", "matrix", "fetch", "ensure", "guard", "unit"]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_has_help(verb: str) -> None:
    r = invoke("patch", verb, "--help")
    assert r.exit_code == 0 and "Usage: " in r.stdout and len(r.stdout.splitlines()) > 3


@pytest.mark.parametrize("verb", ["apply", "revert", "status", "audit"])
def test_not_an_openclaw_dir(verb: str, tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "something-else"}')
    r = invoke("patch", verb, "--openclaw", str(tmp_path), "--root", str(tmp_path / "r"))
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("eventlog patch: ")
    assert r.stdout == "", "JSON only with --json"
    r = invoke("patch", verb, "--openclaw", str(tmp_path), "--root", str(tmp_path / "r"), "--json")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert orjson.loads(r.stdout)["error"] == "not-openclaw"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["package.json"], "nothing written"


def test_rebase_rejects_a_name_that_is_neither_dir_nor_version(tmp_path: Path) -> None:
    r = invoke("patch", "rebase", "--to", "not-a-release; rm -rf /", "--dry-run")
    assert r.exit_code == 2 and "not a directory and not a release version" in r.stderr


def test_openclaw_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLOG_OPENCLAW_DIR", str(tmp_path))
    r = invoke("patch", "status", "--json")
    assert r.exit_code == 2 and orjson.loads(r.stdout)["error"] == "not-openclaw"
