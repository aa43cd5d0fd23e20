"""The `eventlog` command. Each command group lives in its own module and registers itself on `cli`."""
from __future__ import annotations

import importlib
import os
import sys
from typing import NoReturn

import click

from .. import __version__


INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
READER_GONE = 141  # 128 + SIGPIPE, as a shell reports `grep … | head` once head has what it wanted


def reader_gone() -> NoReturn:
    """stdout is a pipe whose reader closed it (`| head`): stop at once and say nothing, like grep killed by SIGPIPE
    (Python ignores SIGPIPE, so the write raised BrokenPipeError instead). stdout is pointed at /dev/null first:
    the interpreter's last flush of what is still buffered must not fail again ("Exception ignored … BrokenPipe")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # no real file descriptor behind stdout (CliRunner): nothing will flush to a pipe
    sys.exit(READER_GONE)


class OneLineErrors(click.Group):
    """Usage errors (unknown option, missing argument, bad value) as one line `eventlog: …` on stderr, exit 2 —
    not click's usage block. Ctrl-C anywhere in a command: exit 130, one stderr line, no traceback. stdout's reader
    gone (`eventlog … | head`), in a command, in --help or at the last flush: exit 141 and no output."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"eventlog.cli.{COMMANDS[cmd_name]}")
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        load_commands()
        return super().list_commands(ctx)

    def make_context(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        try:  # `eventlog --help | head` prints while the root context is made
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            reader_gone()

    def invoke(self, ctx: click.Context) -> object:
        # Caught here, before click's main() turns them into Abort (exit 1, after an empty stderr line) and exit 1.
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("eventlog: interrupted", err=True)
            raise click.exceptions.Exit(INTERRUPTED) from None
        except BrokenPipeError:
            reader_gone()

    def main(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            return self._main(*args, **kwargs)
        except BrokenPipeError:  # the help of a bare `eventlog | head`
            reader_gone()
        except SystemExit:
            try:  # what the command left buffered goes out now, while a closed pipe can still be handled
                sys.stdout.flush()
            except BrokenPipeError:
                reader_gone()
            raise

    def _main(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        standalone = kwargs.pop("standalone_mode", True)
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)
        except click.exceptions.Abort as exc:
            # a prompt (click.confirm) answered with Ctrl-C is an interruption too; EOF at a prompt is a "no"
            interrupted = isinstance(exc.__context__, KeyboardInterrupt)
            click.echo("eventlog: interrupted" if interrupted else "eventlog: aborted", err=True)
            sys.exit(INTERRUPTED if interrupted else 1)
        except click.ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError" and getattr(exc, "ctx", None):  # `eventlog` / `eventlog dlp`
                click.echo(exc.ctx.get_help())  # type: ignore[union-attr]
                sys.exit(0)
            msg = " ".join(exc.format_message().split())
            cmd = exc.ctx.command_path if isinstance(exc, click.UsageError) and exc.ctx else "eventlog"
            click.echo(f"eventlog: {msg} (see `{cmd} --help`)", err=True)
            sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
        if not standalone:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--root", type=click.Path(file_okay=False), default=None, help="Log root (also accepted after any subcommand).")
@click.version_option(__version__, prog_name="eventlog")
@click.pass_context
def cli(ctx: click.Context, root: str | None) -> None:
    """openclaw-eventlog: what your OpenClaw agent received and said on Telegram, and whether it leaked a secret.

    \b
    Examples:
      eventlog grep -i password --since yesterday
      eventlog tail -f
      eventlog dlp alerts --since 7d
    """
    ctx.obj = {"root": root}


# Each command's module, imported when the command is looked up: `eventlog grep` pays for click and the recall
# commands, not for the importers, patchset and writer that the other modules pull in (measured: those imports were
# ~40 % of a whole-log `grep --count-total`'s CPU). Listing the commands (`--help`, the docs) imports them all;
# tests/test_cli_lazy.py checks this table against what the modules register.
COMMANDS = {
    "init": "store", "path": "store", "append": "store", "verify": "store", "seal": "store", "stats": "store",
    "sql": "recall", "compact": "recall", "grep": "recall", "tail": "recall", "export": "recall",
    "dlp": "dlp",
    "patch": "patch",
    "forget": "forget", "migrate": "forget", "head": "forget",
    "import": "importer",
    "agent": "agent",
    "index": "search", "search": "search",
    "doctor": "doctor",
    "serve": "serve",
    "lake": "lake",
}
COMMAND_MODULES = [f"eventlog.cli.{m}" for m in dict.fromkeys(COMMANDS.values())]


def load_commands() -> None:
    """Import every command module (each adds its commands to `cli`)."""
    for name in COMMAND_MODULES:
        importlib.import_module(name)


def main() -> None:
    cli(prog_name="eventlog")


if __name__ == "__main__":  # `python -m eventlog.cli.main`: the commands registered on the imported module's `cli`
    from eventlog.cli.main import main as _main

    _main()
