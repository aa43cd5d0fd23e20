"""The allowed arrows between the parts of eventlog/ (docs/architecture.md), checked on every module's imports.

Every `import` and `from … import` of every module under eventlog/ — top-level, inside functions, relative or absolute —
is parsed with `ast` and mapped to the part it reaches (the first package or top-level module below `eventlog`). An
import of a part the table below does not allow fails, naming the module, the line and the arrow.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "eventlog"
EVERYTHING = "*"

# part → the parts it may import (its own modules always). Beyond design.md's arrows (cli → everything; ops → store,
# recall, search, dlp; agent → search, recall, dlp, store; search, recall, dlp → store; nothing → cli; store →
# nothing of ours but errors) the explicit entries for the parts it does not name:
# - errors, toolchain (Node discovery, pinned versions) and __init__ (the version) are leaves anyone may use;
# - config (the TOML file and its env twins, and the one data-dir rule) reads nothing of ours but errors;
# - importers write history through the store, like the tap;
# - smoke (the fake Telegram/LLM harness) needs only toolchain to start the gateway;
# - patchset (applies the runtime tap to OpenClaw) → store (it records patch events in the log), smoke (its verify
#   runs the smoke harness), toolchain;
# - doctor reports on every installed part, so it may read agent, dlp, patchset, store and config — but nothing
#   reads doctor except cli;
# - web (the local page, `eventlog serve`) reads through store, recall, search, dlp and ops, as design.md allows the
#   new parts; doctor's checks reach it as a callable from cli (nothing reads doctor but cli);
# - __main__ (`python -m eventlog`) starts the cli.
LEAVES = {"errors", "toolchain", "envvars", "__init__"}  # envvars: the registry of environment variables (docs)
ALLOWED: dict[str, set[str] | str] = {
    "cli": EVERYTHING,
    "__main__": {"cli"},
    "ops": {"store", "recall", "search", "dlp"},
    "agent": {"search", "recall", "dlp", "store", "config"},  # config: data_dir, the one data-dir rule
    "web": {"store", "recall", "search", "dlp", "ops"},
    "lake": {"store", "recall", "config"},  # config: data_dir
    "search": {"store"},
    "recall": {"store"},
    "dlp": {"store"},
    "store": set(),
    "importers": {"store"},
    "patchset": {"store", "smoke", "config"},  # config: data_dir
    "smoke": set(),
    "doctor": {"agent", "dlp", "patchset", "store", "config"},
    "config": set(),
    "errors": set(),
    "toolchain": set(),
    "envvars": set(),
    "__init__": set(),
}


def _part(module: str) -> str:
    """eventlog.store.layout → store; eventlog.errors → errors; eventlog → __init__ (the version)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> tuple[str, bool]:
    rel = path.relative_to(PKG.parent).with_suffix("")
    is_pkg = rel.name == "__init__"
    return ".".join(rel.parts[:-1] if is_pkg else rel.parts), is_pkg


def _exists(module: str) -> bool:
    p = PKG.parent.joinpath(*module.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def imports_of(path: Path, source: str) -> list[tuple[int, str]]:
    """(line, absolute module) of every eventlog import in a module; `from pkg import name` names pkg.name when that
    is a module (so `from eventlog import toolchain` reaches toolchain, not the package)."""
    name, is_pkg = _module_name(path)
    package = name if is_pkg else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((node.lineno, sub if _exists(sub) else target))
    return [(n, m) for n, m in out if m == "eventlog" or m.startswith("eventlog.")]


def violations(modules: list[tuple[Path, str]]) -> list[str]:
    """What breaks the table, in (module path, its source) pairs."""
    bad = []
    for path, source in modules:
        src = _part(_module_name(path)[0])
        allowed = ALLOWED.get(src)
        if allowed is None:
            bad.append(f"{path.relative_to(PKG.parent)}: part {src!r} has no entry in the arrows table")
            continue
        for line, target in imports_of(path, source):
            dst = _part(target)
            if dst == src or dst in LEAVES or allowed == EVERYTHING or dst in allowed:
                continue
            bad.append(f"{path.relative_to(PKG.parent)}:{line}: {src} → {dst} ({target}) is not an allowed arrow")
    return bad


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "node_modules" not in p.parts)


def test_every_import_follows_the_allowed_arrows() -> None:
    assert violations([(p, p.read_text(encoding="utf-8")) for p in _modules()]) == []


def test_every_part_of_the_tree_is_in_the_table() -> None:
    """A new package (lake/, web/) must be given its arrows before it lands."""
    parts = {_part(_module_name(p)[0]) for p in _modules()}
    assert parts <= set(ALLOWED), parts - set(ALLOWED)


@pytest.mark.parametrize("where, line, arrow", [
    ("store/bad.py", "from ..recall import grep\n", "store → recall"),
    ("store/bad.py", "def f():\n    from eventlog.dlp.alerts import ALERTS\n", "store → dlp"),
    ("search/bad.py", "from ..recall.grep import newest\n", "search → recall"),
    ("recall/bad.py", "from ..cli import common\n", "recall → cli"),
    ("dlp/bad.py", "import eventlog.ops.forget\n", "dlp → ops"),
    ("agent/bad.py", "from .. import doctor\n", "agent → doctor"),
])
def test_a_wrong_import_is_caught(where: str, line: str, arrow: str) -> None:
    """The checker on a module holding one forbidden import (the rest of the tree is clean, as the first test shows):
    it names that arrow, and only it."""
    got = violations([(PKG / where, line)])
    assert len(got) == 1 and arrow in got[0] and got[0].startswith(f"eventlog/{where}:"), got
