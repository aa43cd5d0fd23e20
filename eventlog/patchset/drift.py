"""What upstream changed around our anchors between two releases (issue 6, `eventlog patch drift`).

For each change and each release: the file found by content, the function that holds the anchor (its `scope`), and
the injection site (the anchor line with a few lines around it). Between the two releases it adds the unified diff
of that function. It also lists every `api.config.use(` site in each release, because a transformer that upstream
installs after ours would run outside the DLP filter.
"""
from __future__ import annotations

import difflib
import subprocess
from pathlib import Path
from typing import Any

from eventlog.patchset.locate import decode, scan_tree
from eventlog.patchset.manifest import Manifest, load_manifest
from eventlog.patchset.install import openclaw_version
from eventlog.patchset.rebase import locate_change, release_dir, scope_region

SITE_LINES = 4
MAX_DIFF_LINES = 400


def transformer_sites(pkg: Path) -> list[str]:
    """`file:line: code` of every `api.config.use(` in dist/ (ripgrep, else a Python walk)."""
    from eventlog.patchset.locate import _rg, iter_code_files
    rg = _rg()
    if rg:
        r = subprocess.run([rg, "-n", "-F", "-a", "--no-ignore", "--hidden", "--no-config", "-g", "*.mjs", "-g", "*.js",
                            "-e", "api.config.use(", "dist"], cwd=pkg, capture_output=True)
        lines = [ln for ln in decode(r.stdout).splitlines() if ln]
    else:
        lines = []
        for rel in iter_code_files(pkg):
            for i, ln in enumerate(decode((pkg / rel).read_bytes()).split("\n"), 1):
                if "api.config.use(" in ln:
                    lines.append(f"{rel}:{i}:{ln}")
    out = []
    for ln in sorted(lines):
        f, n, code = ln.split(":", 2)
        out.append(f"{f}:{n}: {code.strip()[:160]}")
    return out


def _side(pkg: Path, m: Manifest) -> dict[str, Any]:
    scan = scan_tree(pkg, m)
    side: dict[str, Any] = {"version": openclaw_version(pkg), "changes": {}, "transformers": transformer_sites(pkg)}
    for c in m.changes:
        rep = locate_change(pkg, c, scan.targets[c.id], m.marker)
        entry: dict[str, Any] = {"result": rep["result"], "file": (rep.get("target") or {}).get("new"),
                                 "reason": rep.get("reason"), "anchor": (rep.get("anchor") or {}).get("new")}
        if entry["file"]:
            text = decode((pkg / entry["file"]).read_bytes())
            region = scope_region(text, c.scope)
            if region:
                entry["function"] = text[region[0]:region[1]]
                entry["function_header"] = text[region[0]:text.find("\n", region[0])].strip()[:200]
            if entry["anchor"] and text.count(entry["anchor"]) == 1:
                lines = text.split("\n")
                i = text[:text.index(entry["anchor"])].count("\n")
                entry["site"] = [f"{n + 1}: {lines[n]}" for n in range(max(0, i - SITE_LINES),
                                                                        min(len(lines), i + SITE_LINES + 1))]
        side["changes"][c.id] = entry
    return side


def drift(a: str, b: str, manifest: Manifest | None = None) -> dict[str, Any]:
    m = manifest or load_manifest()
    left, right = _side(release_dir(a), m), _side(release_dir(b), m)
    changes = []
    for c in m.changes:
        x, y = left["changes"][c.id], right["changes"][c.id]
        diff = list(difflib.unified_diff((x.get("function") or "").split("\n"), (y.get("function") or "").split("\n"),
                                         f"{left['version']}/{x.get('file')}", f"{right['version']}/{y.get('file')}",
                                         n=2, lineterm=""))
        changes.append({
            "change": c.id, "scope": c.scope,
            "from": {k: v for k, v in x.items() if k != "function"},
            "to": {k: v for k, v in y.items() if k != "function"},
            "file_renamed": x.get("file") != y.get("file"),
            "anchor_changed": x.get("anchor") != y.get("anchor"),
            "function_diff": diff[:MAX_DIFF_LINES], "function_diff_truncated": len(diff) > MAX_DIFF_LINES,
        })
    return {"type": "drift", "from": left["version"], "to": right["version"], "changes": changes,
            "transformers": {"from": left["transformers"], "to": right["transformers"]}}


def render(rep: dict[str, Any]) -> str:
    out = [f"drift {rep['from']} -> {rep['to']}"]
    for c in rep["changes"]:
        f, t = c["from"], c["to"]
        out.append(f"\n== {c['change']} ({c['scope']})")
        out.append(f"   file:   {f.get('file')} -> {t.get('file')}")
        out.append(f"   result: {f['result']} -> {t['result']}" + (f" ({t['reason']})" if t.get("reason") else ""))
        out.append(f"   anchor: {f.get('anchor')}\n        -> {t.get('anchor')}")
        for label, side in (("before", f), ("after", t)):
            out.append(f"   --- injection site {label}:")
            out += [f"     {ln}" for ln in side.get("site", ["(not found)"])]
        out.append(f"   --- {c['scope']} diff ({len(c['function_diff'])} lines):")
        out += [f"     {ln}" for ln in c["function_diff"]]
    for label in ("from", "to"):
        out.append(f"\napi.config.use sites in {rep[label]}:")
        out += [f"   {s}" for s in rep["transformers"][label]]
    return "\n".join(out)
