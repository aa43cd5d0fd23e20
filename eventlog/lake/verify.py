"""`eventlog lake verify`: the lake against the root that shipped it, line by line (docs/lake.md, "Verifying").

The root is the reference, not anything the lake says about itself: for every sealed day file of the root, the lake
must hold each of its sealed lines exactly once, byte for byte, with the id, prev and hash columns the line's own,
and the chain recomputed from the shipped `event` text must run from the file's genesis to the seal's last hash.
Rows of the gateway the root does not have (a file deleted locally, rows added behind the gateways' back) and
duplicated ids are differences too. With `--head HASH` (a head kept elsewhere, from `eventlog head`): a push of this
gateway must have recorded HASH, and the root must still extend it (store/head.py) — so neither a rewritten lake
nor a rewritten root with its heads table can pass without the operator's copy of the hash.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import orjson

from ..store import schema as store_schema
from ..store.commitment import COMMIT_RE, chain_hash
from ..store.head import verify_head
from . import schema
from .catalog import Catalog, attach
from .extensions import LakeError
from .source import GATEWAY_FILE, SealedFile, check_gateway_name, digest, sealed_bytes, sealed_files, stored_gateway

FETCH = 20_000  # rows per fetch of the gateway's lines (ordered by file, line)


@dataclass(frozen=True)
class Difference:
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass
class LakeVerifyReport:
    gateway: str
    files: int = 0
    lines: int = 0
    problems: list[Difference] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_lake(root: Path, catalog: Catalog, data: str, gateway: str | None = None, head: str | None = None
                ) -> LakeVerifyReport:
    if head is not None:
        head = head.strip().lower()
        if not COMMIT_RE.fullmatch(head):
            raise LakeError(f"not a head hash (64 hex characters): {head[:80]!r}")
    have = stored_gateway(root)
    if have is None and gateway is None:
        raise LakeError(f"this root has not pushed to a lake yet (no {GATEWAY_FILE}): give --gateway NAME")
    if have is not None and gateway is not None and gateway != have.name:
        raise LakeError(f"this root pushes as gateway {have.name!r} ({GATEWAY_FILE}); --gateway {gateway!r} differs")
    name = have.name if have is not None else check_gateway_name(gateway or "")
    report = LakeVerifyReport(name)
    local = sealed_files(root)
    con = attach(catalog, data, read_only=True)
    try:
        schema.check(con)
        diff = report.problems.append
        row = con.execute("SELECT root_id FROM lake.gateways WHERE gateway = $g", {"g": name}).fetchall()
        if not row:
            diff(Difference("gateways", f"gateway {name!r} has no row in this lake (never pushed here?)"))
        elif len(row) > 1 or (have is not None and row[0][0] != have.root_id):
            diff(Difference("gateways", f"gateway {name!r}'s row names another root ({len(row)} row(s))"))
        shipped = {r[0]: r[1:] for r in con.execute(
            "SELECT file, lines, bytes, last, digest FROM lake.files WHERE gateway = $g", {"g": name}).fetchall()}
        counted: dict[str, int] = {}
        for f, n in con.execute("SELECT file, count(*) FROM lake.files WHERE gateway = $g GROUP BY file "
                                "HAVING count(*) > 1", {"g": name}).fetchall():
            counted[f] = int(n)
            diff(Difference(f, f"{n} rows in the lake's files table (one expected)"))
        for eid, n, f, line in con.execute(
                "SELECT id, count(*), min(file), min(line) FROM lake.lines WHERE gateway = $g AND id IS NOT NULL "
                "GROUP BY id HAVING count(*) > 1 ORDER BY 3, 4", {"g": name}).fetchall():
            diff(Difference(f"{f}:{line}", f"id {eid} is in the lake {n} times"))
        rows = _rows_by_file(con, name)
        pending = next(rows, None)
        for rel in sorted(set(local) | set(shipped) | _files_with_rows(con, name)):
            mine: list[tuple[Any, ...]] = []
            while pending is not None and pending[0] < rel:
                diff(Difference(pending[0], "lines in the lake without their file (should not happen)"))
                pending = next(rows, None)
            if pending is not None and pending[0] == rel:
                mine = pending[1]
                pending = next(rows, None)
            _check_file(root, rel, local.get(rel), shipped.get(rel), mine, report)
        if head is not None:
            _check_head(con, root, name, head, report)
    finally:
        con.close()
    return report


def _files_with_rows(con: Any, gateway: str) -> set[str]:
    return {r[0] for r in con.execute("SELECT DISTINCT file FROM lake.lines WHERE gateway = $g",
                                      {"g": gateway}).fetchall()}


def _rows_by_file(con: Any, gateway: str) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """(file, [(line, id, prev, hash, event), …]) for the gateway, files in order, each file's rows by line."""
    cur = con.cursor()
    cur.execute("SELECT file, line, id, prev, hash, event FROM lake.lines WHERE gateway = $g ORDER BY file, line",
                {"g": gateway})
    current: str | None = None
    acc: list[tuple[Any, ...]] = []
    while chunk := cur.fetchmany(FETCH):
        for f, *rest in chunk:
            if f != current:
                if current is not None:
                    yield current, acc
                current, acc = f, []
            acc.append(tuple(rest))
    if current is not None:
        yield current, acc


def _check_file(root: Path, rel: str, sf: SealedFile | None, shipped: tuple[Any, ...] | None,
                rows: list[tuple[Any, ...]], report: LakeVerifyReport) -> None:
    diff = report.problems.append
    if sf is None:
        diff(Difference(rel, f"in the lake ({len(rows)} lines), not a sealed day of the root (gone locally: "
                             "`eventlog lake push` deletes it)"))
        return
    report.files += 1
    report.lines += sf.lines
    if shipped is None and not rows:
        diff(Difference(rel, f"sealed in the root ({sf.lines} lines), not in the lake (not pushed yet?)"))
        return
    try:
        data = sealed_bytes(root, sf)
    except LakeError:
        diff(Difference(rel, "the root's file does not match its seal (run `eventlog verify`)"))
        return
    lines = data.split(b"\n")[:-1]
    if shipped is None:
        diff(Difference(rel, "its lines are in the lake, its files row is not (edited behind the gateways' back)"))
    elif tuple(shipped[:3]) != (sf.lines, sf.bytes, sf.last):
        diff(Difference(rel, f"the lake recorded {shipped[0]} lines / {shipped[1]} bytes, the seal says {sf.lines} / "
                             f"{sf.bytes} (changed since the push? push again)"))
    elif shipped[3] != digest(data):
        diff(Difference(rel, "the lake's digest of the file differs from the root's bytes"))
    seen: dict[int, int] = {}
    for r in rows:
        seen[r[0]] = seen.get(r[0], 0) + 1
    for n, k in sorted(seen.items()):
        if k > 1:
            diff(Difference(f"{rel}:{n}", f"in the lake {k} times (duplicated)"))
        if not 1 <= n <= sf.lines:
            diff(Difference(f"{rel}:{n}", "in the lake, not in the root's sealed part (added behind the gateways' "
                                          "back, or the file shrank)"))
    missing = [n for n in range(1, sf.lines + 1) if n not in seen]
    for n in missing[:5]:
        diff(Difference(f"{rel}:{n}", "missing from the lake"))
    if len(missing) > 5:
        diff(Difference(rel, f"… and {len(missing) - 5} more line(s) missing from the lake"))
    expected = store_schema.genesis(rel)
    done: set[int] = set()
    for n, eid, prev, h, event in rows:
        if n in done or not 1 <= n <= sf.lines:
            continue
        done.add(n)
        where = f"{rel}:{n}"
        raw = event.encode("utf-8") if isinstance(event, str) else b""
        mine = lines[n - 1]
        got = chain_hash(raw)
        if raw != mine:
            same = got == chain_hash(mine)
            diff(Difference(where, "differs from the root's line, same chain hash (erased locally since the push? "
                                   "push again)" if same else "differs from the root's line (edited behind the "
                                                              "gateways' back)"))
        if h != got:
            diff(Difference(where, "the hash column is not the chain hash of the shipped line"))
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict) or obj.get("id") != eid or obj.get("prev") != prev:
            diff(Difference(where, "the id or prev column is not the shipped line's"))
        elif (n == 1 or n - 1 in done) and obj.get("prev") != expected:
            diff(Difference(where, "the lake's chain breaks here (prev does not name " +
                            ("the file's genesis)" if n == 1 else f"line {n - 1})")))
        expected = got
    if sf.lines in done and not missing and expected != sf.last:
        diff(Difference(rel, "the lake's chain does not end at the seal's last hash"))


def _check_head(con: Any, root: Path, gateway: str, head: str, report: LakeVerifyReport) -> None:
    rec = con.execute("SELECT count(*) FROM lake.heads WHERE gateway = $g AND head = $h",
                      {"g": gateway, "h": head}).fetchone()
    if not rec or not rec[0]:
        report.problems.append(Difference("heads", f"no push of gateway {gateway!r} recorded head {head[:12]}… (the "
                                                   "lake's heads rewritten, or this head was never pushed)"))
    for p in verify_head(root, head):
        report.problems.append(Difference(f"root {p.relpath}:{p.line}", p.reason))
