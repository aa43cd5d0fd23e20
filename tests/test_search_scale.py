"""An index that costs what its messages cost (issue 30, item 2): a sparse day's projection holds as many axes as the
day has messages, not a fixed 64 × 512 block; month packs keep each member's own axes; every numpy step of a build
runs with one BLAS thread."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from eventlog.search import embed, index, pack, project, store
from eventlog.store.writer import EventLog

WORDS = "договор счёт invoice deploy release встреча budget отчёт review staging".split()


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if embed.available():
        pytest.skip(embed.available())  # the model is a main dependency: `make venv` installs it
    root = tmp_path_factory.mktemp("sparse") / "root"
    events = []
    for day in range(1, 9):  # eight past days of a personal chat, 3 + day messages each
        for i in range(3 + day):
            text = " ".join(WORDS[(day * 7 + i * 3 + j) % len(WORDS)] for j in range(2 + i % 4))
            events.append({"event": "message:received", "channel": "telegram", "chat_id": "42",
                           "ts": f"2026-03-{day:02d}T10:{i:02d}:00.000Z", "direction": "in", "text": text})
    EventLog(root, fsync="never").append_many(events)
    index.update(root)
    return root


def test_a_sparse_day_keeps_as_many_axes_as_messages(sparse: Path) -> None:
    records = store.load_records(sparse)
    assert len(records) == 8
    model = embed.load()
    q = model.encode(["договор invoice"], query=True)[0]
    for rec in records.values():
        proj = project.load(sparse, rec)
        assert proj is not None
        assert np.asarray(proj["basis"]).shape == (rec["docs"], 512)  # was (64, 512) for any day
        assert np.asarray(proj["codes"]).shape == (rec["docs"], rec["docs"])
        arr = store.open_data(store.units_dir(sparse) / rec["data"])
        exact = (np.asarray(arr["vec"], np.float32) * np.asarray(arr["scale"])[:, None]) @ q
        # n axes span the n centred rows: the estimate is the exact cosine up to the int8 codes' rounding
        assert np.abs(project.estimate(proj, q, None) - exact).max() < 0.02


def test_a_pack_keeps_each_members_axes(sparse: Path) -> None:
    packs = pack.load_records(sparse)
    assert list(packs) == ["2026-03"]
    arr = store.open_data(sparse / store.INDEX_DIR / pack.PACK_DIR / packs["2026-03"]["data"])
    records = store.load_records(sparse)
    docs = [records[d]["docs"] for d in sorted(records)]
    assert np.asarray(arr["bstart"]).tolist() == np.cumsum([0] + docs).tolist()
    assert np.asarray(arr["basis"]).shape == (sum(docs), 512)  # was (8, 64, 512)
    q = embed.load().encode(["release встреча"], query=True)[0]
    per_day = np.concatenate([project.estimate(project.load(sparse, records[d]), q, None) for d in sorted(records)])
    # the same scores from the pack as from its days (to float32 rounding: a padded dot product sums in another order)
    assert np.abs(project.estimate(arr, q, None) - per_day).max() < 1e-6


def test_every_numpy_step_of_a_build_has_one_blas_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if embed.available():
        pytest.skip(embed.available())
    seen: list[int] = []
    derive, merge = project.derive, pack.merge

    def blas_threads() -> int:
        return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")

    def counted_derive(*a, **kw):
        seen.append(blas_threads())
        return derive(*a, **kw)

    def counted_merge(*a, **kw):
        seen.append(blas_threads())
        return merge(*a, **kw)
    monkeypatch.setattr(project, "derive", counted_derive)
    monkeypatch.setattr(pack, "merge", counted_merge)
    EventLog(tmp_path, fsync="never").append_many(
        [{"event": "message:received", "channel": "telegram", "chat_id": "7", "ts": f"2026-04-0{d}T09:00:00.000Z",
          "text": f"deploy {d}"} for d in (1, 2, 3)])
    index.update(tmp_path)
    assert len(seen) == 4 and set(seen) == {1}  # three days derived, one month packed
