"""Where the patch set's files are: what the package ships, and the per-user data location the commands write to.

Shipped (read-only, inside the installed package): the manifest, the JS runtime, the known-good release manifests and
diffs under ``eventlog/patches/openclaw/``. Written by ``rebase``, ``diffs`` and ``matrix`` (never into the package or
the current directory unless ``--out`` says so): ``$EVENTLOG_DATA_DIR``, else ``$XDG_DATA_HOME/openclaw-eventlog``,
else ``~/.local/share/openclaw-eventlog``, laid out like the shipped tree (``releases/<v>/manifest.json``,
``diffs/<v>/*.diff``, ``matrix.md``).
"""
from __future__ import annotations

from pathlib import Path

from ..config import data_dir  # the one data-dir rule

PACKAGE_ROOT = Path(__file__).resolve().parents[1]          # the installed `eventlog` package
PATCH_DIR = PACKAGE_ROOT / "patches" / "openclaw"           # shipped: manifest.json, runtime/, releases/, diffs/
DEFAULT_MANIFEST = PATCH_DIR / "manifest.json"


def release_manifest_candidates(version: str) -> list[Path]:
    """Where a manifest for one release may be, in the order they are tried: the user's rebases, then the shipped."""
    return [data_dir() / "releases" / version / "manifest.json", PATCH_DIR / "releases" / version / "manifest.json"]


def diffs_dir(version: str, shipped: bool = False) -> Path:
    return (PATCH_DIR if shipped else data_dir()) / "diffs" / version
