"""`eventlog doctor`: what an operator cannot see, one check per line (issue 10, item 6).

Checks: the log root and its permissions; the OpenClaw install found (and how); the tap applied and audited; the last
guard outcome (a `patch:failed` newer than any `patch:reapplied` fails); the tap live (a `tap:start` newer than the
package's last change); the rules the running tap loaded equal the Python side's; the Node version against OpenClaw's
`engines.node`; free disk under the root.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson

from eventlog import toolchain
from eventlog.patchset.errors import PatchError
from eventlog.patchset.events import latest

MIN_FREE = 1 << 30


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"check": name, "ok": bool(ok), "detail": detail}


def check_root(root: Path) -> dict[str, Any]:
    if not root.exists():
        return _check("root", False, f"{root} does not exist (run `eventlog init`, or the tap creates it on start)")
    if not root.is_dir():
        return _check("root", False, f"{root} is not a directory")
    st = root.stat()
    mode = st.st_mode & 0o777
    problems = []
    if mode & 0o077:
        problems.append(f"mode {mode:04o} lets others in (want 0700)")
    if st.st_uid != os.getuid():
        problems.append(f"owned by uid {st.st_uid}, not {os.getuid()}")
    if not os.access(root, os.W_OK | os.X_OK):
        problems.append("not writable")
    return _check("root", not problems, f"{root} ({mode:04o})" + ("; " + "; ".join(problems) if problems else ""))


def _ts(s: Any) -> float | None:
    try:
        return _dt.datetime.fromisoformat(str(s).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _engines_ok(version: str, spec: str) -> bool:
    """node-semver subset: `||` of space-separated `>=a.b.c` / `<a` / `>a` / `<=a` comparators."""
    def key(v: str) -> tuple[int, ...]:
        parts = [int(x) for x in re.findall(r"\d+", v)[:3]]
        return tuple(parts + [0] * (3 - len(parts)))
    have = key(version)
    for alt in spec.split("||"):
        ok = True
        for cmp in alt.split():
            m = re.match(r"(>=|<=|>|<|=)?v?([\d.]+)", cmp)
            if not m:
                continue
            op, want = m.group(1) or "=", key(m.group(2))
            ok &= {">=": have >= want, "<=": have <= want, ">": have > want, "<": have < want,
                   "=": have[:len(m.group(2).split("."))] == want[:len(m.group(2).split("."))]}[op]
        if ok:
            return True
    return False


def check_node(pkg: Path | None, node: str | None) -> dict[str, Any]:
    spec = toolchain.NODE_ENGINES
    if pkg is not None:
        try:
            spec = orjson.loads((pkg / "package.json").read_bytes()).get("engines", {}).get("node") or spec
        except (OSError, orjson.JSONDecodeError, AttributeError):
            pass
    found = toolchain.find_node()
    exe = node or (str(found) if found else None)
    if not exe:
        return _check("node", False, "no `node` on PATH (OpenClaw needs Node " + spec + ")")
    try:
        v = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return _check("node", False, f"{exe}: {e}")
    ok = bool(v) and _engines_ok(v.lstrip("v"), spec)
    return _check("node", ok, f"{exe} {v or '?'}; OpenClaw wants {spec}")


def check_agent(config: str | os.PathLike[str] | None = None,
                env: dict[str, str] | None = None) -> dict[str, Any]:
    """The recall plugin (issue 13) is optional: absent is fine; installed but broken is not."""
    from eventlog.agent import agent_status

    st = agent_status(config, env=env)
    reg = st.get("registered") or {}
    if not (reg.get("load_path") or reg.get("entry")) and st.get("plugin_files") == "missing":
        return _check("agent", True, f"recall plugin not installed in {st['config']} (optional: `eventlog agent install`)")
    if st.get("ok"):
        return _check("agent", True, f"recall plugin registered in {st['config']}, files {st['plugin_files']}")
    return _check("agent", False, f"recall plugin in {st['config']}: " + "; ".join(st.get("problems") or ["not ok"])
                  + " (run `eventlog agent install` again)")


def check_disk(root: Path, min_free: int) -> dict[str, Any]:
    p = root
    while not p.exists() and p != p.parent:
        p = p.parent
    free = shutil.disk_usage(p).free
    return _check("disk", free >= min_free, f"{free / 2**30:.1f} GiB free under {p} (want >= {min_free / 2**30:.1f})")


def _last_change(pkg: Path, runtime_dir: str, record: dict[str, Any]) -> float:
    paths = [pkg / "package.json", pkg / runtime_dir / "install.json"]
    paths += [pkg / rel for rel in (record.get("files") or {})]
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


def run_checks(root: Path, openclaw: str | os.PathLike[str] | None = None, node: str | None = None,
               min_free: int = MIN_FREE) -> list[dict[str, Any]]:
    from eventlog.dlp.rules import default_path
    from eventlog.patchset.find import find_openclaw
    from eventlog.patchset.install import audit, openclaw_version
    from eventlog.patchset.manifest import manifest_for

    checks = [check_root(root)]
    pkg: Path | None = None
    record: dict[str, Any] = {}
    runtime_dir = "eventlog-tap"
    try:
        found = find_openclaw(openclaw)
        version = openclaw_version(found.dir)
        pkg = found.dir
        checks.append(_check("openclaw", True, f"{version} at {pkg} (found by {found.how}: {found.why})"))
    except PatchError as e:
        checks.append(_check("openclaw", False, e.message))
    if pkg is not None:
        try:
            m = manifest_for(pkg)
            runtime_dir = m.runtime_dir
            a = audit(pkg, m)
            if a["ok"]:
                checks.append(_check("tap", True, f"applied and audited clean (manifest {m.path.name} "
                                                  f"v{m.version} for {a['openclaw_version']})"))
            else:
                what = "not applied" if a["state"] == "not-applied" else a["state"] + ": " + ", ".join(
                    sorted({p.get("problem", "?") for p in a["problems"]}))
                checks.append(_check("tap", False, f"{what} on openclaw {a['openclaw_version']} "
                                                   "(run `eventlog patch ensure`)"))
            try:
                record = orjson.loads((pkg / runtime_dir / "install.json").read_bytes())
            except (OSError, orjson.JSONDecodeError):
                record = {}
        except PatchError as e:
            checks.append(_check("tap", False, e.message))
    else:
        checks.append(_check("tap", False, "no OpenClaw install to audit"))
    has_log = root.is_dir()
    last_patch = latest(root, ("patch:reapplied", "patch:failed")) if has_log else None
    if last_patch is None:
        checks.append(_check("guard", True, "no patch:reapplied / patch:failed recorded"))
    else:
        rep = last_patch.get("report") or {}
        detail = (f"{last_patch['event']} at {last_patch.get('ts')}: openclaw {last_patch.get('old_version')} -> "
                  f"{last_patch.get('new_version')}")
        ok = last_patch["event"] != "patch:failed"
        if not ok:
            detail += f": {rep.get('error')}: {rep.get('reason')}"
            # resolved since (an ensure/apply by hand after the failure): the tap audits clean and is newer
            applied = _ts(record.get("applied_at")) or 0.0
            if checks[-1]["check"] == "tap" and checks[-1]["ok"] and applied > (_ts(last_patch.get("ts")) or 0.0):
                ok, detail = True, detail + f"; resolved: the tap was applied again at {record.get('applied_at')}"
        checks.append(_check("guard", ok, detail))
    start = latest(root, ("tap:start",)) if has_log else None
    if start is None:
        checks.append(_check("tap-live", False, "no tap:start in the log: the patched gateway has not started "
                                                "(restart it after apply)"))
        checks.append(_check("rules", False, "no tap:start to compare the loaded rules with"))
    else:
        started = _ts(start.get("ts")) or 0.0
        changed = _last_change(pkg, runtime_dir, record) if pkg is not None else 0.0
        live = started > changed
        checks.append(_check("tap-live", live, f"tap:start at {start.get('ts')} (pid {start.get('pid')}, openclaw "
                             f"{start.get('openclaw_version')})" + ("" if live else "; older than the package's last "
                             f"change at {_dt.datetime.fromtimestamp(changed, _dt.timezone.utc).isoformat()} — "
                             "restart the gateway")))
        ours = hashlib.sha256(default_path().read_bytes()).hexdigest()
        theirs = start.get("rules_sha256")
        checks.append(_check("rules", theirs == ours, f"tap loaded {str(theirs)[:12]}, Python side {ours[:12]}"
                             + ("" if theirs == ours else " — differ: re-run `eventlog patch apply` and restart")))
    checks.append(check_node(pkg, node))
    checks.append(check_agent())
    checks.append(check_disk(root, min_free))
    return checks
