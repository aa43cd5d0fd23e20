"""Which OpenClaw install the commands act on, and why (issue 10, item 2).

Order: ``--openclaw DIR``, else ``$EVENTLOG_OPENCLAW_DIR``, else the package behind the ``openclaw`` command on ``PATH``
(npm's global bin links ``openclaw`` to ``<root>/openclaw/openclaw.mjs``; the link is followed to the package root),
else ``$(npm root -g)/openclaw``. The first source that is given decides: a wrong ``--openclaw`` is an error, never a
silent fall-through to another install.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from eventlog.patchset.errors import PatchError


@dataclass(frozen=True)
class Found:
    dir: Path
    how: str        # option | env | path | npm-root
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"dir": str(self.dir), "how": self.how, "why": self.why}


def _is_openclaw(pkg: Path) -> bool:
    try:
        meta = orjson.loads((pkg / "package.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(meta, dict) and meta.get("name") == "openclaw"


def package_of_command(cmd: str) -> Path | None:
    """The openclaw package root behind an `openclaw` executable (symlink followed, parents walked)."""
    real = Path(os.path.realpath(cmd))
    for d in [real.parent, *real.parents][:6]:
        if _is_openclaw(d):
            return d
    # a wrapper script in <prefix>/bin (no symlink): npm's layout puts the package at <prefix>/lib/node_modules
    prefix = Path(cmd).resolve().parent.parent
    for cand in (prefix / "lib" / "node_modules" / "openclaw", prefix / "node_modules" / "openclaw"):
        if _is_openclaw(cand):
            return cand
    return None


def find_openclaw(given: str | os.PathLike[str] | None = None) -> Found:
    if given:
        return Found(Path(given), "option", "--openclaw was given")
    env = os.environ.get("EVENTLOG_OPENCLAW_DIR")
    if env:
        return Found(Path(env), "env", "$EVENTLOG_OPENCLAW_DIR is set")
    cmd = shutil.which("openclaw")
    if cmd:
        pkg = package_of_command(cmd)
        if pkg is not None:
            return Found(pkg, "path", f"the `openclaw` command on PATH ({cmd}) belongs to this package")
    try:
        out = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        raise PatchError("no-openclaw", "no OpenClaw found: no --openclaw DIR, no $EVENTLOG_OPENCLAW_DIR, no `openclaw` "
                         "on PATH, and `npm root -g` failed") from None
    pkg = Path(out.stdout.strip()) / "openclaw"
    why = "the global npm root (`npm root -g`)" + (
        f"; the `openclaw` on PATH ({cmd}) is not an npm package" if cmd else "; no `openclaw` on PATH")
    if not _is_openclaw(pkg):
        raise PatchError("no-openclaw", f"no OpenClaw found: nothing given, no `openclaw` on PATH, and {pkg} is not "
                         "an installed openclaw package (pass --openclaw DIR)")
    return Found(pkg, "npm-root", why)
