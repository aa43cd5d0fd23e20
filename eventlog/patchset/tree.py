"""Cheap private copies of package trees and the Node binary the checks use."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from eventlog import toolchain


def link_clone(src: Path, dst: Path) -> Path:
    """Hard-link copy of a package tree: instant, and safe because the patch tool never writes a file in place
    (temp file + rename), so the originals cannot change through the links."""
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for d in list(dirnames):
            s = os.path.join(dirpath, d)
            if os.path.islink(s):
                os.symlink(os.readlink(s), dst / rel / d)
                dirnames.remove(d)
        for f in filenames:
            s = os.path.join(dirpath, f)
            if os.path.islink(s):
                os.symlink(os.readlink(s), dst / rel / f)
            else:
                try:
                    os.link(s, dst / rel / f)
                except OSError:  # another filesystem: copy
                    shutil.copy2(s, dst / rel / f)
    return dst


def node_binary() -> str:
    """$EVENTLOG_NODE, else the pinned Node of `make node`, else `node` on PATH (eventlog.toolchain)."""
    return toolchain.node_or_default()
