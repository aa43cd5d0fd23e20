"""apply / status / audit / revert / diffs on a private copy of the REAL installed (pinned) openclaw dist."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from eventlog import toolchain  # noqa: E402
from eventlog.cli.patch import patch  # noqa: E402
from eventlog.patchset.paths import PATCH_DIR  # noqa: E402
from eventlog.patchset import audit, load_manifest  # noqa: E402
from eventlog.patchset.diffs import render_diffs  # noqa: E402
from patchset_util import link_clone, openclaw_source, same_bytes, snapshot  # noqa: E402
from eventlog.smoke.harness import default_node  # noqa: E402

pytestmark = pytest.mark.openclaw

INGRESS = "ingress-bot"
SEND = "send-bot"


@pytest.fixture(scope="module")
def src() -> Path:
    return openclaw_source()


@pytest.fixture
def tree(tmp_path: Path, src: Path) -> Path:
    return link_clone(src, tmp_path / "node_modules" / "openclaw")


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(patch, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def targets(tree: Path) -> dict[str, str]:
    st = orjson.loads(run("status", "--openclaw", str(tree), "--json")[1])
    return {c["change"]: c["targets"][0] for c in st["changes"]}


def test_apply_status_audit_revert_roundtrip(tree: Path, src: Path) -> None:
    assert run("status", "--openclaw", str(tree))[0] == 1
    code, out, err = run("apply", "--openclaw", str(tree), "--json")
    assert code == 0, err
    rep = orjson.loads(out)
    assert rep["result"] == "applied" and rep["openclaw_version"] == toolchain.OPENCLAW_VERSION
    t = targets(tree)
    assert set(t) == {INGRESS, SEND}
    assert "telegram-ingress-drain-factory-" in t[INGRESS] and "/send-" in t[SEND]
    code, out, _ = run("status", "--openclaw", str(tree), "--json")
    assert code == 0 and orjson.loads(out)["state"] == "applied"
    code, out, _ = run("audit", "--openclaw", str(tree), "--json")
    assert code == 0 and orjson.loads(out)["ok"] is True, out
    # the runtime lives outside dist/ (postinstall prunes unknown dist files) with the rule file beside it
    rt = tree / "eventlog-tap"
    assert {"tap.mjs", "rules.json", "install.json"} <= {p.name for p in rt.iterdir()}
    assert not list((tree / "dist").glob("*eventlog*"))
    # the real Node 26 parses both patched chunks
    for rel in t.values():
        r = subprocess.run([str(default_node()), "--check", str(tree / rel)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    # our lines are exactly: one import at the top, one call right after the anchor line
    m = load_manifest()
    for c in m.changes:
        lines = (tree / t[c.id]).read_text().split("\n")
        ours = [i for i, ln in enumerate(lines) if f"// openclaw-eventlog:{c.id}" in ln]
        assert len(ours) == 2 and ours[0] == 0
        assert c.anchor in lines[ours[1] - 1] and c.insert in lines[ours[1]]
    # revert restores every byte and removes everything we added
    code, out, err = run("revert", "--openclaw", str(tree), "--json")
    assert code == 0, err
    assert orjson.loads(out)["result"] == "reverted"
    assert same_bytes(src, tree) == []
    assert run("status", "--openclaw", str(tree))[0] == 1
    assert run("audit", "--openclaw", str(tree))[0] == 1
    # revert of a clean tree is a no-op, not an error
    snap = snapshot(tree)
    assert run("revert", "--openclaw", str(tree))[0] == 0
    assert snapshot(tree) == snap


def test_apply_is_idempotent(tree: Path) -> None:
    assert run("apply", "--openclaw", str(tree))[0] == 0
    snap = snapshot(tree)
    code, out, _ = run("apply", "--openclaw", str(tree), "--json")
    assert code == 0 and orjson.loads(out)["result"] == "already-applied"
    assert snapshot(tree) == snap


def test_first_start_lifecycle_is_expected(tree: Path, src: Path) -> None:
    """OpenClaw's first start removes .openclaw-lifecycle-pending and prunes unknown dist files: audit and revert
    must not mistake that for tampering, and must not resurrect the marker."""
    marker = tree / ".openclaw-lifecycle-pending"
    if not marker.exists():  # the shared install may already have been started once
        marker.write_text("pending")
    assert run("apply", "--openclaw", str(tree))[0] == 0
    marker.unlink()
    assert run("audit", "--openclaw", str(tree))[0] == 0
    assert run("revert", "--openclaw", str(tree))[0] == 0
    assert not marker.exists()
    assert same_bytes(src, tree) in ([], [".openclaw-lifecycle-pending"])


def test_committed_diffs_are_what_the_tool_generates(src: Path) -> None:
    generated = render_diffs(src)
    d = PATCH_DIR / "diffs" / toolchain.OPENCLAW_VERSION
    assert {p.stem for p in d.glob("*.diff")} == set(generated)
    for cid, text in generated.items():
        assert (d / f"{cid}.diff").read_text() == text
        added = [ln for ln in text.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
        assert len(added) == 2 and not any(ln.startswith("-") and not ln.startswith("---")
                                           for ln in text.splitlines())  # an import and a call, nothing else


def test_committed_diffs_apply_with_git_and_equal_the_tool(tree: Path, tmp_path: Path) -> None:
    other = link_clone(tree, tmp_path / "other")
    d = PATCH_DIR / "diffs" / toolchain.OPENCLAW_VERSION
    for p in sorted(d.glob("*.diff")):
        r = subprocess.run(["git", "apply", "--unsafe-paths", "-p1", str(p)], cwd=other, capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
    assert run("apply", "--openclaw", str(tree))[0] == 0
    t = targets(tree)
    for rel in t.values():
        assert (tree / rel).read_bytes() == (other / rel).read_bytes()


def test_audit_detects_modified_lines_and_runtime(tree: Path, src: Path) -> None:
    assert run("apply", "--openclaw", str(tree))[0] == 0
    t = targets(tree)
    p = tree / t[SEND]
    text = p.read_text().replace('tapApi(bot.api, { site: "send"', 'tapApi(bot.api, { site: "sendx"')
    p.unlink()
    p.write_text(text)
    code, out, _ = run("audit", "--openclaw", str(tree), "--json")
    assert code == 2
    problems = {(x.get("change"), x["problem"]) for x in orjson.loads(out)["problems"]}
    assert (SEND, "lines-modified") in problems and (SEND, "file-hash-mismatch") in problems
    tap = tree / "eventlog-tap" / "tap.mjs"
    tap.write_text(tap.read_text() + "\n// edited\n")
    code, out, _ = run("audit", "--openclaw", str(tree), "--json")
    assert code == 2
    assert {"problem": "runtime-file-modified", "file": "eventlog-tap/tap.mjs"} in orjson.loads(out)["problems"]
    # only our own lines were touched: removing them still gives the recorded original, so revert is safe
    assert run("revert", "--openclaw", str(tree))[0] == 0
    assert same_bytes(src, tree) == []


def test_upstream_code_changed_after_apply_is_reported(tree: Path) -> None:
    assert run("apply", "--openclaw", str(tree))[0] == 0
    p = tree / targets(tree)[INGRESS]
    text = p.read_text() + "\n// upstream hotfix\n"
    p.unlink()
    p.write_text(text)
    rep = audit(tree)
    assert {"change": INGRESS, "problem": "upstream-code-modified", "target": targets(tree)[INGRESS]} in rep["problems"]
    # a file whose upstream code changed after apply is never silently reverted over
    snap = snapshot(tree)
    code, out, err = run("revert", "--openclaw", str(tree), "--json")
    assert code == 2 and "modified-since-apply" in out and err.count("\n") == 1
    assert snapshot(tree) == snap


def test_apply_rolls_back_when_a_write_fails(tree: Path, src: Path) -> None:
    """A real filesystem fault in the middle of apply (the second target is immutable, `chattr +i`: even root cannot
    rename over it) leaves the tree exactly as it was."""
    t = targets(tree)
    second = tree / t[SEND]
    subprocess.run(["chattr", "+i", str(second)], check=True)
    try:
        code, out, err = run("apply", "--openclaw", str(tree), "--json")
    finally:
        subprocess.run(["chattr", "-i", str(second)], check=True)
    assert code == 2 and "rolled back" in err
    assert same_bytes(src, tree) == []
    assert run("status", "--openclaw", str(tree))[0] == 1


def test_not_an_openclaw_dir_is_exit_2(tmp_path: Path) -> None:
    code, out, err = run("status", "--openclaw", str(tmp_path))
    assert code == 2 and err.startswith("eventlog patch: ") and err.count("\n") == 1
    assert out == ""  # the refusal's JSON report only with --json (issue 23)
    code, out, err = run("status", "--openclaw", str(tmp_path), "--json")
    assert code == 2 and err.count("\n") == 1
    assert orjson.loads(out)["error"] == "not-openclaw"


def test_bad_manifest_is_exit_2(tree: Path, tmp_path: Path) -> None:
    bad = tmp_path / "m.json"
    bad.write_text('{"manifest_version": 99}')
    code, _, err = run("apply", "--openclaw", str(tree), "--manifest", str(bad))
    assert code == 2 and "manifest_version" in err
    bad.write_text("{not json")
    assert run("status", "--openclaw", str(tree), "--manifest", str(bad))[0] == 2


def test_runtime_update_is_a_warning_and_apply_refreshes_it(tree: Path, tmp_path: Path) -> None:
    """A newer project runtime is not tampering: audit passes with a warning, apply swaps the runtime in."""
    proj = tmp_path / "proj"
    shutil.copytree(PATCH_DIR, proj / "patches" / "openclaw", ignore=shutil.ignore_patterns("diffs"))
    (proj / "eventlog" / "dlp").mkdir(parents=True)
    shutil.copyfile(REPO / "eventlog" / "dlp" / "rules.json", proj / "eventlog" / "dlp" / "rules.json")
    manifest = str(proj / "patches" / "openclaw" / "manifest.json")
    assert run("apply", "--openclaw", str(tree), "--manifest", manifest)[0] == 0
    core = proj / "patches" / "openclaw" / "runtime" / "tap-core.mjs"
    core.write_text(core.read_text() + "\n// a newer runtime\n")
    code, out, _ = run("audit", "--openclaw", str(tree), "--manifest", manifest, "--json")
    rep = orjson.loads(out)
    assert code == 0 and rep["problems"] == [] and rep["warnings"][0]["problem"] == "runtime-outdated"
    code, out, _ = run("apply", "--openclaw", str(tree), "--manifest", manifest, "--json")
    assert code == 0 and orjson.loads(out)["result"] == "runtime-refreshed"
    assert (tree / "eventlog-tap" / "tap-core.mjs").read_bytes() == core.read_bytes()
    code, out, _ = run("audit", "--openclaw", str(tree), "--manifest", manifest, "--json")
    assert code == 0 and orjson.loads(out)["warnings"] == []
