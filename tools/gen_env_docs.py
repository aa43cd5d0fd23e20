"""Render docs/environment.md from the registry in eventlog/envvars.py.

    python tools/gen_env_docs.py           # rewrite docs/environment.md
    python tools/gen_env_docs.py --check   # exit 1 when the checked-in file differs (tests/test_envvars.py)
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from eventlog.envvars import NOT_VARIABLES, VARIABLES  # noqa: E402

from gendoc import write_or_check  # noqa: E402  (tools/, beside this script)

OUT = REPO / "docs" / "environment.md"


def render() -> str:
    out = ["# Environment variables", "",
           "Generated from `eventlog/envvars.py` by `python tools/gen_env_docs.py` — edit the registry, not this",
           "file.",
           "`eventlog path` prints the same variables with their current values. A flag wins over its variable, and",
           "a variable over its config-file twin (`eventlog/config.py`).",
           ""]
    for audience, title in (("operator", "For operators"), ("development", "For development and tests")):
        out += [f"## {title}", "", "| variable | what it does | default | read by |", "|---|---|---|---|"]
        out += [f"| `{v.name}` | {v.what} | {v.default} | {v.readers} |" for v in VARIABLES if v.audience == audience]
        out.append("")
    out += ["## Not environment variables", "",
            "Names of the same shape in the code that are never read from the environment:", ""]
    out += [f"- `{name}`: {why}" for name, why in NOT_VARIABLES.items()]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    return write_or_check(OUT, render(), argv, "python tools/gen_env_docs.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
