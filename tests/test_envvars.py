"""The environment-variable registry (eventlog/envvars.py) lists every variable the code reads, Python and JS;
docs/environment.md is generated from it; `eventlog path` prints it with the current values."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.envvars import NOT_VARIABLES, VARIABLES

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import gen_env_docs  # noqa: E402

# a name starts a word: `BEGIN_OPENCLAW_INTERNAL_CONTEXT` (a marker a DLP rule matches) is not one
NAME = re.compile(r"(?<![A-Za-z0-9_])(?:(?:EVENTLOG|OPENCLAW)_[A-Z0-9_]+|XDG_[A-Z_]+)")
# a read: os.environ.get("X") / environ["X"] / env.get("X") / env["X"] / getenv("X") in Python, process.env.X /
# env.X / env["X"] in JS
READ = re.compile(r"""(?:environ|\benv|getenv)(?:\.get\(|\[|\()\s*["']((?:EVENTLOG|OPENCLAW|XDG)_[A-Z0-9_]+)"""
                  r"""|\benv\.((?:EVENTLOG|OPENCLAW|XDG)_[A-Z0-9_]+)""")
SOURCES = [p for p in (REPO / "eventlog").rglob("*") if p.suffix in {".py", ".mjs", ".cjs", ".js", ".json"}
           and "/test/" not in p.as_posix()]


def _names(pattern: re.Pattern[str]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for p in SOURCES:
        for m in pattern.finditer(p.read_text(encoding="utf-8")):
            found.setdefault(next(g for g in m.groups() if g) if m.groups() else m.group(0), p)
    return found


def test_every_name_in_the_code_is_registered():
    registered = {v.name for v in VARIABLES} | set(NOT_VARIABLES)
    missing = {n: str(p.relative_to(REPO)) for n, p in _names(NAME).items() if n not in registered}
    assert not missing, f"add to eventlog/envvars.py (VARIABLES, or NOT_VARIABLES with the reason): {missing}"


def test_every_read_is_a_variable_not_an_exception():
    reads = _names(READ)
    assert len(reads) >= 15  # the pattern sees the reads at all
    wrong = {n: str(p.relative_to(REPO)) for n, p in reads.items() if n not in {v.name for v in VARIABLES}}
    assert not wrong, f"read from the environment but not in VARIABLES: {wrong}"


def test_no_stale_entries():
    named = set(_names(NAME))
    stale = [v.name for v in VARIABLES if v.name not in named] + [n for n in NOT_VARIABLES if n not in named]
    assert not stale, f"in eventlog/envvars.py but named nowhere under eventlog/: {stale}"
    assert len({v.name for v in VARIABLES}) == len(VARIABLES)
    assert all(v.audience in {"operator", "development"} and v.what and v.default and v.readers for v in VARIABLES)


def test_checked_in_doc_equals_the_generated_one():
    assert (REPO / "docs/environment.md").read_text(encoding="utf-8") == gen_env_docs.render(), \
        "docs/environment.md is stale: run `python tools/gen_env_docs.py`"


def test_path_prints_locations_first_then_every_variable_with_its_value(tmp_path, monkeypatch):
    for v in VARIABLES:  # the Makefile's toolchain paths survive conftest's clearing
        monkeypatch.delenv(v.name, raising=False)
    monkeypatch.setenv("EVENTLOG_TZ", "Europe/Berlin")
    r = CliRunner().invoke(cli, ["path", "--root", str(tmp_path)], catch_exceptions=False)
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["root", str(tmp_path), "(--root)"]
    env = lines[lines.index("environment") + 1:]
    assert [ln.split()[0] for ln in env] == [v.name for v in VARIABLES]
    assert "  EVENTLOG_TZ                  Europe/Berlin" in env
    assert all(ln.split()[1] == "unset" for ln in env if not ln.startswith("  EVENTLOG_TZ "))


def test_path_json_has_the_variables_as_their_own_type(tmp_path, monkeypatch):
    import orjson

    monkeypatch.setenv("EVENTLOG_FSYNC", "never")
    r = CliRunner().invoke(cli, ["path", "--json", "--root", str(tmp_path)], catch_exceptions=False)
    rows = [orjson.loads(ln) for ln in r.stdout.splitlines()]
    env = {o["name"]: o["value"] for o in rows if o["type"] == "environment"}
    assert env["EVENTLOG_FSYNC"] == "never" and env["EVENTLOG_ROOT"] is None and len(env) == len(VARIABLES)
    assert rows[0]["type"] == "location" and rows[0]["name"] == "root"
