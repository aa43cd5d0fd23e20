"""Rebase never mis-applies: synthetic mutations of the REAL pinned dist, and the real older releases.

Each mutation ends in the right report and an untouched tree. Older releases come from the cache
(`make releases`; the test suite itself never touches the network).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from eventlog.cli.patch import patch  # noqa: E402
from eventlog import toolchain  # noqa: E402
from eventlog.patchset.paths import PATCH_DIR  # noqa: E402
from patchset_util import link_clone, openclaw_source, snapshot  # noqa: E402

pytestmark = pytest.mark.openclaw

ING_ANCHOR = "bot.api.config.use(accountThrottler.transformer);"


@pytest.fixture(scope="module")
def src() -> Path:
    return openclaw_source()


@pytest.fixture
def tree(tmp_path: Path, src: Path) -> Path:
    return link_clone(src, tmp_path / "openclaw")


def run(*args: str) -> tuple[int, dict, str]:
    r = CliRunner().invoke(patch, list(args), catch_exceptions=False)
    return r.exit_code, orjson.loads(r.stdout.splitlines()[0]) if r.stdout.strip() else {}, r.stderr


def rebase(tree: Path, *extra: str) -> tuple[int, dict]:
    snap = snapshot(tree)
    code, rep, _ = run("rebase", "--to", str(tree), "--dry-run", "--json", *extra)
    assert snapshot(tree) == snap, "rebase touched the release tree"
    return code, {c["change"]: c for c in rep.get("changes", [])} | {"_": rep}


def rewrite(path: Path, fn) -> None:
    text = fn(path.read_text())
    path.unlink()  # break the hard link: the shared install must stay pristine
    path.write_text(text)


def target(tree: Path, change: str) -> Path:
    code, rep, _ = run("status", "--openclaw", str(tree), "--json")
    return tree / next(c for c in rep["changes"] if c["change"] == change)["targets"][0]


def test_pristine_is_exact(tree: Path) -> None:
    code, r = rebase(tree)
    assert code == 0 and r["ingress-bot"]["result"] == "exact" and r["send-bot"]["result"] == "exact"


def test_anchor_duplicated_is_ambiguous_and_apply_refuses(tree: Path) -> None:
    rewrite(target(tree, "ingress-bot"), lambda t: t.replace(ING_ANCHOR, ING_ANCHOR + "\n\t" + ING_ANCHOR))
    code, r = rebase(tree)
    assert code == 2 and r["ingress-bot"]["result"] == "ambiguous" and r["send-bot"]["result"] == "exact"
    snap = snapshot(tree)
    code, rep, err = run("apply", "--openclaw", str(tree), "--json")
    assert code == 2 and rep["changes"][0] == {"change": "ingress-bot", "target": rep["changes"][0]["target"],
                                                "anchor": ING_ANCHOR, "occurrences": 2, "problem": "ambiguous-anchor"}
    assert snapshot(tree) == snap


def test_anchor_deleted_is_missing(tree: Path) -> None:
    rewrite(target(tree, "ingress-bot"), lambda t: t.replace("\t" + ING_ANCHOR + "\n", ""))
    code, r = rebase(tree)
    assert code == 2 and r["ingress-bot"]["result"] == "missing"
    assert all(c["score"] < 60 for c in r["ingress-bot"]["candidates"])
    snap = snapshot(tree)
    code, rep, _ = run("apply", "--openclaw", str(tree), "--json")
    assert code == 2 and rep["error"] == "missing-anchor" and snapshot(tree) == snap


def test_anchor_reworded_is_reanchored_and_checked(tree: Path, tmp_path: Path) -> None:
    new_anchor = ING_ANCHOR.replace(".transformer", ".apiTransformer")
    rewrite(target(tree, "ingress-bot"), lambda t: t.replace(ING_ANCHOR, new_anchor))
    out = tmp_path / "out"
    snap = snapshot(tree)
    code, rep, _ = run("rebase", "--to", str(tree), "--out", str(out), "--json")
    assert snapshot(tree) == snap
    ing = next(c for c in rep["changes"] if c["change"] == "ingress-bot")
    assert code == 0 and ing["result"] == "re-anchored" and ing["anchor"]["new"] == new_anchor and ing["score"] > 90
    m = orjson.loads((out / "manifest.json").read_bytes())
    assert m["changes"][0]["anchor"] == new_anchor and m["verified"] is False
    diff = (out / "diffs" / "ingress-bot.diff").read_text()
    assert f" \t{new_anchor}\n+\t__openclawEventlog.tapIngressBot(" in diff
    # the rebased manifest applies and audits clean on that tree
    code, _, err = run("apply", "--openclaw", str(tree), "--manifest", str(out / "manifest.json"), "--json")
    assert code == 0, err
    assert run("audit", "--openclaw", str(tree), "--manifest", str(out / "manifest.json"), "--json")[0] == 0


def test_target_renamed_is_found_by_content(tree: Path) -> None:
    old = target(tree, "send-bot")
    new = old.with_name("send-Renamed01.mjs")
    shutil.copyfile(old, new)
    old.unlink()
    code, r = rebase(tree)
    assert code == 0 and r["send-bot"]["result"] == "exact"
    assert r["send-bot"]["target"]["new"] == "dist/send-Renamed01.mjs"


def test_two_candidate_files_is_ambiguous(tree: Path) -> None:
    t = target(tree, "send-bot")
    shutil.copyfile(t, t.with_name("send-Copy0002.mjs"))
    code, r = rebase(tree)
    assert code == 2 and r["send-bot"]["result"] == "ambiguous" and len(r["send-bot"]["files"]) == 2
    snap = snapshot(tree)
    code, rep, _ = run("apply", "--openclaw", str(tree), "--json")
    assert code == 2 and rep["error"] == "ambiguous-target" and snapshot(tree) == snap


def test_marker_already_present_fails_closed(tree: Path) -> None:
    rewrite(target(tree, "ingress-bot"), lambda t: t.replace(ING_ANCHOR, ING_ANCHOR + " // openclaw-eventlog:ingress-bot"))
    code, r = rebase(tree)
    assert code == 2 and {r["ingress-bot"]["result"], r["send-bot"]["result"]} == {"ambiguous"}
    snap = snapshot(tree)
    code, rep, _ = run("apply", "--openclaw", str(tree), "--json")
    assert code == 2 and rep["error"] == "partial" and snapshot(tree) == snap


def test_half_applied_tree_fails_closed_and_revert_cleans(tree: Path, src: Path) -> None:
    assert run("apply", "--openclaw", str(tree), "--json")[0] == 0
    t = target(tree, "send-bot")
    backup = tree / "eventlog-tap" / "backup" / t.relative_to(tree)
    t.unlink()
    shutil.copyfile(backup, t)  # one file reverted by hand, the other still patched
    code, r = rebase(tree)
    assert code == 2 and all(r[c]["result"] == "ambiguous" for c in ("ingress-bot", "send-bot"))
    assert "partial" in r["ingress-bot"]["reason"]
    assert run("status", "--openclaw", str(tree), "--json")[0] == 2
    snap = snapshot(tree)
    assert run("apply", "--openclaw", str(tree), "--json")[0] == 2 and snapshot(tree) == snap
    assert run("revert", "--openclaw", str(tree), "--json")[0] == 0
    assert run("status", "--openclaw", str(tree), "--json")[0] == 1


def known_good(version: str) -> dict[str, str]:
    """change -> rebase result, from the shipped known-good release manifest (the matrix, not this test, names them)."""
    raw = orjson.loads((PATCH_DIR / "releases" / version / "manifest.json").read_bytes())
    return {c["id"]: c["rebase"]["result"] for c in raw["changes"]}


def cached_release(version: str) -> Path:
    return toolchain.cache_dir() / "releases" / version / "package"


@pytest.mark.parametrize("version", toolchain.OPENCLAW_RELEASES)
def test_real_releases(version: str, tmp_path: Path) -> None:
    expect = known_good(version)
    assert set(expect.values()) <= {"exact", "re-anchored"}
    pkg = cached_release(version)
    if not (pkg / "package.json").is_file():
        pytest.fail(f"release {version} not in the cache: run `make releases`", pytrace=False)
    code, r = rebase(pkg)
    assert code == 0, r["_"]
    assert {c: r[c]["result"] for c in expect} == expect
    if expect["send-bot"] == "re-anchored":
        assert r["send-bot"]["anchor"]["new"] == "bot.api.config.use(getOrCreateAccountThrottler(token));"


def test_drift_reports_files_functions_and_sites(tmp_path: Path, src: Path) -> None:
    # the newest release whose ingress anchor had to be re-anchored (the throttler call without `.transformer`)
    old = next(v for v in toolchain.OPENCLAW_RELEASES if known_good(v)["ingress-bot"] == "re-anchored")
    pkg = cached_release(old)
    if not (pkg / "package.json").is_file():
        pytest.fail(f"release {old} not in the cache: run `make releases`", pytrace=False)
    code, rep, _ = run("drift", "--from", str(pkg), "--to", str(src), "--json")
    assert code == 0
    ing = next(c for c in rep["changes"] if c["change"] == "ingress-bot")
    assert ing["file_renamed"] and ing["anchor_changed"]
    assert ing["from"]["function_header"].startswith("function createTelegramBotCore(")
    assert any(ING_ANCHOR in ln for ln in ing["to"]["site"])
    assert any("+\tbot.api.config.use(accountThrottler.transformer);" == ln for ln in ing["function_diff"])
    # that release's polling monitor installs one more transformer (getUpdates only); drift shows it
    assert any("monitor-polling" in s for s in rep["transformers"]["from"])
