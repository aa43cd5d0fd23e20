"""The `eventlog` command. Each command group lives in its own module and registers itself on `cli`."""
from __future__ import annotations

import importlib

import click

from .. import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--root", type=click.Path(file_okay=False), default=None, help="Log root (also accepted after any subcommand).")
@click.version_option(__version__, prog_name="eventlog")
@click.pass_context
def cli(ctx: click.Context, root: str | None) -> None:
    """openclaw-eventlog: what your OpenClaw agent received and said on Telegram, and whether it leaked a secret."""
    ctx.obj = {"root": root}


# One line per command module; each module adds its commands to `cli`.
COMMAND_MODULES = [
    "eventlog.cli.store",
    "eventlog.cli.recall",
    "eventlog.cli.dlp",
    "eventlog.cli.patch",
    "eventlog.cli.forget",
    "eventlog.cli.importer",
    "eventlog.cli.agent",
    "eventlog.cli.search",
    "eventlog.cli.doctor",
]

for _name in COMMAND_MODULES:
    importlib.import_module(_name)


def main() -> None:
    cli(prog_name="eventlog")
