"""apply / revert / status / audit of the patch set on an installed OpenClaw package.

Invariants: plan everything in memory first (any missing or ambiguous anchor refuses before a byte is written);
write with backups, temp files and renames; roll back on any failure. The install record
`<runtime dir>/install.json` holds the original and patched hash of every target file and the runtime hashes,
which is what audit and revert check against.
"""
from __future__ import annotations

import datetime as _dt
import os
import shutil
from pathlib import Path
from typing import Any

import orjson

from eventlog import __version__
from eventlog.store.fsutil import fsync_dir, replace_file
from eventlog.patchset.errors import PatchError
from eventlog.patchset.locate import Scan, anchor_report, decode, encode, patch_text, scan_tree, strip_ours
from eventlog.patchset.manifest import Manifest, load_manifest, sha256_bytes, sha256_file

RECORD = "install.json"
BACKUP = "backup"
# OpenClaw's own first-start lifecycle removes this marker; it is never ours to restore or compare.
LIFECYCLE_MARKER = ".openclaw-lifecycle-pending"


def openclaw_version(pkg: Path) -> str:
    try:
        meta = orjson.loads((pkg / "package.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        raise PatchError("not-openclaw", f"{pkg} is not an installed openclaw package (no readable package.json)") from None
    if not isinstance(meta, dict) or meta.get("name") != "openclaw":
        raise PatchError("not-openclaw", f"{pkg} is not the openclaw package (package.json name is not 'openclaw')")
    return str(meta.get("version", "unknown"))


def _read_record(pkg: Path, m: Manifest) -> dict[str, Any] | None:
    p = pkg / m.runtime_dir / RECORD
    try:
        rec = orjson.loads(p.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError):
        return {"corrupt": True}
    return rec if isinstance(rec, dict) else {"corrupt": True}


def _write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Files inside OpenClaw's install keep their mode (the gateway may run as another user than the installer)."""
    replace_file(path, data, "eventlog-tmp", mode)


# ---------------------------------------------------------------- status

def status(pkg: Path, manifest: Manifest | None = None, scan: Scan | None = None) -> dict[str, Any]:
    """applied / not-applied / partial, with the OpenClaw and manifest versions and per-change detail."""
    m = manifest or load_manifest()
    version = openclaw_version(pkg)
    scan = scan or scan_tree(pkg, m)
    rec = _read_record(pkg, m)
    changes = []
    for c in m.changes:
        marked = scan.marked[c.id]
        changes.append({"change": c.id, "state": "applied" if marked else "not-applied", "files": marked,
                         "targets": scan.targets[c.id]})
    runtime_present = (pkg / m.runtime_dir).exists()
    applied = [c["state"] == "applied" for c in changes]
    if all(applied) and rec is not None and not rec.get("corrupt") and runtime_present:
        state = "applied"
    elif not any(applied) and not runtime_present and not scan.any_marker:
        state = "not-applied"
    else:
        state = "partial"
    return {"type": "status", "state": state, "openclaw_dir": str(pkg), "openclaw_version": version,
            "manifest_version": m.version, "applied_manifest_version": (rec or {}).get("manifest_version"),
            "runtime_dir": m.runtime_dir, "runtime_present": runtime_present, "record": rec is not None,
            "changes": changes}


# ---------------------------------------------------------------- plan + apply

def plan(pkg: Path, m: Manifest, scan: Scan) -> list[dict[str, Any]]:
    """Pristine tree -> list of {change, target, old bytes, new bytes}; raises a JSON-reported PatchError."""
    problems: list[dict[str, Any]] = []
    edits: dict[str, dict[str, Any]] = {}
    for c in m.changes:
        targets = scan.targets[c.id]
        if len(targets) != 1:
            problem = "missing-target" if not targets else "ambiguous-target"
            problems.append({"change": c.id, "problem": problem, "signature": list(c.signature), "files": targets})
            continue
        rel = targets[0]
        if rel in edits:
            problems.append({"change": c.id, "problem": "shared-target", "files": [rel]})
            continue
        old = (pkg / rel).read_bytes()
        try:
            new = encode(patch_text(decode(old), c, m, rel))
        except PatchError as e:
            problems.extend(e.report.get("changes") or [anchor_report(c, rel, -1, e.code)])
            continue
        edits[rel] = {"change": c.id, "target": rel, "old": old, "new": new}
    if problems:
        first = problems[0]
        raise PatchError(str(first["problem"]), f"refusing to patch: {first['change']}: {first['problem']}"
                         + (f" ({len(problems)} problems)" if len(problems) > 1 else ""),
                         {"ok": False, "error": first["problem"], "changes": problems})
    return list(edits.values())


def apply(pkg: Path, manifest: Manifest | None = None) -> dict[str, Any]:
    """Patch the tree (or refresh the runtime of an already patched one). Idempotent and all-or-nothing."""
    m = manifest or load_manifest()
    version = openclaw_version(pkg)
    scan = scan_tree(pkg, m)
    st = status(pkg, m, scan)
    if st["state"] == "applied":
        report = audit(pkg, m, scan)
        if report["ok"] and report["warnings"]:
            _refresh_runtime(pkg, m)
            return {"type": "apply", "ok": True, "result": "runtime-refreshed", "changed": [m.runtime_dir],
                    "openclaw_version": version}
        if report["ok"]:
            return {"type": "apply", "ok": True, "result": "already-applied", "changed": [],
                    "openclaw_version": version}
        raise PatchError("tree-modified", "the patched tree does not match its install record; run revert first",
                         {"ok": False, "error": "tree-modified", "problems": report["problems"]})
    if st["state"] == "partial":
        raise PatchError("partial", "the tree is partially patched; run `eventlog patch revert` first",
                         {"ok": False, "error": "partial", "status": st})
    edits = plan(pkg, m, scan)
    runtime = m.runtime_files()
    rt_dir = pkg / m.runtime_dir
    staging = pkg / f".{m.runtime_dir}.staging-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    done: list[dict[str, Any]] = []
    try:
        staging.mkdir()
        for name, src in runtime.items():
            shutil.copyfile(src, staging / name)
        for e in edits:
            b = staging / BACKUP / e["target"]
            b.parent.mkdir(parents=True, exist_ok=True)
            b.write_bytes(e["old"])
        record = {
            "manifest_version": m.version, "openclaw_version": version, "tap_version": __version__,
            "manifest_sha256": sha256_file(m.path) if m.path.is_file() else None,
            "applied_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "files": {e["target"]: {"change": e["change"], "original_sha256": sha256_bytes(e["old"]),
                                    "patched_sha256": sha256_bytes(e["new"])} for e in edits},
            "runtime": {name: sha256_file(staging / name) for name in runtime},
        }
        (staging / RECORD).write_bytes(orjson.dumps(record, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        os.rename(staging, rt_dir)
        for e in edits:
            path = pkg / e["target"]
            _write_atomic(path, e["new"], path.stat().st_mode & 0o7777)
            done.append(e)
        fsync_dir(pkg)
    except BaseException as exc:
        for e in done:  # roll back what was written, newest first is not needed: files are independent
            path = pkg / e["target"]
            _write_atomic(path, e["old"], path.stat().st_mode & 0o7777)
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(rt_dir, ignore_errors=True)
        if isinstance(exc, OSError):
            raise PatchError("write-failed", f"apply failed and was rolled back: {exc}") from None
        raise
    return {"type": "apply", "ok": True, "result": "applied", "openclaw_version": version,
            "manifest_version": m.version, "changed": [e["target"] for e in edits] + [m.runtime_dir],
            "changes": [{"change": e["change"], "target": e["target"]} for e in edits]}


def _refresh_runtime(pkg: Path, m: Manifest) -> None:
    """Swap in the current runtime files (keeps backups and file hashes); used when only the runtime changed."""
    rt_dir = pkg / m.runtime_dir
    rec = _read_record(pkg, m) or {}
    runtime = m.runtime_files()
    for name, src in runtime.items():
        _write_atomic(rt_dir / name, src.read_bytes())
    for stale in set(rec.get("runtime", {})) - set(runtime):
        (rt_dir / stale).unlink(missing_ok=True)
    rec["runtime"] = {name: sha256_file(rt_dir / name) for name in runtime}
    _write_atomic(rt_dir / RECORD, orjson.dumps(rec, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))


# ---------------------------------------------------------------- audit

def audit(pkg: Path, manifest: Manifest | None = None, scan: Scan | None = None) -> dict[str, Any]:
    """The installed tree matches the manifest exactly: each anchor once, our lines exact, hashes as recorded."""
    m = manifest or load_manifest()
    version = openclaw_version(pkg)
    scan = scan or scan_tree(pkg, m)
    st = status(pkg, m, scan)
    problems: list[dict[str, Any]] = []
    if st["state"] == "not-applied":
        return {"type": "audit", "ok": False, "state": "not-applied", "openclaw_version": version, "problems": []}
    rec = _read_record(pkg, m)
    if rec is None or rec.get("corrupt"):
        problems.append({"problem": "record-missing" if rec is None else "record-corrupt",
                         "file": f"{m.runtime_dir}/{RECORD}"})
        rec = {}
    files = rec.get("files", {})
    for c in m.changes:
        targets, marked = scan.targets[c.id], scan.marked[c.id]
        if len(targets) != 1:
            problems.append({"change": c.id, "problem": "missing-target" if not targets else "ambiguous-target",
                             "files": targets})
            continue
        rel = targets[0]
        if marked != [rel]:
            problems.append({"change": c.id, "problem": "marker-misplaced", "files": marked, "target": rel})
            continue
        data = (pkg / rel).read_bytes()
        text = decode(data)
        pristine, removed = strip_ours(text, m.marker)
        n = pristine.count(c.anchor)
        if n != 1:
            problems.append(anchor_report(c, rel, n, "missing-anchor" if n == 0 else "ambiguous-anchor"))
            continue
        try:
            expected = patch_text(pristine, c, m, rel)
        except PatchError as e:
            problems.append({"change": c.id, "problem": e.code, "target": rel})
            continue
        if expected != text:
            problems.append({"change": c.id, "problem": "lines-modified", "target": rel,
                             "found": removed})
        entry = files.get(rel)
        if not entry:
            problems.append({"change": c.id, "problem": "not-recorded", "target": rel})
        else:
            if sha256_bytes(encode(pristine)) != entry.get("original_sha256"):
                problems.append({"change": c.id, "problem": "upstream-code-modified", "target": rel})
            if sha256_bytes(data) != entry.get("patched_sha256"):
                problems.append({"change": c.id, "problem": "file-hash-mismatch", "target": rel})
    extra_marked = sorted(set(scan.any_marker) - {f for c in m.changes for f in scan.marked[c.id]})
    for rel in extra_marked:
        problems.append({"problem": "foreign-marker", "target": rel})
    rt_dir = pkg / m.runtime_dir
    recorded = rec.get("runtime", {})
    for name, digest in sorted(recorded.items()):
        p = rt_dir / name
        if not p.is_file():
            problems.append({"problem": "runtime-file-missing", "file": f"{m.runtime_dir}/{name}"})
        elif sha256_file(p) != digest:
            problems.append({"problem": "runtime-file-modified", "file": f"{m.runtime_dir}/{name}"})
    try:
        shipped = m.runtime_hashes()
    except PatchError:
        shipped = None  # auditing without the project's sources at hand: the record is the reference
    warnings: list[dict[str, Any]] = []
    if shipped is not None and recorded and shipped != recorded:
        # not tampering: the project's runtime moved on since apply; `apply` swaps the new one in
        warnings.append({"problem": "runtime-outdated", "detail": sorted(
            n for n in set(shipped) | set(recorded) if shipped.get(n) != recorded.get(n))})
    return {"type": "audit", "ok": not problems and st["state"] == "applied", "state": st["state"],
            "openclaw_version": version, "manifest_version": m.version, "problems": problems, "warnings": warnings}


# ---------------------------------------------------------------- revert

def revert(pkg: Path, manifest: Manifest | None = None) -> dict[str, Any]:
    """Restore every patched file byte for byte and remove the runtime; refuses if a file changed since apply."""
    m = manifest or load_manifest()
    version = openclaw_version(pkg)
    scan = scan_tree(pkg, m)
    st = status(pkg, m, scan)
    if st["state"] == "not-applied":
        return {"type": "revert", "ok": True, "result": "not-applied", "changed": [], "openclaw_version": version}
    rec = _read_record(pkg, m) or {}
    rt_dir = pkg / m.runtime_dir
    writes: list[tuple[Path, bytes]] = []
    problems: list[dict[str, Any]] = []
    marked_files = sorted(set(scan.any_marker) | set(rec.get("files", {})))
    for rel in marked_files:
        path = pkg / rel
        entry = rec.get("files", {}).get(rel)
        if not path.is_file():
            problems.append({"problem": "target-missing", "target": rel})
            continue
        data = path.read_bytes()
        stripped = encode(strip_ours(decode(data), m.marker)[0])
        if entry:
            orig = entry.get("original_sha256")
            if sha256_bytes(data) == orig:
                continue  # already pristine
            backup = rt_dir / BACKUP / rel
            if backup.is_file() and sha256_file(backup) == orig and sha256_bytes(stripped) == orig:
                writes.append((path, backup.read_bytes()))
            elif sha256_bytes(stripped) == orig:
                writes.append((path, stripped))
            else:
                problems.append({"problem": "modified-since-apply", "target": rel})
        else:
            # marker without a record (half-applied or foreign tree): removing exactly our lines is all we may do
            writes.append((path, stripped))
    if problems:
        raise PatchError(problems[0]["problem"], f"refusing to revert: {problems[0]['target']}: {problems[0]['problem']}",
                         {"ok": False, "error": problems[0]["problem"], "problems": problems})
    for path, data in writes:
        _write_atomic(path, data, path.stat().st_mode & 0o7777)
    shutil.rmtree(rt_dir, ignore_errors=True)
    for stale in pkg.glob(f".{m.runtime_dir}.staging-*"):
        shutil.rmtree(stale, ignore_errors=True)
    fsync_dir(pkg)
    return {"type": "revert", "ok": True, "result": "reverted", "openclaw_version": version,
            "changed": [str(p.relative_to(pkg)) for p, _ in writes] + ([m.runtime_dir] if st["runtime_present"] else []),
            "verified": bool(rec.get("files"))}
