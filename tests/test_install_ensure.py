"""Issue 10: ensure, guard, doctor, discovery and the fail-closed start on private copies of the REAL pinned dist.

The failure path: an "update" to a release whose anchors are gone (a mutated copy swapped in the way npm replaces the
package directory) makes `ensure` exit 2 with the tree unchanged, `guard` record `patch:failed`, and `doctor` exit 2
naming it. No gateway here (the upgrade on the real gateway is tests/e2e/test_upgrade.py).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from eventlog import toolchain
from patchset_util import link_clone, openclaw_source, snapshot, system_events

pytestmark = pytest.mark.openclaw

ANCHORS = ("bot.api.config.use(accountThrottler.transformer);",
           "bot.api.config.use(getOrCreateAccountThrottler(token).transformer);")


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eventlog", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout)


def base_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EVENTLOG_OPENCLAW_DIR", "EVENTLOG_ROOT")}
    env["EVENTLOG_DATA_DIR"] = str(tmp_path / "data")
    env.setdefault("EVENTLOG_CACHE", str(toolchain.cache_dir()))
    return env


def mutated_release(src: Path, dest: Path) -> Path:
    """A copy of the pinned release with both anchors deleted and a version no manifest knows."""
    pkg = link_clone(src, dest)
    for rel in subprocess.run(["grep", "-rlF", "-e", ANCHORS[0], "-e", ANCHORS[1], "dist"], cwd=pkg,
                              capture_output=True, text=True).stdout.split():
        p = pkg / rel
        text = p.read_text()
        p.unlink()  # break the hard link: the shared install stays pristine
        p.write_text(text.replace(ANCHORS[0], "").replace(ANCHORS[1], ""))
    meta = orjson.loads((pkg / "package.json").read_bytes())
    meta["version"] = toolchain.OPENCLAW_VERSION + "-anchorless"
    (pkg / "package.json").unlink()
    (pkg / "package.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
    return pkg


def test_ensure_applies_then_is_idempotent_and_refuses_anchorless_release(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    tree = link_clone(openclaw_source(), tmp_path / "oc" / "openclaw")
    r = cli("patch", "ensure", "--openclaw", str(tree), "--json", env=env)
    rep = orjson.loads(r.stdout)
    assert r.returncode == 0 and rep["result"] == "applied" and rep["found"]["how"] == "option", r.stderr
    r = cli("patch", "ensure", "--openclaw", str(tree), "--json", env=env)
    assert r.returncode == 0 and orjson.loads(r.stdout)["result"] == "ok"
    assert cli("patch", "audit", "--openclaw", str(tree), env=env).returncode == 0

    bad = mutated_release(openclaw_source(), tmp_path / "bad" / "openclaw")
    snap = snapshot(bad)
    r = cli("patch", "ensure", "--openclaw", str(bad), "--json", env=env)
    rep = orjson.loads(r.stdout)
    assert r.returncode == 2 and rep["ok"] is False and rep["error"] == "rebase-failed", rep
    assert "missing" in rep["reason"] and r.stderr.count("\n") == 1
    assert snapshot(bad) == snap, "ensure changed a tree it refused"
    assert not (tmp_path / "data" / "releases").exists(), "a failed rebase left a manifest behind"


def test_ensure_rebases_onto_an_unknown_release_and_saves_the_manifest(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    pkg = link_clone(openclaw_source(), tmp_path / "oc" / "openclaw")
    meta = orjson.loads((pkg / "package.json").read_bytes())
    meta["version"] = toolchain.OPENCLAW_VERSION + "-local"  # same code, a release no manifest names
    (pkg / "package.json").unlink()
    (pkg / "package.json").write_bytes(orjson.dumps(meta))
    r = cli("patch", "ensure", "--openclaw", str(pkg), "--json", env=env)
    rep = orjson.loads(r.stdout)
    assert r.returncode == 0 and rep["result"] == "rebased-and-applied" and rep["known_good"] is False, rep
    saved = tmp_path / "data" / "releases" / meta["version"] / "manifest.json"
    assert saved.is_file() and rep["manifest"] == str(saved)
    r = cli("patch", "status", "--openclaw", str(pkg), "--json", env=env)
    assert r.returncode == 0  # status finds the data-dir manifest for this release on its own
    assert orjson.loads(cli("patch", "ensure", "--openclaw", str(pkg), "--json", env=env).stdout)["result"] == "ok"


def test_ensure_replaces_a_stale_runtime_left_by_an_in_place_update(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    tree = link_clone(openclaw_source(), tmp_path / "oc" / "openclaw")
    assert cli("patch", "apply", "--openclaw", str(tree), env=env).returncode == 0
    rec = tree / "eventlog-tap" / "install.json"
    old = orjson.loads(rec.read_bytes())
    old["openclaw_version"] = "0.0.1"
    rec.write_bytes(orjson.dumps(old))
    shutil.rmtree(tree)  # the "new release": pristine dist, and the old runtime folder left in place
    link_clone(openclaw_source(), tree)
    (tree / "eventlog-tap").mkdir()
    rec.write_bytes(orjson.dumps(old))
    r = cli("patch", "ensure", "--openclaw", str(tree), "--json", env=env)
    rep = orjson.loads(r.stdout)
    assert r.returncode == 0 and rep["result"] == "applied" and rep["removed_stale_runtime"], rep


def test_discovery_order_and_status_says_why(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    prefix = tmp_path / "prefix"
    pkg = link_clone(openclaw_source(), prefix / "lib" / "node_modules" / "openclaw")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "openclaw").symlink_to("../lib/node_modules/openclaw/openclaw.mjs")
    env["PATH"] = f"{prefix / 'bin'}:{env['PATH']}"
    r = cli("patch", "status", "--json", env=env)
    rep = orjson.loads(r.stdout)
    assert rep["found"]["how"] == "path" and rep["openclaw_dir"] == str(pkg) and "on PATH" in rep["found"]["why"]
    human = cli("patch", "status", env=env).stdout
    assert "found by path" in human
    env["EVENTLOG_OPENCLAW_DIR"] = str(tmp_path / "nowhere")
    r = cli("patch", "status", "--json", env=env)
    assert r.returncode == 2 and orjson.loads(r.stdout)["found"]["how"] == "env"  # given, so no fall-through
    del env["EVENTLOG_OPENCLAW_DIR"]
    # no `openclaw` on PATH: the global npm root
    env["PATH"] = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != str(prefix / "bin"))
    env["NPM_CONFIG_PREFIX"] = str(prefix)
    if shutil.which("openclaw", path=env["PATH"]):
        pytest.fail("an `openclaw` on the test machine's PATH hides the npm-root case", pytrace=False)
    rep = orjson.loads(cli("patch", "status", "--json", env=env).stdout)
    assert rep["found"]["how"] == "npm-root" and rep["openclaw_dir"] == str(pkg)


def read_lines(path: Path) -> list[dict]:
    """The guard's JSON lines; anything else it printed (stderr) is a failure shown with the whole output."""
    text = path.read_text() if path.exists() else ""
    out = []
    for ln in text.splitlines():
        try:
            out.append(orjson.loads(ln))
        except orjson.JSONDecodeError:
            raise AssertionError(f"guard printed a non-JSON line:\n{text}") from None
    return out


def wait_for(pred, what: str, timeout: float = 300.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_guard_records_failed_update_and_doctor_names_it(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    root = tmp_path / "root"
    tree = link_clone(openclaw_source(), tmp_path / "nm" / "openclaw")
    out = tmp_path / "guard.out"
    with open(out, "wb") as f, open(tmp_path / "guard.err", "wb") as err:
        g = subprocess.Popen([sys.executable, "-m", "eventlog", "patch", "guard", "--openclaw", str(tree), "--root",
                              str(root), "--settle", "2", "--interval", "5"], stdout=f, stderr=err, env=env)
    try:
        first = wait_for(lambda: [e for e in read_lines(out) if e.get("event") == "patch:reapplied"],
                         "the initial apply")
        assert first[0]["old_version"] == first[0]["new_version"] == toolchain.OPENCLAW_VERSION
        # the "update": npm swaps in a new package directory; this release's anchors are gone
        bad = mutated_release(openclaw_source(), tmp_path / "staging" / "openclaw")
        os.rename(tree, tmp_path / "retired")
        os.rename(bad, tree)
        snap = snapshot(tree)
        failed = wait_for(lambda: [e for e in read_lines(out) if e.get("event") == "patch:failed"], "patch:failed")
        assert failed[0]["new_version"].endswith("-anchorless")
        assert failed[0]["old_version"] == toolchain.OPENCLAW_VERSION
        assert failed[0]["report"]["error"] == "rebase-failed"
        assert snapshot(tree) == snap, "guard changed a tree it could not patch"
    finally:
        g.send_signal(signal.SIGTERM)
        assert g.wait(60) == 0
    kinds = [e["event"] for e in system_events(root)]
    assert kinds == ["patch:reapplied", "patch:failed"]
    r = cli("patch", "ensure", "--openclaw", str(tree), "--json", env=env)
    assert r.returncode == 2 and snapshot(tree) == snap
    r = cli("doctor", "--openclaw", str(tree), "--root", str(root), "--json", env=env)
    checks = {c["check"]: c for c in map(orjson.loads, r.stdout.splitlines())}
    assert r.returncode == 2
    assert not checks["tap"]["ok"] and "not applied" in checks["tap"]["detail"]
    assert not checks["guard"]["ok"] and "patch:failed" in checks["guard"]["detail"]
    assert "rebase-failed" in checks["guard"]["detail"]
    human = cli("doctor", "--openclaw", str(tree), "--root", str(root), env=env).stdout.splitlines()
    assert len(human) == len(checks) and any(ln.startswith("FAIL guard") and "patch:failed" in ln for ln in human)
    # the operator installs a release that works and runs ensure by hand: the failure is reported as resolved
    os.rename(tree, tmp_path / "bad-retired")
    link_clone(openclaw_source(), tree)
    assert cli("patch", "ensure", "--openclaw", str(tree), env=env).returncode == 0
    r = cli("doctor", "--openclaw", str(tree), "--root", str(root), "--json", env=env)
    checks = {c["check"]: c for c in map(orjson.loads, r.stdout.splitlines())}
    assert checks["tap"]["ok"] and checks["guard"]["ok"] and "resolved" in checks["guard"]["detail"]


def test_wrapper_recipe_fails_closed(tmp_path: Path) -> None:
    """The non-systemd recipe: the gateway command never runs when the tap cannot be applied; it does when it can."""
    env = base_env(tmp_path)
    started = tmp_path / "gateway-started"
    fake_gateway = tmp_path / "gateway.sh"
    fake_gateway.write_text(f"#!/bin/sh\necho \"$@\" > {started}\n")
    fake_gateway.chmod(0o755)
    eventlog = f"{sys.executable} -m eventlog"
    bad = mutated_release(openclaw_source(), tmp_path / "bad" / "openclaw")
    good = link_clone(openclaw_source(), tmp_path / "good" / "openclaw")
    for pkg, code in ((bad, 2), (good, 0)):
        script = tmp_path / f"start-{code}.sh"
        r = cli("patch", "unit", "--wrapper", "--openclaw", str(pkg), "--out", str(script), env=env)
        assert r.returncode == 0, r.stderr
        text = script.read_text().replace(str(Path(sys.executable).parent / "eventlog"), eventlog)
        text = text.replace("exec openclaw gateway", f"exec {fake_gateway}")
        script.write_text(text)
        p = subprocess.run([str(script), "--port", "18789"], capture_output=True, text=True, env=env, timeout=600)
        assert p.returncode == code, p.stderr
        if code:
            assert not started.exists() and "NOT starting the gateway" in p.stderr
        else:
            assert started.read_text().strip() == "--port 18789"


def test_systemd_dropin_verifies_with_openclaws_own_unit(tmp_path: Path) -> None:
    """The drop-in `eventlog patch unit` writes, on the unit OpenClaw's own buildSystemdUnit renders (dist code run
    with Node), checked by `systemd-analyze verify` when the machine has it."""
    env = base_env(tmp_path)
    src = openclaw_source()
    mod = next((src / "dist").glob("systemd-unit-*.mjs"))
    node = str(toolchain.find_node())
    # buildSystemdUnit is the module's unit renderer; find it among the exports by what it returns
    js = ("const m = await import(process.argv[1]);"
          "for (const f of Object.values(m)) { if (typeof f !== 'function') continue;"
          " try { const u = f({description: 'OpenClaw Gateway', programArguments: [process.argv[2], process.argv[3],"
          " 'gateway', '--port', '18789'], environment: {}}); if (typeof u === 'string' && u.includes('ExecStart='))"
          " { process.stdout.write(u); process.exit(0); } } catch {} } process.exit(3);")
    r = subprocess.run([node, "--input-type=module", "-e", js, mod.as_uri(), node, str(src / "openclaw.mjs")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    unit_dir = tmp_path / "user"
    unit = unit_dir / "openclaw-gateway.service"
    unit_dir.mkdir()
    unit.write_text(r.stdout)
    assert "Restart=always" in r.stdout  # the facts service.py documents
    dropin = unit_dir / "openclaw-gateway.service.d" / "eventlog-ensure.conf"
    dropin.parent.mkdir()
    r = cli("patch", "unit", "--openclaw", str(src), "--out", str(dropin), env=env)
    assert r.returncode == 0 and str(Path.home()) in r.stderr
    text = dropin.read_text()
    assert "ExecStartPre=" in text and " patch ensure --openclaw " in text
    exe = text.split("ExecStartPre=", 1)[1].split()[0]
    assert os.access(exe, os.X_OK), f"ExecStartPre names {exe}, which is not executable"
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not installed: the drop-in text was checked, not verified by systemd")
    v = subprocess.run([analyze, "verify", "--user", "--man=no", str(unit)], capture_output=True, text=True,
                       env={**env, "SYSTEMD_UNIT_PATH": f"{unit_dir}:"})
    problems = [ln for ln in (v.stderr + v.stdout).splitlines()
                if "openclaw-gateway" in ln or "eventlog-ensure" in ln]
    assert v.returncode == 0 or not problems, v.stderr
    broken = dropin.read_text().replace("ExecStartPre=", "ExecStartPre=relative/not-absolute ")
    dropin.write_text(broken)
    v = subprocess.run([analyze, "verify", "--user", "--man=no", str(unit)], capture_output=True, text=True,
                       env={**env, "SYSTEMD_UNIT_PATH": f"{unit_dir}:"})
    assert v.returncode != 0 or "ExecStartPre" in v.stderr, "systemd-analyze accepted a broken drop-in: the check is void"
