"""`eventlog lake push`: ship a root's sealed day files into the lake, idempotent and resumable (docs/lake.md).

One transaction per batch of whole files: a file's lines and its `files` row commit together, so a killed push
leaves whole files, and the next push ships the rest. A second push reads no day file: a file whose seal and whose
(size, mtime) are what the lake recorded is skipped on a stat; otherwise its sealed bytes are read and compared by
digest — equal bytes only refresh the recorded stat, other bytes (an erasure rewrote the file) replace its rows.
Files gone from the root are deleted from the lake; after any deletion `erase.scrub` removes what still held the old
rows (data files, snapshots, statistics).
"""
from __future__ import annotations

import socket
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import orjson

from ..store.commitment import chain_hash
from ..store.head import CHECKPOINTS, read_checkpoints
from ..store.layout import seal_streams
from ..store.reader import Problem
from . import schema
from .catalog import Catalog, LakeLock, attach, gateway_lock, retrying, rollback
from .extensions import LakeError
from .source import (Gateway, SealedFile, damage_of, digest, resolve_gateway, sealed_bytes, sealed_files,
                     stat_key, store_gateway)

if TYPE_CHECKING:
    import duckdb

BATCH_FILES = 200  # day files per transaction: few snapshots for a first push, little redone after a kill
BATCH_LINES = 100_000  # … or fewer, so one transaction's rows stay a few tens of MB in memory
# Called with (what, n) before each COMMIT ("gateway"; "batch", 1…; "delete"; "head") and before the scrub ("scrub"): where a
# test kills a push between transactions (as store/erased.py's BEFORE_PUBLISH drives a forget into a build).
BEFORE_COMMIT: list[Callable[[str, int], None]] = []


@dataclass
class PushReport:
    gateway: str
    head: str | None = None
    files_sealed: int = 0  # sealed day files in the root
    files_new: int = 0
    files_replaced: int = 0  # shipped before, bytes changed since (an erasure)
    files_deleted: int = 0  # shipped before, gone from the root
    files_unchanged: int = 0  # skipped on the seal and a stat
    files_restat: int = 0  # read, same bytes as shipped (touched, copied back): only the recorded stat changed
    files_read: int = 0  # day files whose bytes this push read (the work counter tests assert on)
    lines_added: int = 0
    lines_deleted: int = 0
    transactions: int = 0
    attempts: int = 0
    scrub: dict[str, int] | None = None

    def as_json(self) -> dict[str, Any]:
        return {"type": "push", **asdict(self)}


def push(root: Path, catalog: Catalog, data: str, gateway: str | None = None, batch_files: int = BATCH_FILES,
         batch_lines: int = BATCH_LINES) -> PushReport:
    """Ship every sealed day file of `root` not yet in the lake as it is now; refuse a root that does not verify."""
    if not root.is_dir():
        raise LakeError(f"no log at {root} (run `eventlog init`, or pass --root)")
    name = resolve_gateway(root, gateway).name
    refuse([p for rel in _streams(root) for p in damage_of(root, rel, None)])
    local = sealed_files(root)
    hashes = read_checkpoints(root)[1]
    report = PushReport(name, hashes[-1] if hashes else None, len(local))
    with gateway_lock(catalog, name) as lock:
        gw = resolve_gateway(root, name)  # again under the lock: a concurrent first push may have stored it
        return retrying(lambda: _attempt(root, catalog, data, gw, local, report, batch_files, batch_lines, lock))


def _streams(root: Path) -> list[str]:
    return seal_streams(root) + ([CHECKPOINTS] if (root / CHECKPOINTS).is_file() else [])


def refuse(problems: list[Problem]) -> None:
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise LakeError(f"the root does not verify, nothing shipped: {problems[0]}{more} (see `eventlog verify`)")


def _attempt(root: Path, catalog: Catalog, data: str, gw: Gateway, local: dict[str, SealedFile],
             report: PushReport, batch_files: int, batch_lines: int, lock: LakeLock) -> PushReport:
    """One whole try (the retry redoes it from the lake's committed state: everything before is idempotent)."""
    report.attempts += 1
    con = attach(catalog, data)
    try:
        schema.ensure(con)
        shipped = {r[0]: r for r in con.execute(
            "SELECT file, lines, bytes, last, digest, size, mtime_ns, chat FROM lake.files WHERE gateway = $g",
            {"g": gw.name}).fetchall()}
        todo: list[tuple[SealedFile, tuple[int, int]]] = []
        unchanged = 0
        for rel, sf in sorted(local.items()):
            key = stat_key(root, rel)
            if key is None:
                refuse([Problem(rel, 0, f"sealed file is missing ({sf.lines} lines sealed)")])
            s = shipped.get(rel)
            if s is not None and s[1:4] == (sf.lines, sf.bytes, sf.last) and s[5:7] == key:
                unchanged += 1
            else:
                todo.append((sf, key))  # type: ignore[arg-type]  # refuse() raised for None
        refuse([p for sf, _ in todo for p in damage_of(root, sf.rel, sf)])  # before anything ships
        _register(con, root, gw, report, lock)
        report.files_unchanged = unchanged
        batch: list[tuple[SealedFile, tuple[int, int]]] = []
        n_lines = 0
        for sf, key in todo:
            batch.append((sf, key))
            n_lines += sf.lines
            if len(batch) >= batch_files or n_lines >= batch_lines:
                _ship(con, root, gw, batch, shipped, report, lock)
                batch, n_lines = [], 0
        if batch:
            _ship(con, root, gw, batch, shipped, report, lock)
        gone = sorted(rel for rel in shipped if rel not in local and not (root / rel).exists())
        if gone:
            n = [0]

            def delete() -> None:
                n[0] = _delete(con, gw, gone, {shipped[r][7] for r in gone})

            report.transactions += 1
            _transaction(con, lock, "delete", 1, delete)
            report.files_deleted, report.lines_deleted = len(gone), report.lines_deleted + n[0]
        from . import erase

        if report.lines_deleted or erase.pending(con, "lake"):  # pending: a push killed before its scrub
            for hook in BEFORE_COMMIT:
                hook("scrub", 1)
            report.scrub = erase.scrub(con, "lake", ("lines",), exclusive=lock.exclusive)
        last = con.execute("SELECT head FROM lake.heads WHERE gateway = $g ORDER BY pushed_at DESC, head LIMIT 1",
                           {"g": gw.name}).fetchone()
        if report.head is not None and (last is None or last[0] != report.head):
            _transaction(con, lock, "head", 1, lambda: _record_head(con, gw, report))
        return report
    except BaseException:
        rollback(con)
        raise
    finally:
        con.close()


def _transaction(con: "duckdb.DuckDBPyConnection", lock: LakeLock, what: str, n: int, body: Callable[[], None]
                 ) -> None:
    """BEGIN … COMMIT under the lake-wide lock's shared side (a scrub's statistics reset takes the exclusive side)."""
    with lock.shared():
        con.execute("BEGIN")
        body()
        for hook in BEFORE_COMMIT:
            hook(what, n)
        con.execute("COMMIT")


def _register(con: "duckdb.DuckDBPyConnection", root: Path, gw: Gateway, report: PushReport, lock: LakeLock
              ) -> None:
    """The gateway's row: the first push of a name claims it for this root; another root under it is refused."""
    row = con.execute("SELECT root_id FROM lake.gateways WHERE gateway = $g", {"g": gw.name}).fetchone()
    if row is not None:
        if row[0] != gw.root_id:
            raise LakeError(f"gateway {gw.name!r} is another root's in this lake: give this root its own "
                            "--gateway NAME")
        return
    store_gateway(root, gw)  # the root keeps its name and id from its first push on
    def insert() -> None:
        con.execute("INSERT INTO lake.gateways VALUES ($g, $id, $host, $ts)",
                    {"g": gw.name, "id": gw.root_id, "host": socket.gethostname(), "ts": _now()})

    _transaction(con, lock, "gateway", 1, insert)
    report.transactions += 1


def _ship(con: "duckdb.DuckDBPyConnection", root: Path, gw: Gateway, batch: list[tuple[SealedFile, tuple[int, int]]],
          shipped: dict[str, tuple[Any, ...]], report: PushReport, lock: LakeLock) -> None:
    """One transaction: the batch's new files, its changed files' rows replaced, its re-stat'ed files' rows."""
    import pyarrow as pa

    lines: dict[str, list[Any]] = {c: [] for c in schema.LINE_COLUMNS}
    files: dict[str, list[Any]] = {c: [] for c in schema.FILE_COLUMNS}
    changed: list[str] = []  # shipped, other bytes now: lines and files rows replaced
    restat: list[str] = []  # shipped, same bytes: only the files row (its recorded stat) replaced
    now = _now()
    for sf, key in batch:
        data = sealed_bytes(root, sf)
        report.files_read += 1
        d = digest(data)
        s = shipped.get(sf.rel)
        if s is not None and s[4] == d:
            restat.append(sf.rel)
        else:
            if s is not None:
                changed.append(sf.rel)
            for n, line in enumerate(data.split(b"\n")[:-1], 1):
                obj = orjson.loads(line)
                for c, v in zip(schema.LINE_COLUMNS, (
                        gw.name, sf.channel, sf.account, sf.chat, sf.rel, n, obj.get("id"), obj.get("prev"),
                        obj.get("ts"), chain_hash(line, obj), line.decode("utf-8")), strict=False):
                    lines[c].append(v)
        for c, v in zip(schema.FILE_COLUMNS, (gw.name, sf.rel, sf.channel, sf.account, sf.chat, sf.lines, sf.bytes,
                                              sf.last, d, key[0], key[1], now), strict=False):
            files[c].append(v)
    deleted = [0]

    def body() -> None:
        if changed:
            deleted[0] = _delete(con, gw, changed, {shipped[r][7] for r in changed})
        if restat:
            _delete(con, gw, restat, set(), lines_too=False)
        con.register("el_lines", pa.table(lines, schema=schema.LINES_ARROW))
        con.register("el_files", pa.table(files, schema=schema.FILES_ARROW))
        try:
            con.execute("INSERT INTO lake.lines SELECT * FROM el_lines")
            con.execute("INSERT INTO lake.files SELECT * FROM el_files")
        finally:
            con.unregister("el_lines")
            con.unregister("el_files")

    report.transactions += 1
    _transaction(con, lock, "batch", report.transactions, body)
    report.files_new += len(batch) - len(changed) - len(restat)
    report.files_replaced += len(changed)
    report.files_restat += len(restat)
    report.lines_added += len(lines["line"])
    report.lines_deleted += deleted[0]


def _delete(con: "duckdb.DuckDBPyConnection", gw: Gateway, rels: list[str], chats: set[str],
            lines_too: bool = True) -> int:
    """Delete these files' `files` rows and (`lines_too`) their lines; returns the lines deleted. The chat list lets
    DuckLake skip every other partition's data files."""
    deleted = 0
    if lines_too:
        got = con.execute("DELETE FROM lake.lines WHERE gateway = $g AND list_contains($c, chat) "
                          "AND list_contains($f, file)", {"g": gw.name, "f": rels, "c": sorted(chats)}).fetchone()
        deleted = int(got[0]) if got else 0
    con.execute("DELETE FROM lake.files WHERE gateway = $g AND list_contains($f, file)", {"g": gw.name, "f": rels})
    return deleted


def _record_head(con: "duckdb.DuckDBPyConnection", gw: Gateway, report: PushReport) -> None:
    files, lines = con.execute("SELECT count(*), coalesce(sum(lines), 0) FROM lake.files WHERE gateway = $g",
                               {"g": gw.name}).fetchone() or (0, 0)
    con.execute("INSERT INTO lake.heads VALUES ($g, $h, $ts, $files, $lines)",
                {"g": gw.name, "h": report.head, "ts": _now(), "files": files, "lines": lines})


def _now() -> str:
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
