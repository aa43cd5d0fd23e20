"""docs/cli.md is every command's help as the code has it now: regenerate with `python tools/gen_cli_docs.py`."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import gen_cli_docs  # noqa: E402

from eventlog.cli.main import cli  # noqa: E402


def _commands(group: click.Group, prefix: str) -> list[str]:
    ctx = click.Context(group, info_name=prefix)
    out = []
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        out.append(f"{prefix} {name}")
        if isinstance(sub, click.Group):
            out += _commands(sub, f"{prefix} {name}")
    return out


def test_checked_in_reference_equals_a_fresh_rendering():
    assert (REPO / "docs/cli.md").read_text(encoding="utf-8") == gen_cli_docs.render(), \
        "docs/cli.md is stale: run `python tools/gen_cli_docs.py`"


def test_every_command_has_a_section_with_its_help():
    text = gen_cli_docs.render()
    for path in _commands(cli, "eventlog"):
        assert f"## `{path}`\n\n```\nUsage: {path} " in text, path


def test_a_changed_help_text_is_caught(monkeypatch):
    cmd = cli.get_command(click.Context(cli), "path")
    monkeypatch.setattr(cmd, "help", cmd.help + " Changed.")
    assert gen_cli_docs.render() != (REPO / "docs/cli.md").read_text(encoding="utf-8")


def test_rendering_does_not_depend_on_the_terminal():
    r = subprocess.run([sys.executable, "tools/gen_cli_docs.py", "--check"], cwd=REPO, capture_output=True,
                       text=True, env={"COLUMNS": "33", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
