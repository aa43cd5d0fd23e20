"""DuckDB's extensions for the lake, installed offline from the `lake` extra's wheels (docs/lake.md).

DuckDB cannot download extensions here, and must not write to `~/.duckdb`: each extension file is found inside its
installed PyPI wheel (`duckdb-extension-<name>`), installed once with `INSTALL '<file>'` into
`<data dir>/duckdb-extensions/<duckdb version>` and loaded from there. Autoinstall and autoload are off, so DuckDB
never reaches for the network or another directory.
"""
from __future__ import annotations

import importlib.metadata as metadata
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EventlogError

if TYPE_CHECKING:
    import duckdb

# extension name → its wheel's distribution
WHEELS = {"ducklake": "duckdb-extension-ducklake", "sqlite_scanner": "duckdb-extension-sqlite-scanner",
          "postgres_scanner": "duckdb-extension-postgres-scanner",
          "httpfs": "duckdb-extension-httpfs"}  # s3:// data paths only; not in the extra (docs/lake.md)
EXTRA = "install openclaw-eventlog[lake]"


class LakeError(EventlogError):
    """Anything the lake commands report as one line and exit 2: a bad catalog string, a server that does not
    answer, a missing extension, a lake that does not verify."""


def extension_dir() -> Path:
    """Where the extensions are installed: `<data dir>/duckdb-extensions/<duckdb version>`."""
    import duckdb

    from ..config import data_dir  # the one data-dir rule ($EVENTLOG_DATA_DIR, else XDG)

    return data_dir() / "duckdb-extensions" / duckdb.__version__


def extension_file(name: str) -> Path:
    """The `<name>.duckdb_extension` file inside its installed wheel."""
    dist_name = WHEELS[name]
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise LakeError(f"the DuckDB extension {name} is not installed ({dist_name}): {EXTRA}") from None
    for f in dist.files or ():
        if f.name == f"{name}.duckdb_extension":
            return Path(str(dist.locate_file(f)))
    raise LakeError(f"{dist_name} holds no {name}.duckdb_extension: reinstall it ({EXTRA})")


def connect(names: tuple[str, ...] = ("ducklake",)) -> "duckdb.DuckDBPyConnection":
    """An in-memory DuckDB connection with these extensions installed (once) and loaded."""
    try:
        import duckdb
    except ImportError:
        raise LakeError(f"duckdb is not installed: {EXTRA}") from None
    target = extension_dir()
    target.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(":memory:", config={"extension_directory": str(target),
                                             "autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    con.execute("SET enable_progress_bar = false")
    _install(con, target, [n for n in names if n not in _installed(con)])
    for name in names:
        try:
            con.execute(f"LOAD {name}")
        except duckdb.Error:
            # another process may be installing it right now (listed, not yet complete): wait for it, else reinstall
            _install(con, target, [name], force=True)
            try:
                con.execute(f"LOAD {name}")
            except duckdb.Error as exc:
                raise LakeError(f"cannot load the DuckDB extension {name}: {_first_line(exc)} ({EXTRA})") from None
    return con


def _install(con: "duckdb.DuckDBPyConnection", target: Path, names: list[str], force: bool = False) -> None:
    """INSTALL these from their wheels, one process at a time (a second one would LOAD a half-copied file)."""
    import duckdb

    from ..store.lock import FileLock

    if not names:
        return
    with FileLock(str(target / "install.lock"), timeout=120):
        for name in names if force else [n for n in names if n not in _installed(con)]:
            path = extension_file(name)
            try:
                con.execute(f"{'FORCE ' if force else ''}INSTALL '{_literal(str(path))}'")
            except duckdb.Error as exc:
                raise LakeError(f"cannot install the DuckDB extension {name} from {path}: {_first_line(exc)} "
                                f"(the wheel must match duckdb {duckdb.__version__}: {EXTRA})") from None


def _installed(con: "duckdb.DuckDBPyConnection") -> set[str]:
    return {n for n, i in con.execute("SELECT extension_name, installed FROM duckdb_extensions()").fetchall() if i}


def _literal(s: str) -> str:
    """The inside of a single-quoted SQL string literal (for the statements that take no parameters)."""
    return s.replace("'", "''")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
