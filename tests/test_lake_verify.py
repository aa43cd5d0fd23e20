"""`eventlog lake verify`: clean after a push; exit 2 naming what differs when the lake is edited, deleted from or
duplicated behind the gateways' back; `--head HASH` against what the push recorded and what the root extends."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lake_support import build_root, extensions_dir_fixture, lake_fixture, run_cli  # noqa: F401
from store_support import current_head

from eventlog.lake.catalog import attach, parse_catalog
from eventlog.lake.push import push


def _push(root: Path, lake: tuple[str, str], gateway: str | None = "gw"):
    return push(root, parse_catalog(lake[0]), lake[1] + "/", gateway)


def _verify(root: Path, lake: tuple[str, str], *extra: str):
    return run_cli("lake", "verify", "--catalog", lake[0], "--data", lake[1], "--root", str(root), *extra)


def _behind_the_back(lake: tuple[str, str], *statements: str) -> None:
    """Someone with write access to the catalog and DATA, not a gateway."""
    con = attach(parse_catalog(lake[0]), lake[1] + "/")
    try:
        for s in statements:
            con.execute(s)
    finally:
        con.close()


@pytest.fixture
def shipped(root: Path, lake: tuple[str, str]) -> tuple[Path, tuple[str, str], list[str]]:
    rels = build_root(root, chats=("42", "43"), days=2)
    _push(root, lake)
    return root, lake, rels


def test_a_pushed_root_verifies(shipped):
    root, lake, _ = shipped
    r = _verify(root, lake)
    assert r.exit_code == 0, r.output
    assert "4 day file(s), 12 line(s): the lake matches the root" in r.stdout
    r = _verify(root, lake, "--json")
    assert json.loads(r.stdout.splitlines()[-1]) == {"type": "summary", "gateway": "gw", "files": 4, "lines": 12,
                                                     "differences": 0, "ok": True}


@pytest.mark.parametrize("statements, says", [
    (["UPDATE lake.lines SET event = replace(event, 'hello', 'HELLO') WHERE chat = '42' AND line = 2 "
      "AND file LIKE '%/01.jsonl'"], "42/2026/11/01.jsonl:2: differs from the root's line (edited behind"),
    (["DELETE FROM lake.lines WHERE chat = '43' AND line = 3 AND file LIKE '%/02.jsonl'"],
     "43/2026/11/02.jsonl:3: missing from the lake"),
    (["INSERT INTO lake.lines SELECT * FROM lake.lines WHERE chat = '42' AND line = 1 AND file LIKE '%/02.jsonl'"],
     "42/2026/11/02.jsonl:1: in the lake 2 times (duplicated)"),
    (["UPDATE lake.lines SET hash = repeat('0', 64) WHERE chat = '42' AND line = 1 AND file LIKE '%/01.jsonl'"],
     "42/2026/11/01.jsonl:1: the hash column is not the chain hash"),
    (["DELETE FROM lake.files WHERE chat = '43' AND file LIKE '%/01.jsonl'"],
     "43/2026/11/01.jsonl: its lines are in the lake, its files row is not"),
    (["DELETE FROM lake.lines WHERE chat = '43'", "DELETE FROM lake.files WHERE chat = '43'"],
     "43/2026/11/01.jsonl: sealed in the root (3 lines), not in the lake"),
    (["INSERT INTO lake.lines SELECT gateway, channel, account, chat, replace(file, '/01.', '/09.'), line, id || 'x', "
      "prev, ts, hash, event FROM lake.lines WHERE chat = '42' AND file LIKE '%/01.jsonl'"],
     "42/2026/11/09.jsonl: in the lake (3 lines), not a sealed day of the root"),
])
def test_a_lake_changed_behind_the_gateways_back_is_exit_2_naming_it(shipped, statements, says):
    root, lake, _ = shipped
    _behind_the_back(lake, *statements)
    r = _verify(root, lake)
    assert r.exit_code == 2
    assert says in r.stderr, r.stderr
    assert "Traceback" not in r.output


def test_a_local_forget_not_pushed_yet_is_named_then_a_push_makes_it_clean(shipped):
    root, lake, _ = shipped
    assert run_cli("forget", "--chat", "43", "--reason", "asked", "--yes", "--root", str(root)).exit_code == 0
    r = _verify(root, lake)
    assert r.exit_code == 2 and "same chain hash (erased locally since the push? push again)" in r.stderr
    _push(root, lake, None)
    assert _verify(root, lake).exit_code == 0


def test_head_is_checked_against_the_push_and_the_root(shipped, tmp_path):
    root, lake, _ = shipped
    head = current_head(root)
    assert head
    assert _verify(root, lake, "--head", head).exit_code == 0
    # the lake's record of the head rewritten: the operator's copy no longer matches
    _behind_the_back(lake, "UPDATE lake.heads SET head = repeat('a', 64)")
    r = _verify(root, lake, "--head", head)
    assert r.exit_code == 2 and f"no push of gateway 'gw' recorded head {head[:12]}" in r.stderr
    # a head of another log: neither recorded nor extended by this root
    other = tmp_path / "other"
    build_root(other, chats=("1",), days=1)
    r = _verify(root, lake, "--head", current_head(other))
    assert r.exit_code == 2 and "is not in the checkpoint file" in r.stderr
    r = _verify(root, lake, "--head", "xyz")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "not a head hash" in r.stderr


def test_verify_needs_the_root_s_gateway(root, lake):
    build_root(root, days=1)
    r = _verify(root, lake)
    assert r.exit_code == 2 and "has not pushed to a lake yet" in r.stderr and r.stderr.count("\n") == 1
