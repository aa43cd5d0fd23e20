"""Re-anchor the patch set onto another OpenClaw release, by content, failing closed (issue 6).

For each change: the target is the one dist file holding every signature string; the anchor must occur there exactly
once (`exact`). If it does not occur, a fuzzy search looks at the statement lines (ending in `;`) of the function
named by `scope` in that file. rapidfuzz `ratio` of the whitespace-stripped line against the anchor must reach
THRESHOLD, and exactly one line may clear it (`re-anchored`). The new anchor must also be unique in the file and must
follow the declarations of every identifier the inserted call uses (`requires`). Anything else is `missing` or
`ambiguous`. A file that already does what the change does is `upstreamed`. Only a release where every change is
exact or re-anchored gets a manifest. That only happens after the patched copy passes `node --check` and the tap
import resolves.

Why 60: on the real releases the re-anchored lines score 66 (2026.8.2–2026.6.5 ingress: the throttler call lost its
`.transformer`) and 90 (send). With the anchor deleted, the best other statement in the same function scores 47
(ingress) and 54 (send). See docs/patchset.md, "Rebase".
"""
from __future__ import annotations

import copy
import os
import re
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import orjson
from rapidfuzz import fuzz

from eventlog.patchset.errors import PatchError
from eventlog.patchset.install import apply, openclaw_version, status
from eventlog.patchset.locate import decode, iter_code_files, scan_tree
from eventlog.patchset.manifest import Change, Manifest, load_manifest
from eventlog import toolchain
from eventlog.patchset.tree import link_clone, node_binary

THRESHOLD = 60.0
# a top-level declaration at column 0 ends the scope of the previous function in rolldown's flat chunks
_TOP_LEVEL = re.compile(r"^(?:async function|function|const|let|var|class|export|//#region|//#endregion)\b", re.M)
_VERSION = re.compile(r"^\d{4}\.\d{1,2}\.\d{1,2}(?:-[0-9A-Za-z.-]+)?$")


def release_dir(to: str) -> Path:
    """An OpenClaw package root: a directory given, or `npm pack openclaw@VERSION` unpacked into the cache."""
    p = Path(to)
    if p.is_dir():
        return p / "package" if (p / "package" / "package.json").is_file() else p
    if not _VERSION.match(to):
        raise PatchError("bad-release", f"not a directory and not a release version: {to!r}")
    dest = toolchain.cache_dir() / "releases" / to
    pkg = dest / "package"
    if (pkg / "package.json").is_file():
        return pkg
    tgz = release_tarball(to)
    tmp = Path(tempfile.mkdtemp(dir=dest))
    with tarfile.open(tgz) as tf:
        tf.extractall(tmp, filter="data")
    (tmp / "package").rename(pkg)
    tmp.rmdir()
    return pkg


def release_tarball(version: str) -> Path:
    """The release's npm tarball, kept in the cache (`npm install` of it needs no registry for the package itself)."""
    if not _VERSION.match(version):
        raise PatchError("bad-release", f"not a release version: {version!r}")
    dest = toolchain.cache_dir() / "releases" / version
    tgz = dest / f"openclaw-{version}.tgz"
    if tgz.is_file():
        return tgz
    dest.mkdir(parents=True, exist_ok=True)
    # the caller's environment as is (registry and proxy settings), with Node 26's directory first on PATH
    env = dict(os.environ, PATH=f"{Path(node_binary()).parent}:{os.environ.get('PATH', '')}")
    try:
        out = subprocess.run(["npm", "pack", f"openclaw@{version}", "--pack-destination", str(dest)],
                             capture_output=True, text=True, timeout=600, env=env, check=True)
    except (OSError, subprocess.SubprocessError) as e:
        detail = (getattr(e, "stderr", "") or str(e)).strip().splitlines()
        raise PatchError("fetch-failed", f"npm pack openclaw@{version} failed: {detail[-1] if detail else e}") from None
    packed = dest / out.stdout.strip().splitlines()[-1]
    if packed != tgz:
        packed.rename(tgz)
    return tgz


def scope_region(text: str, scope: str) -> tuple[int, int] | None:
    """Character span of the top-level function whose header contains `scope` (None if absent or not unique)."""
    if not scope:
        return 0, len(text)
    if text.count(scope) != 1:
        return None
    start = text.rfind("\n", 0, text.index(scope)) + 1
    m = _TOP_LEVEL.search(text, text.index("\n", start) + 1 if "\n" in text[start:] else len(text))
    return start, (m.start() if m else len(text))


def _declared_before(text: str, pos: int, start: int, ident: str) -> bool:
    region = text[start:pos]
    return re.search(rf"(?:\b(?:const|let|var)\s+{re.escape(ident)}\b|[(,]\s*{re.escape(ident)}\s*[,)=])", region) \
        is not None


def locate_change(pkg: Path, change: Change, targets: list[str], marker: str) -> dict[str, Any]:
    """Where the change goes in this tree, as a report entry (never raises for a content problem)."""
    rep: dict[str, Any] = {"change": change.id, "anchor": {"old": change.anchor}}
    if len(targets) != 1:
        rep.update(result="missing" if not targets else "ambiguous",
                   reason="no dist file holds every signature string" if not targets else
                   "the signature matches several files", files=targets, signature=list(change.signature))
        return rep
    rel = targets[0]
    rep["target"] = {"new": rel}
    text = decode((pkg / rel).read_bytes())
    if f"// {marker}:" in text:
        rep.update(result="ambiguous", reason="the target already carries an openclaw-eventlog marker")
        return rep
    call = change.insert.split("(", 1)[0]
    if call in text:
        rep.update(result="upstreamed", reason=f"the release already contains {call}(")
        return rep
    region = scope_region(text, change.scope)
    if region is None:
        rep.update(result="missing" if change.scope not in text else "ambiguous",
                   reason=f"scope {change.scope!r} not found exactly once")
        return rep
    start, end = region
    n = text.count(change.anchor)
    if n > 1:
        rep.update(result="ambiguous", reason=f"anchor occurs {n} times", occurrences=n)
        return rep
    if n == 1:
        pos = text.index(change.anchor)
        if not start <= pos < end:
            rep.update(result="ambiguous", reason="the anchor is outside its scope function")
            return rep
        rep.update(result="exact", score=100.0, anchor={"old": change.anchor, "new": change.anchor})
        return _check_requires(rep, change, text, pos, start)
    cands: list[dict[str, Any]] = []
    offset = start
    for line in text[start:end].split("\n"):
        s = line.strip()
        if s.endswith(";"):
            score = fuzz.ratio(change.anchor, s)
            if score >= THRESHOLD * 0.75:
                cands.append({"line": s, "score": round(score, 1), "pos": offset + line.index(s)})
        offset += len(line) + 1
    cands.sort(key=lambda c: -c["score"])
    rep["candidates"] = [{"line": c["line"][:200], "score": c["score"]} for c in cands[:3]]
    passing = [c for c in cands if c["score"] >= THRESHOLD]
    if not passing:
        rep.update(result="missing", reason=f"no statement in {change.scope!r} scores >= {THRESHOLD:g}")
        return rep
    if len(passing) > 1:
        rep.update(result="ambiguous", reason=f"{len(passing)} statements score >= {THRESHOLD:g}")
        return rep
    best = passing[0]
    if text.count(best["line"]) != 1:
        rep.update(result="ambiguous", reason="the candidate line is not unique in the file")
        return rep
    rep.update(result="re-anchored", score=best["score"], anchor={"old": change.anchor, "new": best["line"]})
    return _check_requires(rep, change, text, best["pos"], start)


def _check_requires(rep: dict[str, Any], change: Change, text: str, pos: int, start: int) -> dict[str, Any]:
    missing = [i for i in change.requires if not _declared_before(text, pos, start, i)]
    if missing:
        rep.update(result="missing", reason=f"identifiers not declared before the anchor: {', '.join(missing)}")
    return rep


def _old_targets(m: Manifest) -> dict[str, str]:
    """change id -> the file the pinned release's diff names (for the report's old -> new)."""
    out = {}
    from eventlog.patchset.paths import diffs_dir
    d = diffs_dir(m.pinned, shipped=True)
    for c in m.changes:
        p = d / f"{c.id}.diff"
        if p.is_file():
            first = p.read_text(errors="replace").split("\n", 1)[0]
            out[c.id] = first.removeprefix("--- a/")
    return out


def _static_check(pkg: Path, new_manifest: Manifest, work: Path) -> list[str]:
    """Apply to a hard-linked copy, then `node --check` every patched file and import the installed tap."""
    clone = link_clone(pkg, work / "openclaw")
    rep = apply(clone, new_manifest)
    node = node_binary()
    problems = []
    for rel in rep.get("changes", []):
        r = subprocess.run([node, "--check", str(clone / rel["target"])], capture_output=True, text=True)
        if r.returncode:
            problems.append(f"node --check {rel['target']}: {r.stderr.strip()[-300:]}")
    tap = clone / new_manifest.runtime_dir / new_manifest.runtime_entry
    r = subprocess.run([node, "--input-type=module", "-e", f"await import({orjson.dumps(tap.as_uri()).decode()})"],
                       capture_output=True, text=True)
    if r.returncode:
        problems.append(f"import of the tap failed: {r.stderr.strip()[-300:]}")
    return problems


def rebase(to: str, manifest: Manifest | None = None, out_dir: Path | None = None, write: bool = True,
           verify: bool = False) -> dict[str, Any]:
    """Rebase onto a release (version or directory). The release tree is never modified.

    With verify, the e2e smoke runs on that release's real gateway (needs a version, not just a directory).
    """
    m = manifest or load_manifest()
    pkg = release_dir(to)
    version = openclaw_version(pkg)
    scan = scan_tree(pkg, m)
    st = status(pkg, m, scan)
    old = _old_targets(m)
    changes: list[dict[str, Any]] = []
    for c in m.changes:
        if st["state"] != "not-applied":
            changes.append({"change": c.id, "result": "ambiguous",
                            "reason": f"the tree is {st['state']} (already patched); rebase needs a pristine release"})
            continue
        targets = scan.targets[c.id]
        if not targets:
            # the signature drifted: a file that still holds the scope function is the only fuzzy candidate
            targets = [f for f in iter_code_files(pkg) if c.scope and c.scope.encode() in (pkg / f).read_bytes()] \
                if c.scope else []
        rep = locate_change(pkg, c, targets, m.marker)
        if c.id in old:
            rep.setdefault("target", {})["old"] = old[c.id]
        changes.append(rep)
    ok = all(r["result"] in ("exact", "re-anchored") for r in changes)
    report: dict[str, Any] = {"type": "rebase", "release": version, "dir": str(pkg), "ok": ok,
                              "threshold": THRESHOLD, "changes": changes, "verified": False}
    if not ok:
        return report
    raw = copy.deepcopy(m.raw)
    for entry, done in zip(raw["changes"], changes, strict=True):
        entry["anchor"] = done["anchor"]["new"]
        entry["rebase"] = {"from": m.pinned, "result": done["result"], "score": done.get("score"),
                           "file": done["target"]["new"]}
        entry["known_good"] = []  # filled by a passing --verify
    raw["pinned"] = version
    raw["rebased_from"] = m.pinned
    with tempfile.TemporaryDirectory(prefix="eventlog-rebase-") as tmp:
        mpath = Path(tmp) / "manifest.json"
        mpath.write_bytes(orjson.dumps(raw, option=orjson.OPT_INDENT_2))
        new_m = _with_base(m, raw, mpath)  # same runtime and rules as the project's manifest
        problems = _static_check(pkg, new_m, Path(tmp))
    if problems:
        report.update(ok=False, problems=problems)
        for r in changes:
            r["result"] = "missing" if r["result"] == "exact" else r["result"]
        return report
    if verify:
        from eventlog.patchset.verify import smoke
        with tempfile.TemporaryDirectory(prefix="eventlog-rebase-") as tmp:
            res = smoke(version, _with_base(m, raw, Path(tmp) / "manifest.json"))
        report["verify"] = res
        report["verified"] = bool(res["ok"])
        if res["ok"]:
            for entry in raw["changes"]:
                entry["known_good"] = [version]
    raw["verified"] = report["verified"]
    if write and (version != m.pinned or out_dir):  # the pinned release's manifest and diffs are the defaults
        report["written"] = [str(p) for p in write_release(pkg, raw, m, out_dir)]
    return report


def _with_base(m: Manifest, raw: dict[str, Any], path: Path) -> Manifest:
    """The rebased manifest, resolved against the project root of the original (its runtime and rules)."""
    from dataclasses import replace
    changes = tuple(replace(c, anchor=e["anchor"]) for c, e in zip(m.changes, raw["changes"], strict=True))
    return replace(m, changes=changes, path=path, pinned=raw["pinned"], raw=raw)


def write_release(pkg: Path, raw: dict[str, Any], m: Manifest, out_dir: Path | None) -> list[Path]:
    """<data dir>/releases/<v>/manifest.json and <data dir>/diffs/<v>/*.diff (or out_dir/manifest.json, out_dir/diffs/)."""
    from eventlog.patchset.diffs import render_diffs
    from eventlog.config import data_dir
    version = raw["pinned"]
    mdir = out_dir or data_dir() / "releases" / version
    ddir = (out_dir / "diffs") if out_dir else data_dir() / "diffs" / version
    mdir.mkdir(parents=True, exist_ok=True)
    ddir.mkdir(parents=True, exist_ok=True)
    mpath = mdir / "manifest.json"
    mpath.write_bytes(orjson.dumps(raw, option=orjson.OPT_INDENT_2) + b"\n")
    new_m = _with_base(m, raw, mpath)
    written = [mpath]
    for cid, text in render_diffs(pkg, new_m).items():
        p = ddir / f"{cid}.diff"
        p.write_text(text, encoding="utf-8", errors="surrogateescape")
        written.append(p)
    return written
