"""Shared CLI plumbing: --root on every subcommand, one-line errors with exit 2, JSON Lines output."""
from __future__ import annotations

import functools
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

import click
import orjson

from ..errors import EventlogError
from ..store.layout import resolve_root


def root_option(f: Callable) -> Callable:
    """`--root DIR` accepted after the subcommand name; falls back to the group's --root, then the environment."""

    @click.option("--root", "root_opt", type=click.Path(file_okay=False), default=None,
                  help="Log root (default: $EVENTLOG_ROOT, $OPENCLAW_STATE_DIR/eventlog, ~/.openclaw/eventlog).")
    @functools.wraps(f)
    def wrapper(*args: Any, root_opt: str | None = None, **kwargs: Any) -> Any:
        return f(*args, root=command_root(root_opt), **kwargs)

    return wrapper


def command_root(root_opt: str | None) -> Path:
    """The root a command works on: its --root, else the group's, else the environment's (layout.resolve_root)."""
    group_root = (click.get_current_context().find_root().obj or {}).get("root")
    return resolve_root(root_opt or group_root)


class CliError(EventlogError):
    """An error only the command line can see (options that do not go together, a missing argument): one stderr
    line and exit `code` (2, or 1 where a command's contract says "nothing to do")."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = 2) -> None:
    click.echo(f"eventlog: {message}", err=True)
    sys.exit(code)


def handle_errors(f: Callable) -> Callable:
    """Typed library errors (EventlogError, CliError) and OS errors become one stderr line and exit 2. Anything else
    — a ValueError or TypeError included — is a bug and surfaces as one, with its traceback. Ctrl-C and a closed
    stdout pipe are the group's (main.OneLineErrors: exit 130, 141)."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except CliError as exc:
            fail(str(exc), exc.code)
        except EventlogError as exc:
            fail(str(exc))
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise  # stdout's reader went away (`| head`): main.OneLineErrors ends the process quietly
            fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))

    return wrapper


def since_until(f: Callable) -> Callable:
    """--since/--until WHEN and --tz ZONE for commands that work on whole day files (verify): the options and their
    parsing are timeopts.time_range's; the command receives the UTC days (inclusive dates) whose files can hold the
    period. Commands that filter events exactly use eventlog/cli/timeopts.time_range itself."""
    from ..recall import when
    from .timeopts import time_range  # here, not at the top: timeopts imports this module

    @functools.wraps(f)
    def days(*args: Any, since: Any, until: Any, tz: Any, **kwargs: Any) -> Any:
        first, last = when.utc_days(since, until)
        return f(*args, since=first, until=last, **kwargs)

    return time_range(days)


_warned: set[str] = set()


def user_config(root: Path) -> Any:
    """The config file (eventlog/config.py) as commands read it: unknown keys get one warning line on stderr per file
    and process (a misspelt `tz` or `retention_days` would otherwise be ignored without a word)."""
    from ..config import load_config

    cfg = load_config(root)
    if cfg.unknown and str(cfg.path) not in _warned:
        _warned.add(str(cfg.path))
        click.echo(f"eventlog: warning: {cfg.path}: unknown key(s) ignored: {', '.join(cfg.unknown)} "
                   "(known: retention_days, tz)", err=True)
    return cfg


STDOUT = "-"  # the value of any -o/--output/--out FILE option that means standard output


@contextmanager
def output_to(value: str | os.PathLike[str], root: Path | None = None, *, binary: bool = False,
              option: str = "-o") -> Iterator[BinaryIO]:
    """The one meaning of every -o/--output/--out FILE option: `-` is standard output, anything else a file written
    atomically and 0600 (refused inside the log `root`; a device or pipe such as /dev/stdout is written in place —
    recall.output.atomic_output). `binary` output (parquet) to standard output is refused when it is a terminal,
    as gzip does, and written as bytes to a pipe or a redirect."""
    from ..recall.output import atomic_output

    if str(value) == STDOUT:
        if binary and sys.stdout.isatty():
            raise CliError(f"binary output to a terminal: give {option} FILE, or pipe or redirect standard output")
        sys.stdout.flush()  # text click.echo'd before must come first
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    with atomic_output(value, root) as f:
        yield f


def output_name(value: str | os.PathLike[str]) -> str:
    """How a message names where the output went."""
    return "standard output" if str(value) == STDOUT else str(value)


def emit_json(obj: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(obj) + b"\n")


def ensure_root(root: Path) -> None:
    if not root.is_dir():
        raise EventlogError(f"no log at {root} (run `eventlog init`, or pass --root)")


def chat_id_param(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A `--chat` value is a chat id (schema.CHAT_ID_RE), never a path: `../../x` is a usage error, not a file."""
    from ..errors import BadEvent
    from ..store.schema import check_chat_id

    if value is None:
        return None
    try:
        return check_chat_id(value)
    except BadEvent as exc:
        raise click.BadParameter(str(exc)) from None


def account_param(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """`--account` values are OpenClaw account ids (schema.ACCOUNT_RE), never paths."""
    from ..errors import BadEvent
    from ..store.schema import check_account

    try:
        return tuple(check_account(v) for v in value)
    except BadEvent as exc:
        raise click.BadParameter(str(exc)) from None


account_option = click.option(
    "--account", "accounts", multiple=True, metavar="ACCOUNT", callback=account_param,
    help="Only this OpenClaw account (repeatable; `default`: events without an account). All accounts if not given.")


class Meter:
    """The CLI's one progress display (import, compact, index, search): one line on stderr redrawn in place, at most
    five times a second except for the last state. The library reports progress through callbacks and never prints;
    the commands turn those calls into text for this. stderr is looked up at each call, not bound once: a closed
    stream of an earlier run in the same process (pytest.main twice, mutmut) must not be written to."""

    def __init__(self) -> None:
        self.last = 0.0
        self.open = False  # a line is on screen and not ended

    def show(self, text: str, last: bool = False, keep: bool = True) -> None:
        """Redraw the line. The `last` state is always drawn, and with `keep` ended so that it stays on screen
        (without, close() clears it)."""
        now = time.monotonic()
        if now - self.last < 0.2 and not last:
            return
        self.last = now
        end = last and keep
        sys.stderr.write(f"\r{text}\x1b[K" + ("\n" if end else ""))
        sys.stderr.flush()
        self.open = not end

    def close(self) -> None:
        """Clear a line that was not ended."""
        if self.open:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self.open = False


def progress_meter() -> Meter | None:
    """A Meter when stderr is a terminal, else None: no progress in pipes, files and logs."""
    return Meter() if sys.stderr.isatty() else None


def bar(done: int, total: int, width: int = 30) -> str:
    filled = width * done // total if total else width
    return "[" + "#" * filled + "." * (width - filled) + "]"
