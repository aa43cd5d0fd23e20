"""Rebase speed per release (no verify), beside a plain `git apply --3way` of the pinned diffs on the same release.

For each release in the cache (`make releases`): wall time and peak RSS of `eventlog patch rebase --to <dir>
--dry-run` in a fresh process, and what `git apply --3way` of eventlog/patches/openclaw/diffs/<pinned>/*.diff does on a git
repo of that release's tree: whether it applies, how, in how long.

    python tools/bench/tap_rebase.py [--releases V1,V2,...]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from eventlog import toolchain  # noqa: E402
from eventlog.patchset.paths import PATCH_DIR  # noqa: E402
from eventlog.patchset.tree import link_clone  # noqa: E402
from tools.bench.common import run_measured, table  # noqa: E402

PINNED_DIFFS = PATCH_DIR / "diffs" / toolchain.OPENCLAW_VERSION


def git_apply(pkg: Path) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="tap-bench-git-") as tmp:
        link_clone(pkg / "dist", Path(tmp) / "dist")
        git = ["git", "-c", "user.email=b@b", "-c", "user.name=b", "-c", "core.autocrlf=false"]
        subprocess.run(git + ["init", "-q"], cwd=tmp, check=True)
        subprocess.run(git + ["add", "-A"], cwd=tmp, check=True)
        subprocess.run(git + ["commit", "-qm", "release"], cwd=tmp, check=True)
        t0 = time.perf_counter()
        r = subprocess.run(git + ["apply", "--3way", *sorted(map(str, PINNED_DIFFS.glob("*.diff")))], cwd=tmp,
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        msg = (r.stderr or r.stdout).strip().splitlines()
        return {"git_apply_ok": r.returncode == 0, "git_apply_s": round(wall, 2),
                "git_apply_says": (msg[-1] if msg else "")[:120]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", default=",".join((toolchain.OPENCLAW_VERSION, *toolchain.OPENCLAW_RELEASES)))
    args = ap.parse_args(argv)
    rows = []
    for v in args.releases.split(","):
        pkg = toolchain.cache_dir() / "releases" / v / "package"
        if not (pkg / "package.json").is_file():
            print(f"skip {v}: not in the cache (make releases)", file=sys.stderr)
            continue
        wall, rss, out = run_measured([sys.executable, "-m", "eventlog", "patch", "rebase", "--to", str(pkg),
                                       "--dry-run", "--json"], ok_codes=(0, 2))
        rep = json.loads(out.splitlines()[0])
        row = {"bench": "rebase", "release": v, "rebase_s": round(wall, 2), "rebase_peak_rss_mb": round(rss),
               "rebase": ", ".join(f"{c['change']}={c['result']}" for c in rep["changes"]), **git_apply(pkg)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(table(rows, ["release", "rebase_s", "rebase_peak_rss_mb", "rebase", "git_apply_ok", "git_apply_s",
                       "git_apply_says"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
