"""The patch-set manifest: what is changed in an installed OpenClaw, where, and why.

The manifest names target files by *content signature* (never by the hashed chunk name, which changes every
release) and anchors by text that must occur exactly once. Everything else (import path, marker comments) is
derived here so apply, audit and revert agree byte for byte on what "our lines" are.
"""
from __future__ import annotations

import hashlib
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from eventlog.patchset.errors import PatchError
from eventlog.patchset.paths import DEFAULT_MANIFEST, PACKAGE_ROOT, release_manifest_candidates

MANIFEST_VERSION = 1
# static `import … from "./x.mjs"`, bare `import "./x.mjs"` and dynamic `import("./x.mjs")` of sibling modules, and
# `new URL("./x.mjs", import.meta.url)` (how writer-thread.mjs names its worker thread's module)
_LOCAL_IMPORT = re.compile(
    r"""(?:\bfrom|\bimport|\bnew URL)\s*\(?\s*["'](\./[^"']+)["'](?:\s*,\s*import\.meta\.url)?""")


@dataclass(frozen=True)
class Change:
    id: str
    why: str
    signature: tuple[str, ...]
    anchor: str
    insert: str
    known_good: tuple[str, ...]
    scope: str = ""                     # the function that holds the anchor (where re-anchoring may look)
    requires: tuple[str, ...] = ()      # identifiers the inserted call uses; must be declared in that scope

    def marker(self, prefix: str) -> str:
        return f"// {prefix}:{self.id}"

    def import_marker(self, prefix: str) -> str:
        return f"// {prefix}:{self.id}:import"


@dataclass(frozen=True)
class Manifest:
    path: Path
    version: int
    marker: str
    binding: str
    runtime_dir: str
    runtime_entry: str
    runtime_source: Path
    runtime_extra: tuple[tuple[Path, str], ...]
    changes: tuple[Change, ...]
    pinned: str
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    def runtime_files(self) -> dict[str, Path]:
        """Every file installed into the runtime dir: name there -> source in the repo."""
        files: dict[str, Path] = {}
        if not self.runtime_source.is_dir():
            raise PatchError("runtime-missing", f"runtime source not found: {self.runtime_source}")
        # Ship exactly the entry's relative-import closure: tests, drivers and benches in the same folder stay home.
        todo = [self.runtime_entry]
        while todo:
            name = todo.pop()
            if name in files:
                continue
            src = self.runtime_source / name
            if not src.is_file():
                raise PatchError("runtime-missing", f"runtime module not found: {src}")
            files[name] = src
            for spec in _LOCAL_IMPORT.findall(src.read_text(encoding="utf-8")):
                dep = posixpath.normpath(posixpath.join(posixpath.dirname(name), spec))
                if dep.startswith("../") or not dep.endswith((".mjs", ".js", ".json")):
                    continue  # outside the runtime folder: found at run time through other means
                todo.append(dep)
        for src, dst in self.runtime_extra:
            files[dst] = src
        for name, src in files.items():
            if not src.is_file():
                raise PatchError("runtime-missing", f"runtime file not found: {src} (for {name})")
        return files

    def runtime_hashes(self) -> dict[str, str]:
        return {name: sha256_file(p) for name, p in self.runtime_files().items()}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


def _req(obj: dict[str, Any], key: str, typ: type, where: str) -> Any:
    val = obj.get(key)
    if not isinstance(val, typ):
        raise PatchError("bad-manifest", f"{where}: field {key!r} missing or not {typ.__name__}")
    return val


def load_manifest(path: Path | None = None) -> Manifest:
    """Read and validate the manifest; a malformed manifest is a PatchError (exit 2), never a traceback."""
    path = Path(path or os.environ.get("EVENTLOG_PATCH_MANIFEST") or DEFAULT_MANIFEST)
    try:
        raw = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise PatchError("bad-manifest", f"manifest not found: {path}") from None
    except orjson.JSONDecodeError as e:
        raise PatchError("bad-manifest", f"manifest is not valid JSON: {path}: {e}") from None
    if not isinstance(raw, dict):
        raise PatchError("bad-manifest", f"manifest must be a JSON object: {path}")
    version = _req(raw, "manifest_version", int, "manifest")
    if version != MANIFEST_VERSION:
        raise PatchError("bad-manifest", f"unsupported manifest_version {version} (this tool reads {MANIFEST_VERSION})")
    rt = _req(raw, "runtime", dict, "manifest")
    source = _req(rt, "source", str, "runtime")
    base = _runtime_base(path, source)
    changes = []
    seen: set[str] = set()
    for i, c in enumerate(_req(raw, "changes", list, "manifest")):
        where = f"changes[{i}]"
        if not isinstance(c, dict):
            raise PatchError("bad-manifest", f"{where} is not an object")
        cid = _req(c, "id", str, where)
        if cid in seen or not cid.replace("-", "").isalnum():
            raise PatchError("bad-manifest", f"{where}: id {cid!r} duplicated or not [A-Za-z0-9-]")
        seen.add(cid)
        target = _req(c, "target", dict, where)
        sig = _req(target, "signature", list, where + ".target")
        if not sig or not all(isinstance(s, str) and s for s in sig):
            raise PatchError("bad-manifest", f"{where}: target.signature must be non-empty strings")
        anchor = _req(c, "anchor", str, where)
        insert = _req(c, "insert", str, where)
        if "\n" in anchor or "\n" in insert or not anchor.strip() or not insert.strip():
            raise PatchError("bad-manifest", f"{where}: anchor and insert must be single non-empty lines")
        changes.append(Change(id=cid, why=_req(c, "why", str, where), signature=tuple(sig), anchor=anchor,
                              insert=insert, known_good=tuple(c.get("known_good") or ()),
                              scope=str(c.get("scope") or ""), requires=tuple(c.get("requires") or ())))
    extra = tuple((_resolve(base, e["from"]), e["to"]) for e in rt.get("extra", []))
    return Manifest(
        path=path, version=version, marker=_req(raw, "marker", str, "manifest"),
        binding=_req(raw, "binding", str, "manifest"), runtime_dir=_req(rt, "dir", str, "runtime"),
        runtime_entry=_req(rt, "entry", str, "runtime"), runtime_source=_resolve(base, source),
        runtime_extra=extra, changes=tuple(changes), pinned=str(raw.get("pinned", "")), raw=raw,
    )


def _runtime_base(path: Path, source: str) -> Path:
    """Runtime paths in a manifest are relative to the `eventlog` package that ships them. A manifest in a project
    tree of its own (an ancestor holding `source`) uses that tree's runtime; rebased manifests in the data dir and
    anywhere else use the installed package's."""
    from eventlog.config import data_dir
    resolved = path.resolve()
    if data_dir().resolve() in resolved.parents:
        return PACKAGE_ROOT
    return next((a for a in resolved.parents if (a / source).is_dir()), PACKAGE_ROOT)


def _resolve(base: Path, rel: str) -> Path:
    """base/rel, else the installed package's file (manifests written before the move say
    `eventlog/dlp/rules.json` for the package's `dlp/rules.json`)."""
    p = base / rel
    return p if p.exists() else PACKAGE_ROOT / rel.removeprefix("eventlog/")


def release_manifest(version: str, m: Manifest | None = None) -> Manifest | None:
    """The manifest made for one release: the pinned one, else a rebase in the data dir, else a shipped one."""
    m = m or load_manifest()
    if version == m.pinned:
        return m
    for p in release_manifest_candidates(version):
        if p.is_file():
            return load_manifest(p)
    return None


def manifest_for(pkg: Path, given: Path | None = None) -> Manifest:
    """--manifest if given; else the manifest made for the tree's release (data dir, then shipped); else the
    default (pinned) one."""
    if given:
        return load_manifest(given)
    m = load_manifest()
    try:
        version = orjson.loads((pkg / "package.json").read_bytes()).get("version")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return m
    return release_manifest(str(version), m) or m
