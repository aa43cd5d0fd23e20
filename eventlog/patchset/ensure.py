"""`eventlog patch ensure`: the one command wired into the gateway's start (issue 10, item 4).

Exit 0 when the tap is applied and audits clean afterwards: applied now if the installed release is known-good (the
pinned release, a rebase in the data dir, a shipped release manifest), or rebased onto it first when it is not and the
rebase re-anchors every change (the rebased manifest is saved in the data dir). Anything else raises PatchError with a
JSON report, and the tree is byte for byte what it was (apply plans everything before writing; a failed audit after
apply is reverted).
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson

from eventlog.patchset.errors import PatchError
from eventlog.patchset.install import apply, audit, openclaw_version, revert, status
from eventlog.patchset.manifest import Manifest, load_manifest, release_manifest


def _refuse(code: str, message: str, base: dict[str, Any], **extra: Any) -> PatchError:
    return PatchError(code, message, {**base, "ok": False, "result": "refused", "error": code, "reason": message,
                                      **extra})


def ensure(pkg: Path, manifest: Manifest | None = None) -> dict[str, Any]:
    version = openclaw_version(pkg)
    base_m = load_manifest()
    m = manifest or release_manifest(version, base_m)
    rep: dict[str, Any] = {"type": "ensure", "openclaw_dir": str(pkg), "openclaw_version": version,
                           "known_good": m is not None}
    st = status(pkg, m or base_m)
    if st["state"] == "partial" and _stale_runtime_only(pkg, m or base_m, st, version):
        # an update that overwrote the package in place: upstream files are new and unmarked, only our runtime
        # folder of the previous release is left — it is ours entirely, so it goes, and the tap is applied afresh
        shutil.rmtree(pkg / (m or base_m).runtime_dir)
        rep["removed_stale_runtime"] = True
        st = status(pkg, m or base_m)
    if st["state"] == "partial":
        raise _refuse("partial", "the tree is partially patched; run `eventlog patch revert` and look at it", rep,
                      status=st)
    if st["state"] == "applied":
        a = audit(pkg, m or base_m)
        if not a["ok"]:
            raise _refuse("audit-failed", "the tap is applied but does not audit clean: "
                          + ", ".join(sorted({p.get("problem", "?") for p in a["problems"]})), rep, audit=a)
        if a["warnings"]:
            apply(pkg, m or base_m)  # runtime moved on (an `eventlog` upgrade): swap in the shipped runtime
            return _done(pkg, m or base_m, rep, "runtime-refreshed")
        return _done(pkg, m or base_m, rep, "ok")
    rebase_rep = None
    if m is None:
        from eventlog.patchset.rebase import rebase
        rebase_rep = rebase(str(pkg), base_m, write=True)
        if not rebase_rep["ok"]:
            bad = [f"{c['change']}: {c['result']}" + (f" ({c['reason']})" if c.get("reason") else "")
                   for c in rebase_rep["changes"] if c["result"] not in ("exact", "re-anchored")]
            raise _refuse("rebase-failed", f"openclaw {version} is not known-good and the rebase does not re-anchor "
                          "every change: " + "; ".join(bad or rebase_rep.get("problems", [])), rep,
                          rebase=rebase_rep)
        m = load_manifest(Path(rebase_rep["written"][0]))
        rep["rebase"] = {"changes": [{k: c.get(k) for k in ("change", "result", "score")}
                                     for c in rebase_rep["changes"]], "manifest": str(m.path)}
    try:
        apply(pkg, m)
    except PatchError as e:
        raise _refuse(e.code, f"apply refused: {e.message}", rep, apply=e.report) from None
    a = audit(pkg, m)
    if not a["ok"]:
        revert(pkg, m)
        raise _refuse("audit-failed", "applied but the audit failed; reverted", rep, audit=a)
    return _done(pkg, m, rep, "rebased-and-applied" if rebase_rep else "applied")


def _stale_runtime_only(pkg: Path, m: Manifest, st: dict[str, Any], version: str) -> bool:
    if any(c["files"] for c in st["changes"]) or not st["runtime_present"]:
        return False
    try:
        rec = orjson.loads((pkg / m.runtime_dir / "install.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(rec, dict) and rec.get("openclaw_version") not in (None, version)


def _done(pkg: Path, m: Manifest, rep: dict[str, Any], result: str) -> dict[str, Any]:
    return {**rep, "ok": True, "result": result, "manifest": str(m.path), "manifest_version": m.version,
            "changed": result not in ("ok",)}
