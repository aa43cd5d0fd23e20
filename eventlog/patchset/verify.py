"""`rebase --verify`: the e2e smoke on a release's real gateway. One update goes in and must be logged; one leaked key
goes out and must never reach the fake Telegram.

The release is installed with its dependencies into the cache (`npm install openclaw@VERSION`, ~1 min, ~650 MB),
copied, patched with the rebased manifest, and run offline with the smoke harness (eventlog.smoke.harness).
"""
from __future__ import annotations

import os
import secrets
import shutil
import string
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from eventlog.patchset.errors import PatchError
from eventlog.patchset.install import apply
from eventlog.patchset.manifest import Manifest
from eventlog import toolchain
from eventlog.patchset.tree import node_binary


def installed_release(version: str) -> Path:
    """The package root of openclaw@VERSION with its dependencies; the `make openclaw` install for the pinned one."""
    pinned = toolchain.openclaw_prefix(version) / "node_modules" / "openclaw"
    if (pinned / "openclaw.mjs").is_file():
        return pinned
    dest = toolchain.cache_dir() / "rebase-installs" / version
    pkg = dest / "node_modules" / "openclaw"
    if (pkg / "openclaw.mjs").is_file() and (dest / ".complete").is_file():
        return pkg
    dest.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PATH=f"{Path(node_binary()).parent}:{os.environ.get('PATH', '')}")
    r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", f"openclaw@{version}"], cwd=dest,
                       env=env, capture_output=True, text=True, timeout=1200)
    if r.returncode or not (pkg / "openclaw.mjs").is_file():
        raise PatchError("install-failed", f"npm install openclaw@{version} failed: {r.stderr.strip()[-300:]}")
    (dest / ".complete").write_text("ok\n")
    return pkg


def _gateway_class(base: type, pkg: Path) -> type:
    """The harness's config, minus what an older release's config schema rejects.

    `models.catalogRefresh` (needed from 2026.8 on, or the gateway fetches a public catalog at start) is unknown
    before that, and those releases refuse the whole config ("models: Invalid input"). Older releases do not have
    the catalog fetch either, so leaving the key out keeps them offline.
    """
    from eventlog.patchset.locate import candidate_files
    if any(b"catalogRefresh" in (pkg / f).read_bytes() for f in candidate_files(pkg, ["catalogRefresh"])):
        return base

    class OlderRelease(base):  # type: ignore[misc, valid-type]
        def config(self) -> dict[str, Any]:
            cfg = super().config()
            cfg.get("models", {}).pop("catalogRefresh", None)
            return cfg

    return OlderRelease


def _records(base: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in base.rglob("*.jsonl") if base.is_dir() else ():
        out += [orjson.loads(ln) for ln in p.read_bytes().splitlines() if ln.strip()]
    return out


def _key() -> str:
    alnum = string.ascii_letters + string.digits
    return "sk-ant-api03-" + "".join(secrets.choice(alnum) for _ in range(93)) + "AA"  # the real shape: 108 characters


def smoke(version: str, manifest: Manifest, timeout: float = 300.0) -> dict[str, Any]:
    """Run the smoke; returns {ok, checks: {...}, reason?}. Never raises for a failed check."""
    from eventlog.smoke.harness import Gateway, HarnessError, clone_openclaw

    source = installed_release(version)
    work = Path(tempfile.mkdtemp(prefix=f"eventlog-verify-{version}-"))
    g = None
    checks: dict[str, Any] = {}
    try:
        pkg = clone_openclaw(work / "pkg", source)
        apply(pkg, manifest)
        g = _gateway_class(Gateway, pkg)(work / "gw", openclaw_dir=pkg)
        g.start(timeout=timeout)
        user = g.new_user()
        marker = f"verify{secrets.token_hex(4)}"
        key = _key()
        g.llm.script(f"Here it is: {key} - done {marker}.", when=marker)
        mark = g.telegram.mark()
        upd = g.send_dm(f"key please {marker}", user)
        g.wait_reply(user, since=mark, contains=f"done {marker}", timeout=timeout)
        # The wait ends on events, not a sleep: the reply's message:sent record and its dlp:alert record (each is
        # written after the call it describes), or the deadline — then the checks below say which is missing.
        def sent(e: dict[str, Any]) -> bool:
            return e.get("event") == "message:sent" and e.get("chat_id") == str(user)

        def alert(e: dict[str, Any]) -> bool:
            return (e.get("event") == "dlp:alert" and e.get("chat_id") == str(user)
                    and e.get("rule") == "anthropic-api-key" and e.get("direction") == "out")

        deadline = time.monotonic() + 120
        while True:
            logged, alerts = _records(g.eventlog_root / "raw"), _records(g.eventlog_root / "dlp")
            if (any(map(sent, logged)) and any(map(alert, alerts))) or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        bodies = b"\n".join(r.raw for r in g.telegram.requests).decode("utf-8", "replace")
        stored = b"".join(p.read_bytes() for p in g.eventlog_root.rglob("*") if p.is_file()).decode("utf-8", "replace")
        pieces = {key[i:i + 12] for i in range(len(key) - 11)}
        checks["update_logged"] = any(e.get("update_id") == upd["update_id"] for e in logged)
        checks["reply_logged"] = any(map(sent, logged))
        checks["key_never_sent"] = not any(p in bodies for p in pieces)
        checks["alert_written"] = any(map(alert, alerts))  # the alert record itself, not the file's existence
        checks["key_never_stored"] = not any(p in stored for p in pieces)
        ok = all(checks.values())
        return {"ok": ok, "checks": checks, **({} if ok else {"reason": "a smoke check failed"})}
    except (HarnessError, PatchError) as e:
        return {"ok": False, "checks": checks, "reason": str(e).splitlines()[0][:300]}
    finally:
        if g is not None:
            g.stop()
        if not os.environ.get("EVENTLOG_KEEP_VERIFY"):
            shutil.rmtree(work, ignore_errors=True)
