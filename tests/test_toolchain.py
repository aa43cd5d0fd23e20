"""Issue 10, item 3: one toolchain module owns the versions, the cache and Node discovery."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from eventlog import toolchain
from eventlog.patchset.paths import PATCH_DIR

REPO = Path(__file__).resolve().parents[1]
VERSION = re.compile(r"\b(?:2[0-9]\.[0-9]+\.[0-9]+|20[0-9]{2}\.[0-9]{1,2}\.[0-9]{1,2})\b")


def test_no_test_tool_or_benchmark_names_a_version() -> None:
    files = [REPO / "Makefile", REPO / ".ci" / "run"]
    for base in (REPO / "tests", REPO / "tools", PATCH_DIR / "runtime" / "test"):
        files += [p for p in base.rglob("*") if p.is_file() and p.suffix in (".py", ".mjs", ".cjs", ".js", ".sh")
                  and "vectors" not in p.parts]
    hits = [f"{p.relative_to(REPO)}:{n}: {ln.strip()}" for p in files
            for n, ln in enumerate(p.read_text(errors="replace").splitlines(), 1) if VERSION.search(ln)]
    assert hits == [], "\n".join(hits)


def test_pinned_release_matches_the_manifest() -> None:
    assert orjson.loads((PATCH_DIR / "manifest.json").read_bytes())["pinned"] == toolchain.OPENCLAW_VERSION
    for v in toolchain.OPENCLAW_RELEASES:
        assert (PATCH_DIR / "releases" / v / "manifest.json").is_file(), f"no known-good manifest for {v}"


@pytest.mark.parametrize("machine,arch", [("x86_64", "x64"), ("amd64", "x64"), ("aarch64", "arm64"),
                                          ("arm64", "arm64")])
def test_node_package_per_cpu(machine: str, arch: str) -> None:
    assert toolchain.node_pkg(machine) == f"node-linux-{arch}"
    assert toolchain.pinned_node(machine).parts[-4:] == ("node_modules", f"node-linux-{arch}", "bin", "node")


def test_unknown_cpu_is_refused() -> None:
    with pytest.raises(RuntimeError, match="only x64 and arm64"):
        toolchain.node_arch("riscv64")


def test_cache_and_node_discovery_follow_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTLOG_CACHE", str(tmp_path / "c"))
    monkeypatch.delenv("EVENTLOG_NODE", raising=False)
    assert toolchain.cache_dir() == tmp_path / "c"
    assert toolchain.pinned_node().is_relative_to(tmp_path / "c")
    monkeypatch.setenv("PATH", str(tmp_path))  # no cached node, no node on PATH
    assert toolchain.find_node() is None and toolchain.node_or_default() == "node"
    fake = tmp_path / "node"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert toolchain.find_node() == fake
    monkeypatch.setenv("EVENTLOG_NODE", "/opt/x/node")
    assert toolchain.find_node() == Path("/opt/x/node")


def test_makefile_reads_the_module() -> None:
    """`make -n` shows the toolchain's values in the Makefile's commands (stdlib-only module, any python3)."""
    r = subprocess.run(["make", "-n", "-B", "node", "openclaw"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"{toolchain.node_pkg()}@{toolchain.NODE_VERSION}" in r.stdout
    assert f"openclaw@{toolchain.OPENCLAW_VERSION}" in r.stdout
    out = subprocess.run([sys.executable, "-m", "eventlog.toolchain", "get", "NOPE"], capture_output=True, text=True)
    assert out.returncode == 2 and "usage" in out.stderr
