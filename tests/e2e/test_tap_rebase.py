"""Issue 6: `eventlog patch rebase --to 2026.9.5 --verify` on that release's real gateway (installed by
`make releases`; the test itself never fetches)."""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.patchset.tree import CACHE

pytestmark = pytest.mark.e2e


def test_rebase_onto_2026_9_5_verifies_on_its_gateway() -> None:
    installed = CACHE / "rebase-installs" / "2026.9.5" / ".complete"
    packed = CACHE / "releases" / "2026.9.5" / "package" / "package.json"
    if not (installed.is_file() and packed.is_file()):
        pytest.fail("openclaw 2026.9.5 not in the cache: run `make releases`", pytrace=False)
    r = CliRunner().invoke(cli, ["patch", "rebase", "--to", "2026.9.5", "--verify", "--dry-run", "--json"],
                           catch_exceptions=False)
    rep = orjson.loads(r.stdout.splitlines()[0])
    assert r.exit_code == 0, rep
    assert [c["result"] for c in rep["changes"]] == ["exact", "exact"]
    assert rep["verified"] is True
    assert rep["verify"]["checks"] == {"update_logged": True, "reply_logged": True, "key_never_sent": True,
                                       "alert_written": True}
