"""The CLI imports a command's module only when that command runs (eventlog/cli/main.py COMMANDS): `eventlog grep`
must not pay for the importers, the patch set, the writer or DuckDB. Counted as modules imported, never timed."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from eventlog.store.writer import EventLog

# Run the CLI in a fresh interpreter and print, at exit, every module it imported.
PROBE = """
import atexit, json, sys
atexit.register(lambda: print("MODULES " + json.dumps(sorted(sys.modules)), file=sys.stderr))
from eventlog.cli.main import main
sys.argv = ["eventlog"] + sys.argv[1:]
main()
"""


def modules_of(*args: str) -> tuple[int, str, set[str]]:
    p = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60)
    line = next(x for x in p.stderr.splitlines() if x.startswith("MODULES "))
    return p.returncode, p.stdout, set(json.loads(line[len("MODULES "):]))


def test_the_table_names_every_command_and_its_module() -> None:
    code = ("import json; from eventlog.cli import main as m; m.load_commands(); "
            "print(json.dumps({n: c.callback.__module__ for n, c in m.cli.commands.items()}))")
    registered = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                           check=True).stdout)
    from eventlog.cli.main import COMMANDS

    assert {n: f"eventlog.cli.{m}" for n, m in COMMANDS.items()} == registered


def test_grep_imports_only_what_grep_needs(tmp_path: Path) -> None:
    root = tmp_path / "root"
    EventLog(root, fsync="never", autoseal=False).append(
        {"event": "message:received", "channel": "telegram", "chat_id": "100", "direction": "in",
         "from": {"id": 1, "username": "alice"}, "text": "deploy now", "ts": "2026-11-01T10:00:00.000Z"})
    code, out, mods = modules_of("grep", "--count-total", "deploy", "--root", str(root))
    assert (code, out) == (0, "1\n")
    cli_modules = {m for m in mods if m.startswith("eventlog.cli.")}
    assert cli_modules == {"eventlog.cli.main", "eventlog.cli.recall", "eventlog.cli.common", "eventlog.cli.timeopts"}
    for heavy in ("eventlog.importers", "eventlog.patchset", "eventlog.store.writer", "eventlog.search", "eventlog.dlp",
                  "eventlog.agent", "duckdb", "numpy"):
        assert not any(m == heavy or m.startswith(heavy + ".") for m in mods), heavy


def test_help_still_lists_every_command() -> None:
    from eventlog.cli.main import COMMANDS

    code, out, mods = modules_of("--help")
    assert code == 0
    listed = {line.split()[0] for line in out.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(COMMANDS)


def test_an_unknown_command_is_still_one_line() -> None:
    p = subprocess.run([sys.executable, "-m", "eventlog", "grpe", "x"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "grpe" in p.stderr
