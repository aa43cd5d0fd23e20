"""docs/architecture.md matches the tree: every package of eventlog/ is named in it, every package and module it names
exists, and every package has its row in the table of parts."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "architecture.md"


def packages() -> set[str]:
    """The directories directly under eventlog/ (Python packages and the `patches/` data tree)."""
    return {p.name for p in (REPO / "eventlog").iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}


def named(text: str) -> tuple[set[str], set[str]]:
    """(packages, top-level modules) the page names as `eventlog/<name>/` and `eventlog/<name>.py`."""
    return (set(re.findall(r"`eventlog/([a-z_]+)/`", text)),
            set(re.findall(r"`eventlog/([a-z_]+)\.py`", text)))


def test_every_package_is_named_and_every_named_package_exists():
    pkgs, _ = named(DOC.read_text(encoding="utf-8"))
    assert not packages() - pkgs, f"packages of eventlog/ missing from docs/architecture.md: {packages() - pkgs}"
    assert not pkgs - packages(), f"docs/architecture.md names packages that do not exist: {pkgs - packages()}"


def test_every_named_module_exists():
    _, mods = named(DOC.read_text(encoding="utf-8"))
    assert mods, "the page names the top-level modules"
    missing = {m for m in mods if not (REPO / "eventlog" / f"{m}.py").is_file()}
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_each_package_has_a_row_in_the_parts_table():
    text = DOC.read_text(encoding="utf-8")
    parts = text.split("## The parts", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `eventlog/([a-z_]+)/` \|", parts, flags=re.M))
    assert rows == packages()


def test_the_check_sees_a_missing_package(tmp_path):
    # the same comparison on a page that lost a row and gained a package that is not there
    text = DOC.read_text(encoding="utf-8").replace("`eventlog/smoke/`", "`eventlog/smokes/`")
    pkgs, _ = named(text)
    assert packages() - pkgs == {"smoke"} and pkgs - packages() == {"smokes"}


def test_files_the_page_names_exist():
    # `eventlog/x.py`, `recall/planner.py` (under eventlog/), `runtime/tap.mjs` (under eventlog/patches/openclaw/);
    # tests/test_architecture.py is another engineer's file of this issue, named before it lands
    text = DOC.read_text(encoding="utf-8")
    bases = (REPO, REPO / "eventlog", REPO / "eventlog" / "patches" / "openclaw")
    paths = set(re.findall(r"`((?:[a-z_]+/)+[\w-]+\.(?:py|mjs|json))`", text)) - {"tests/test_architecture.py"}
    assert len(paths) > 20
    missing = [rel for rel in paths if not any((b / rel).is_file() for b in bases)]
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"
