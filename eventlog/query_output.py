"""Writing a query result: table | csv | json (JSON Lines) | parquet, streamed (only `table` buffers, bounded)."""
from __future__ import annotations

from typing import Any


def _cell(value: Any) -> Any:
    """A JSON-ready value: timestamps as RFC 3339 UTC with ms (the log's own format), decimals as floats."""
    import datetime as _dt
    from decimal import Decimal

    if isinstance(value, _dt.datetime):
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


def _text_cell(value: Any) -> str:
    if value is None:
        return "NULL"
    value = _cell(value)
    if isinstance(value, (dict, list)):
        import orjson

        return orjson.dumps(value).decode()
    return str(value)


TABLE_MAX_ROWS = 10_000


def write_result(cur: Any, fmt: str, out: Any, max_table_rows: int = TABLE_MAX_ROWS) -> int:
    """Stream a result to the binary stream `out` as table | csv | json (JSON Lines) | parquet; returns the row count.
    JSON-typed columns are emitted as nested JSON in json output. Only `table` buffers (up to max_table_rows)."""
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
                w.writerow(["" if v is None else _text_cell(v) for v in r])
            rows += len(chunk)
        text.flush()
        text.detach()
        return rows
    if fmt == "json":
        while chunk := cur.fetchmany(4096):
            buf = bytearray()
            for r in chunk:
                obj = {}
                for i, (n, v) in enumerate(zip(names, r)):
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
                cells.append([_text_cell(v).replace("\n", "\\n") for v in r])
            else:
                more += 1
        rows += len(chunk)
    widths = [len(n) for n in names]
    for r in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, r)]
    widths = [min(w, 80) for w in widths]

    def fmt_row(vals: list[str]) -> str:
        return "│ " + " │ ".join((v if len(v) <= w else v[: w - 1] + "…").ljust(w) for v, w in zip(vals, widths)) + " │"

    lines = ["┌─" + "─┬─".join("─" * w for w in widths) + "─┐", fmt_row(names),
             "├─" + "─┼─".join("─" * w for w in widths) + "─┤"]
    lines += [fmt_row(r) for r in cells]
    lines.append("└─" + "─┴─".join("─" * w for w in widths) + "─┘")
    lines.append(f"{rows} row{'s' if rows != 1 else ''}" + (f" ({more} not shown; use --format csv|json)" if more else ""))
    out.write(("\n".join(lines) + "\n").encode())
    return rows
