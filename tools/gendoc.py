"""The shared end of the doc generators (gen_cli_docs.py, gen_env_docs.py): write the file, or with --check say it is
stale (exit 1) without writing."""
from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(out: Path, text: str, argv: list[str], command: str) -> int:
    if "--check" in argv:
        if not out.is_file() or out.read_text(encoding="utf-8") != text:
            print(f"{out.parent.name}/{out.name} is stale: run `{command}`", file=sys.stderr)
            return 1
        return 0
    out.write_text(text, encoding="utf-8")
    return 0
