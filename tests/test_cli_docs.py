"""docs/cli.md is every command's help as the code has it now: regenerate with `python tools/gen_cli_docs.py`."""
from __future__ import annotations

import re
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


def _walk(group: click.Group, path: list[str]):
    """Every command of the tree, groups and their subcommands at any depth, with the args that reach it."""
    yield path, group
    ctx = click.Context(group, info_name=path[-1] if path else "eventlog")
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        assert sub is not None
        if isinstance(sub, click.Group):
            yield from _walk(sub, path + [name])
        else:
            yield path + [name], sub


def _help_problems(root: click.Group) -> list[str]:
    """What `--help` lacks, per command: help text, and an `Example:` / `Examples:` paragraph (the house convention,
    a `\b` block in the docstring) whose lines run the command itself (`eventlog dlp scan …` in `eventlog dlp scan
    --help`) — checked on the rendered help, as a user sees it, not the docstring."""
    from click.testing import CliRunner

    problems = []
    for path, cmd in _walk(root, []):
        name = " ".join(["eventlog"] + path)
        r = CliRunner().invoke(root, path + ["--help"], catch_exceptions=False)
        if r.exit_code != 0 or not (cmd.help or "").strip():
            problems.append(f"{name}: no help")
            continue
        lines = r.stdout.splitlines()
        heads = [i for i, ln in enumerate(lines) if re.match(r"\s*Examples?\b[^:]*:", ln)]
        examples = []
        for i in heads:
            examples.append(lines[i].split(":", 1)[1].strip())  # `Example: eventlog …` on one line
            for ln in lines[i + 1:]:
                if not ln.strip():
                    break
                examples.append(ln.strip())
        runs = re.compile(r"(^|[\s/|=(])" + re.escape(name) + r"(\s|$)")  # `… | eventlog agent call` too
        if not any(runs.search(e) for e in examples):
            problems.append(f"{name}: no example of `{name}` in --help")
    return problems


def test_every_command_and_subcommand_has_help_and_an_example():
    assert _help_problems(cli) == []
    assert len(list(_walk(cli, []))) == len(_commands(cli, "eventlog")) + 1  # the walk reaches every command


def test_a_subcommand_without_an_example_is_caught(monkeypatch):
    """The check can fail, and looks below the first level: a nested command (`dlp scan`) stripped of its example,
    one with an example of another command, and a command with no help at all are each named."""
    dlp = cli.get_command(click.Context(cli), "dlp")
    scan = dlp.get_command(click.Context(dlp), "scan")
    monkeypatch.setattr(scan, "help", scan.help.split("\b")[0])
    status = cli.get_command(click.Context(cli), "agent").commands["status"]
    monkeypatch.setattr(status, "help", status.help.replace("eventlog agent status", "eventlog agent install"))
    path = cli.get_command(click.Context(cli), "path")
    monkeypatch.setattr(path, "help", None)
    assert _help_problems(cli) == ["eventlog agent status: no example of `eventlog agent status` in --help",
                                   "eventlog dlp scan: no example of `eventlog dlp scan` in --help",
                                   "eventlog path: no help"]
