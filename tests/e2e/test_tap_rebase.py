"""Issue 6: `eventlog patch rebase --to <previous release> --verify` on that release's real gateway (installed by
`make releases`; the test itself never fetches)."""
from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from eventlog import toolchain
from eventlog.cli.main import cli

pytestmark = pytest.mark.e2e


def test_rebase_onto_the_previous_release_verifies_on_its_gateway() -> None:
    prev = toolchain.OPENCLAW_PREVIOUS
    installed = toolchain.cache_dir() / "rebase-installs" / prev / ".complete"
    packed = toolchain.cache_dir() / "releases" / prev / "package" / "package.json"
    if not (installed.is_file() and packed.is_file()):
        pytest.fail(f"openclaw {prev} not in the cache: run `make releases`", pytrace=False)
    r = CliRunner().invoke(cli, ["patch", "rebase", "--to", prev, "--verify", "--dry-run", "--json"],
                           catch_exceptions=False)
    rep = orjson.loads(r.stdout.splitlines()[0])
    assert r.exit_code == 0, rep
    assert [c["result"] for c in rep["changes"]] == ["exact", "exact"]
    assert rep["verified"] is True
    assert rep["verify"]["checks"] == {"update_logged": True, "reply_logged": True, "key_never_sent": True,
                                       "alert_written": True}
