"""Issue 10, "a real package": the built wheel in a fresh venv outside the checkout, run from another directory, on a
real OpenClaw install: apply, status, audit, ensure, doctor, revert, and `rebase --to <previous> --verify` (its real
gateway against the loopback fakes shipped in the wheel). Nothing is written under site-packages or the cwd.

Offline: the wheel is built and installed with --no-index from the wheelhouse `make wheelhouse` fills.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from eventlog import toolchain
from patchset_util import link_clone, openclaw_source, same_bytes

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def tree_hash(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


def test_wheel_in_a_clean_venv(tmp_path: Path) -> None:
    wh = Path(toolchain.values()["WHEELHOUSE"])
    if not (wh / ".complete").is_file():
        pytest.fail(f"no wheelhouse at {wh}: run `make wheelhouse`", pytrace=False)
    prev = toolchain.OPENCLAW_PREVIOUS
    if not (toolchain.cache_dir() / "rebase-installs" / prev / ".complete").is_file():
        pytest.fail(f"openclaw {prev} not in the cache: run `make releases`", pytrace=False)
    src = tmp_path / "src"  # the project as a user downloads it: package + metadata, no tests, no tools
    src.mkdir()
    shutil.copytree(REPO / "eventlog", src / "eventlog", ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / f, src / f)
    dist = tmp_path / "dist"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--find-links", str(wh),
                        "-w", str(dist), str(src)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    wheel = next(dist.glob("openclaw_eventlog-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True)
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-index", "--find-links", str(wh), str(wheel)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    site = next((venv / "lib").glob("python3*/site-packages"))
    shipped = site / "eventlog"
    for rel in ("patches/openclaw/manifest.json", "patches/openclaw/runtime/tap.mjs", "dlp/rules.json",
                f"patches/openclaw/releases/{prev}/manifest.json",
                f"patches/openclaw/diffs/{toolchain.OPENCLAW_VERSION}/send-bot.diff",
                "smoke/harness.py", "smoke/fake_telegram.py", "smoke/loopback_guard.cjs", "toolchain.py",
                "web/templates/base.html", "web/templates/alerts.html", "web/static/app.js", "web/static/style.css"):
        assert (shipped / rel).is_file(), f"the wheel lacks eventlog/{rel}"
    assert not (shipped / "patches" / "openclaw" / "runtime" / "test").exists()

    work = tmp_path / "elsewhere"
    work.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    oc = link_clone(openclaw_source(), tmp_path / "oc" / "node_modules" / "openclaw")
    node = str(toolchain.find_node())
    env = {"HOME": str(home), "PATH": f"{venv / 'bin'}:{Path(node).parent}:/usr/bin:/bin", "LANG": "C.UTF-8",
           "EVENTLOG_ROOT": str(tmp_path / "root"), "EVENTLOG_CACHE": str(toolchain.cache_dir()),
           "EVENTLOG_NODE": node, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    before_site, before_cwd = tree_hash(site), tree_hash(work)

    def ev(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(venv / "bin" / "eventlog"), *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=timeout)

    r = ev("patch", "apply", "--openclaw", str(oc), "--json")
    assert r.returncode == 0 and orjson.loads(r.stdout)["result"] == "applied", r.stderr
    r = ev("patch", "status", "--openclaw", str(oc), "--json")
    assert r.returncode == 0 and orjson.loads(r.stdout)["state"] == "applied"
    assert ev("patch", "audit", "--openclaw", str(oc)).returncode == 0
    r = ev("patch", "ensure", "--openclaw", str(oc), "--json")
    assert r.returncode == 0 and orjson.loads(r.stdout)["result"] == "ok", r.stdout
    assert ev("init").returncode == 0
    r = ev("doctor", "--openclaw", str(oc), "--node", node, "--json")
    checks = {c["check"]: c for c in map(orjson.loads, r.stdout.splitlines())}
    # no gateway ran here, so no tap:start: exactly the two liveness checks fail (the upgrade test shows them pass)
    assert r.returncode == 2 and {k for k, c in checks.items() if not c["ok"]} == {"tap-live", "rules"}, checks
    assert set(checks) == {"root", "openclaw", "tap", "guard", "tap-live", "rules", "node", "agent", "disk"}
    r = ev("patch", "revert", "--openclaw", str(oc), "--json")
    assert r.returncode == 0 and orjson.loads(r.stdout)["result"] == "reverted"
    assert same_bytes(openclaw_source(), oc) in ([], [".openclaw-lifecycle-pending"])

    r = ev("patch", "rebase", "--to", prev, "--verify", "--json", timeout=1200)
    rep = orjson.loads(r.stdout.splitlines()[0])
    assert r.returncode == 0, rep
    assert [c["result"] for c in rep["changes"]] == ["exact", "exact"] and rep["verified"] is True
    assert rep["verify"]["checks"] == {"update_logged": True, "reply_logged": True, "key_never_sent": True,
                                       "alert_written": True, "key_never_stored": True}
    data = home / ".local" / "share" / "openclaw-eventlog"
    assert rep["written"][0] == str(data / "releases" / prev / "manifest.json")
    assert (data / "diffs" / prev / "ingress-bot.diff").is_file()

    # the agent tool with a JSON5 config, from the wheel alone (issue 24: the json5 dependency ships with it)
    cfg = home / ".openclaw" / "openclaw.json"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("// by hand\n{\n  gateway: { mode: 'local', }, // loopback\n}\n")
    r = ev("agent", "install", "--json")
    assert r.returncode == 0 and orjson.loads(r.stdout)["config_format"] == "json5", r.stdout + r.stderr
    assert "// loopback" in cfg.read_text()
    r = ev("agent", "status", "--json")
    assert r.returncode == 0 and orjson.loads(r.stdout)["ok"], r.stdout

    assert tree_hash(site) == before_site, "a command wrote into the installed package"
    assert tree_hash(work) == before_cwd == {}, "a command wrote into the current directory"
