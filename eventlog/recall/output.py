"""Writing a query result: table | csv | json (JSON Lines) | parquet, streamed (only `table` buffers, bounded)."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from ..errors import EventlogError
from ..store.fsutil import atomic_writer


@contextmanager
def atomic_output(path: str | os.PathLike[str], root: Path | None) -> Iterator[BinaryIO]:
    """Write `path` all at once: a private (0600) temporary file beside it, renamed over it only when the writer
    finished; on any error the target is untouched. A path inside the log root is refused (it could replace a log
    file or land where queries read). A path that exists and is not a regular file (/dev/stdout, /dev/null, a FIFO,
    bash's `>(gzip > x.gz)`) is written in place: renaming a temporary over it would replace the device or pipe
    with a plain file."""
    target = Path(path).expanduser().absolute()
    if root is not None:
        real_root = root.resolve()
        real_target = target.parent.resolve() / target.name
        if real_target == real_root or real_root in real_target.parents:
            raise EventlogError(f"-o {path}: inside the log root {root}; write it elsewhere")
    if target.is_dir():
        raise EventlogError(f"-o {path}: is a directory")
    if target.exists() and not target.is_file():
        with open(target, "wb") as f:
            yield f
        return
    with atomic_writer(target.parent.resolve() / target.name, "output") as f:
        yield f


def _cell(value: Any) -> Any:
    """A JSON-ready value: timestamps as RFC 3339 UTC with ms (the log's own format), decimals as floats."""
    import datetime as _dt
    from decimal import Decimal

    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:  # a TIMESTAMPTZ comes back in the session's zone: the log's format is UTC
            value = value.astimezone(_dt.timezone.utc)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, _dt.timedelta):
        return str(value)
    if isinstance(value, list):
        return [_cell(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _cell(v) for k, v in value.items()}
    return value


def local_ts(value: Any, tz: Any) -> str:
    """A UTC timestamp (naive from DuckDB, or the log's ts text) shown in zone `tz`: RFC 3339 with its offset, ms."""
    import datetime as _dt

    if isinstance(value, str):
        try:
            value = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    if not isinstance(value, _dt.datetime):
        return "?" if value is None else str(value)  # an event without a usable ts is shown, not dropped
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    try:
        t = value.astimezone(tz)
    except (OverflowError, ValueError):
        return _cell(value)
    off = t.strftime("%z")
    off = "Z" if off in ("+0000", "") and tz is _dt.timezone.utc else f"{off[:3]}:{off[3:]}"
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}."
            f"{t.microsecond // 1000:03d}{off}")


def _text_cell(value: Any, tz: Any = None) -> str:
    if value is None:
        return "NULL"
    import datetime as _dt

    if tz is not None and isinstance(value, _dt.datetime):
        return local_ts(value, tz)
    value = _cell(value)
    if isinstance(value, (dict, list)):
        import orjson

        return orjson.dumps(value).decode()
    return str(value)


TABLE_MAX_ROWS = 10_000


def write_result(cur: Any, fmt: str, out: Any, max_table_rows: int = TABLE_MAX_ROWS, tz: Any = None) -> int:
    """Stream a result to the binary stream `out` as table | csv | json (JSON Lines) | parquet; returns the row count.
    JSON-typed columns are emitted as nested JSON in json output. Only `table` buffers (up to max_table_rows).
    `tz`: timestamps in table and csv are shown in that zone (json and parquet stay UTC, as stored)."""
    import orjson

    names = [d[0] for d in cur.description] if cur.description else []
    json_cols = {i for i, d in enumerate(cur.description or []) if str(d[1]) == "JSON"}
    rows = 0
    if fmt == "parquet":
        import pyarrow.parquet as pq

        import warnings

        with warnings.catch_warnings():  # DuckDB notes an extra copy per batch: bounded by the batch size, accepted
            warnings.simplefilter("ignore", UserWarning)
            reader = cur.to_arrow_reader(65_536)
        writer = None
        for batch in reader:
            writer = writer or pq.ParquetWriter(out, batch.schema, compression="zstd")
            writer.write_batch(batch)
            rows += batch.num_rows
        if writer is None:
            writer = pq.ParquetWriter(out, reader.schema, compression="zstd")
        writer.close()
        return rows
    if fmt == "csv":
        import csv
        import io

        text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
        w = csv.writer(text)
        w.writerow(names)
        while chunk := cur.fetchmany(4096):
            for r in chunk:
                w.writerow(["" if v is None else _text_cell(v, tz) for v in r])
            rows += len(chunk)
        text.flush()
        text.detach()
        return rows
    if fmt == "json":
        while chunk := cur.fetchmany(4096):
            buf = bytearray()
            for r in chunk:
                obj = {}
                for i, (n, v) in enumerate(zip(names, r, strict=True)):
                    obj[n] = orjson.loads(v) if i in json_cols and isinstance(v, str) else _cell(v)
                buf += orjson.dumps(obj) + b"\n"
            out.write(bytes(buf))
            rows += len(chunk)
        return rows
    # table
    cells: list[list[str]] = []
    more = 0
    while chunk := cur.fetchmany(4096):
        for r in chunk:
            if len(cells) < max_table_rows:
                cells.append([_text_cell(v, tz).replace("\n", "\\n") for v in r])
            else:
                more += 1
        rows += len(chunk)
    widths = [len(n) for n in names]
    for r in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, r, strict=True)]
    widths = [min(w, 80) for w in widths]

    def fmt_row(vals: list[str]) -> str:
        cells = ((v if len(v) <= w else v[: w - 1] + "…").ljust(w) for v, w in zip(vals, widths, strict=True))
        return "│ " + " │ ".join(cells) + " │"

    lines = ["┌─" + "─┬─".join("─" * w for w in widths) + "─┐", fmt_row(names),
             "├─" + "─┼─".join("─" * w for w in widths) + "─┤"]
    lines += [fmt_row(r) for r in cells]
    lines.append("└─" + "─┴─".join("─" * w for w in widths) + "─┘")
    lines.append(f"{rows} row{'s' if rows != 1 else ''}" + (f" ({more} not shown; use --format csv|json)" if more else ""))
    out.write(("\n".join(lines) + "\n").encode())
    return rows
