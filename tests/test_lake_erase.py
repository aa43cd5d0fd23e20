"""eventlog/lake/erase.py on a raw DuckLake table, SQLite and PostgreSQL catalogs: after DELETE + scrub, no byte of
the canary is in any file under DATA, in the catalog (its file, or every catalog table as text and the database's
files), the other rows are all there and equality queries still find them; and each step is needed."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import duckdb
import pytest

from eventlog.lake import erase
from pg_support import Cluster

CANARY = "zzCANARY-5f2a91"  # sorts after every other text: the table's max until scrubbed
CANARY_CHAT = "c-canary-77"
WHEELS = {"ducklake": "duckdb_extension_ducklake", "sqlite_scanner": "duckdb_extension_sqlite_scanner",
          "postgres_scanner": "duckdb_extension_postgres_scanner"}


@pytest.fixture(scope="session")
def ext_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extensions installed once from their wheels into a session directory (never ~/.duckdb)."""
    import importlib

    d = tmp_path_factory.mktemp("duckdb-ext")
    con = duckdb.connect(config={"extension_directory": str(d), "autoinstall_known_extensions": False})
    for name, mod in WHEELS.items():
        pkg = Path(importlib.import_module(mod).__file__).parent  # type: ignore[arg-type]
        con.execute(f"INSTALL '{next(pkg.rglob(f'{name}.duckdb_extension'))}'")
    con.close()
    return d


def attach(ext_dir: Path, catalog: str, data: Path, inlining: int = 0) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"extension_directory": str(ext_dir), "autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    for name in ("ducklake", "sqlite_scanner" if catalog.startswith("sqlite:") else "postgres_scanner"):
        con.execute(f"LOAD {name}")
    con.execute(f"ATTACH 'ducklake:{catalog}' AS lake (DATA_PATH '{data}/', DATA_INLINING_ROW_LIMIT {inlining})")
    return con


def event(text: str) -> str:
    return '{"v":1,"event":"message:received","text":"' + text + '"}'


class Lake:
    """A raw `lines` table (partitioned by gateway and chat, like the push's) filled with other rows and canaries."""

    def __init__(self, ext_dir: Path, catalog: str, data: Path, mixed: bool = True, inline: bool = True) -> None:
        """mixed: canaries among other rows in the big pushes' files (their files must be rewritten); else only
        in the canary chat (its files dropped whole, none rewritten: what a `forget --chat` does). inline: the small
        pushes inlined into the catalog (an older client's attach), else in Parquet too (the push's attach)."""
        self.ext_dir, self.catalog, self.data = ext_dir, catalog, data
        con = attach(ext_dir, catalog, data, inlining=10 if inline else 0)
        con.execute("CREATE TABLE lake.lines (gateway VARCHAR, chat VARCHAR, id VARCHAR, line BIGINT, event VARCHAR)")
        con.execute("ALTER TABLE lake.lines SET PARTITIONED BY (gateway, chat)")
        for batch in range(4):  # several files per chat: big pushes to Parquet, each with canaries among other rows
            pre, post = event("|").split("|")
            con.execute(f"""INSERT INTO lake.lines SELECT 'g' || (n % 2), 'c' || (n % 3), 'id' || n, n,
                            '{pre}' || CASE WHEN {mixed} AND n % 97 = 5 THEN '{CANARY}' ELSE 'hello ' || lpad(n::VARCHAR, 5, '0')
                            END || '{post}' FROM range({batch * 300 + 1}, {batch * 300 + 301}) t(n)""")
            # and small pushes (≤ 10 rows: inlined into the catalog), one a whole chat of canaries
            con.execute(f"INSERT INTO lake.lines SELECT 'g0', '{CANARY_CHAT}', 'ic{batch}-' || j, j, "
                        f"'{pre}{CANARY} ' || j || '{post}' FROM range(3) t(j)")
            if not mixed:  # and a big push of the canary chat alone, to Parquet
                con.execute(f"INSERT INTO lake.lines SELECT 'g1', '{CANARY_CHAT}', 'pc{batch}-' || j, j, "
                            f"'{pre}{CANARY} ' || j || '{post}' FROM range(50) t(j)")
            con.execute(f"INSERT INTO lake.lines VALUES ('g1', 'c1', 'io{batch}', 0, '{event(f'small {batch}')}')")
        self.others: dict[str, str] = dict(con.execute(
            f"SELECT id, event FROM lake.lines WHERE event NOT LIKE '%{CANARY}%'").fetchall())
        assert len(self.others) == 4 * 300 - 13 * mixed + 4
        inlined = con.execute("SELECT count(*) FROM __ducklake_metadata_lake.ducklake_inlined_data_tables").fetchone()
        assert inlined and (inlined[0] > 0) == inline, "the small pushes were not inlined: the flush step would go untested"
        assert self.leaks(), "the canary is not stored anywhere to begin with"
        con.close()
        con = self.con()  # the DELETE as the push makes it: no inlining (whole files dropped, delete files written)
        con.execute(f"DELETE FROM lake.lines WHERE event LIKE '%{CANARY}%'")
        con.close()

    def con(self) -> duckdb.DuckDBPyConnection:
        return attach(self.ext_dir, self.catalog, self.data)

    def leaks(self, cluster: Cluster | None = None, db: str | None = None) -> list[str]:
        """Where the canary's bytes are: files under DATA, the catalog's file or its tables and files."""
        needle = CANARY.encode()
        found = [str(p) for p in self.data.rglob("*") if p.is_file() and needle in p.read_bytes()]
        found += [str(p) for p in self.data.rglob("*") if CANARY_CHAT in p.name]  # a partition directory's name
        if self.catalog.startswith("sqlite:"):
            main = Path(self.catalog.removeprefix("sqlite:"))
            found += [str(p) for p in main.parent.glob(main.name + "*") if needle in p.read_bytes()]
        elif cluster is not None and db is not None:
            found += pg_leaks(cluster, db)
        return found

    def check_rows(self) -> None:
        con = self.con()
        try:
            got = dict(con.execute("SELECT id, event FROM lake.lines").fetchall())
            assert got == self.others
            # equality lookups, which DuckLake prunes by the files' and the table's min/max (a wrong bound loses rows)
            lo, hi = min(self.others.values()), max(self.others.values())
            probes = [lo, hi, self.others["id2"], self.others["io3"], event("hello 00601")]
            con.execute("INSERT INTO lake.lines VALUES ('g0', 'c0', 'later', 0, ?)", [event("later")])
            for text in [*probes, event("later")]:
                assert con.execute("SELECT count(*) FROM lake.lines WHERE event = ?", [text]).fetchone() == (1,), text
            assert con.execute(f"SELECT count(*) FROM lake.lines WHERE event LIKE '%{CANARY}%'").fetchone() == (0,)
        finally:
            con.close()


def pg_leaks(cluster: Cluster, db: str) -> list[str]:
    """Catalog tables (every row cast to text) and the database's data files holding the canary."""
    found = []
    tables = cluster.psql("SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public'", db).split()
    for t in tables:
        if CANARY in cluster.psql(f"SELECT t::text FROM {t} t", db):
            found.append(f"table {t}")
    cluster.psql("CHECKPOINT", db)  # the pages on disk, not only in shared buffers
    found += [str(p) for p in cluster.data_files(db) if CANARY.encode() in p.read_bytes()]
    return found


Made = tuple[Lake, "Cluster | None", "str | None"]


def make(request: pytest.FixtureRequest, ext_dir: Path, tmp_path: Path, kind: str, mixed: bool = True,
         inline: bool = True) -> Made:
    data = tmp_path / "data"
    data.mkdir()
    if kind == "sqlite":
        return Lake(ext_dir, f"sqlite:{tmp_path / 'catalog.sqlite'}", data, mixed, inline), None, None
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    db: str = request.getfixturevalue("pg_db")
    return Lake(ext_dir, cluster.catalog(db), data, mixed, inline), cluster, db


@pytest.fixture(params=["sqlite", "postgres"])
def lake(request: pytest.FixtureRequest, ext_dir: Path, tmp_path: Path) -> Made:
    return make(request, ext_dir, tmp_path, request.param)


@pytest.fixture(params=["sqlite", "postgres"])
def chat_lake(request: pytest.FixtureRequest, ext_dir: Path, tmp_path: Path) -> Made:
    """The canary only in one chat (a `forget --chat`): its files go whole, nothing is rewritten."""
    return make(request, ext_dir, tmp_path, request.param, mixed=False)


def test_scrub_leaves_no_canary_and_every_other_row(lake: Made) -> None:
    lk, cluster, db = lake
    assert lk.leaks(cluster, db), "a DELETE alone keeps the text (lake-notes §2-5)"
    con = lk.con()
    counts = erase.scrub(con)
    # the connection still has the lake attached (SQLite: detached for VACUUM, attached again)
    assert con.execute("SELECT count(*) FROM lake.lines").fetchone() == (len(lk.others),)
    con.close()
    assert counts["flushed_rows"] > 0 and counts["rewritten_files"] > 0 and counts["expired_snapshots"] > 0
    assert counts["removed_files"] > 0 and counts["reset_stats"] == 4 and counts["vacuumed_tables"] > 0
    assert lk.leaks(cluster, db) == []
    lk.check_rows()


def test_a_whole_chat_erased_leaves_no_canary(chat_lake: Made) -> None:
    lk, cluster, db = chat_lake
    con = lk.con()
    counts = erase.scrub(con)
    con.close()
    assert counts["removed_files"] > 0 and counts["removed_dirs"] == 2  # the canary chat's, one per gateway
    assert lk.leaks(cluster, db) == []
    lk.check_rows()


@pytest.mark.slow
def test_scrub_twice_is_harmless(lake: Made) -> None:
    lk, cluster, db = lake
    con = lk.con()
    erase.scrub(con)
    again = erase.scrub(con)
    con.close()
    assert again["rewritten_files"] == 0 and again["removed_files"] == 0
    assert lk.leaks(cluster, db) == []
    lk.check_rows()


# Each step is needed: without it the canary survives somewhere (the places each one alone leaves it).
NEEDED = {
    "flush": "catalog",  # the inlined rows' text stays in the catalog (ended, not removed)
    "rewrite": "data",  # the data files with deleted rows keep them
    "expire": "data",  # the old snapshots keep the old files referenced
    "cleanup": "data",  # expired files are still on disk
    "stats": "catalog",  # the table-wide max is the canary
    "vacuum": "catalog",  # free pages (SQLite) / dead tuples (PostgreSQL) keep the deleted catalog rows
}


@pytest.mark.slow  # ≈ 5-10 s each: a lake built and scrubbed per step
@pytest.mark.parametrize("skipped", sorted(NEEDED))
def test_each_step_is_needed(request: pytest.FixtureRequest, ext_dir: Path, tmp_path: Path, skipped: str,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    # the table statistics leak when the canary's files go whole and nothing is rewritten (a rewrite recomputes them)
    lk, cluster, db = make(request, ext_dir, tmp_path, "sqlite", mixed=skipped != "stats", inline=skipped != "stats")
    monkeypatch.setattr(erase, "STEPS", tuple(s for s in erase.STEPS if s.__name__ != skipped))
    con = lk.con()
    erase.scrub(con)
    con.close()
    leaks = lk.leaks(cluster, db)
    where = [p for p in leaks if (p.startswith(str(lk.data)) if NEEDED[skipped] == "data"
                                  else not p.startswith(str(lk.data)))]
    assert where, f"without {skipped} the canary should survive in the {NEEDED[skipped]}: {leaks}"


@pytest.mark.slow
@pytest.mark.parametrize("skipped", ["stats", "vacuum"])
def test_each_step_is_needed_postgres(request: pytest.FixtureRequest, ext_dir: Path, tmp_path: Path, skipped: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog's own leaks on PostgreSQL: a table statistic, and the dead tuples a plain DELETE leaves."""
    lk, cluster, db = make(request, ext_dir, tmp_path, "postgres", mixed=skipped != "stats",
                           inline=skipped != "stats")
    monkeypatch.setattr(erase, "STEPS", tuple(s for s in erase.STEPS if s.__name__ != skipped))
    con = lk.con()
    erase.scrub(con)
    con.close()
    assert cluster is not None and db is not None
    leaks = pg_leaks(cluster, db)
    if skipped == "stats":
        assert "table ducklake_table_column_stats" in leaks, leaks
    else:
        assert leaks and all(not p.startswith("table ") for p in leaks), leaks  # bytes in files, no live row


def test_scrub_refuses_a_name_that_is_not_plain(ext_dir: Path, tmp_path: Path) -> None:
    con = attach(ext_dir, f"sqlite:{tmp_path / 'c.sqlite'}", tmp_path)
    with pytest.raises(ValueError):
        erase.scrub(con, lake="lake; DROP TABLE x")
    with pytest.raises(ValueError):
        erase.scrub(con, lake="other")  # nothing attached by that name
    con.close()


def test_sqlite_catalog_has_no_free_pages_after(request: pytest.FixtureRequest, ext_dir: Path,
                                                tmp_path: Path) -> None:
    lk, _, _ = make(request, ext_dir, tmp_path, "sqlite")
    con = lk.con()
    erase.scrub(con)
    con.close()
    path = lk.catalog.removeprefix("sqlite:")
    assert sqlite3.connect(path).execute("PRAGMA freelist_count").fetchone() == (0,)
    assert os.path.getsize(path) > 0
