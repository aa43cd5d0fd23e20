"""Issue 26 item 5: `eventlog seal` refuses a day file whose chain does not verify (exit 2, naming file:line), so a
seal never commits to a tamper; and `verify` no longer suggests `eventlog seal` for a damaged file."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.store.writer import EventLog

from store_support import ev

DAY1 = "raw/telegram/chats/42/2026/11/01.jsonl"


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _sealed_then_forged(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    assert run("init", "--root", str(root)).exit_code == 0
    log = EventLog(root, fsync="never")
    for i in range(3):
        log.append(ev(ts=f"2026-11-01T10:0{i}:00.000Z", text=f"line {i}"))
    log.append(ev(ts="2026-11-02T10:00:00.000Z", text="next day"))  # seals day 1 (auto-seal)
    assert run("verify", "--root", str(root)).exit_code == 0
    # a line appended by hand to the sealed day, chained to nothing
    with open(root / DAY1, "ab") as f:
        f.write(b'{"channel":"telegram","chat_id":"42","event":"message:received","id":"01KB0000000000000000000001",'
                b'"prev":"' + b"0" * 64 + b'","ts":"2026-11-01T12:00:00.000Z","v":2}\n')
    return root


def test_seal_refuses_a_file_whose_chain_is_broken(tmp_path: Path):
    root = _sealed_then_forged(tmp_path)
    seals = (root / "seals/telegram/42.jsonl").read_bytes()
    r = run("seal", "--root", str(root), "--through", "2026-11-01")
    assert r.exit_code == 2, r.output
    assert f"{DAY1}:3:" in r.stderr and "Traceback" not in r.output
    assert (root / "seals/telegram/42.jsonl").read_bytes() == seals  # nothing committed to the forged line
    v = run("verify", "--root", str(root))
    assert v.exit_code == 2 and f"{DAY1}:3:" in v.output
    assert "`eventlog seal`" not in v.output and "do not reseal" in v.output, v.output  # no advice to commit to it


def test_seal_still_reseals_an_intact_extended_day(tmp_path: Path):
    root = tmp_path / "root"
    assert run("init", "--root", str(root)).exit_code == 0
    log = EventLog(root, fsync="never")
    log.append(ev(ts="2026-11-01T10:00:00.000Z"))
    log.append(ev(ts="2026-11-02T10:00:00.000Z"))
    log.append(ev(ts="2026-11-01T11:00:00.000Z", text="late"))  # a late event extends the sealed day: intact
    assert run("verify", "--root", str(root)).exit_code == 0
    r = run("seal", "--root", str(root), "--through", "2026-11-01", "--json")
    assert r.exit_code == 0 and "not sealed" not in r.output
