"""Crash loops for the commands that rewrite files: `eventlog forget` and `eventlog migrate` SIGKILLed at random
moments, 50 times each. After every kill the root verifies (damage-free); a final run finishes the job; the head taken
before the loop is still extended."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eventlog.store import schema
from eventlog.store.head import checkpoint
from eventlog.store.seal import seal_files
from eventlog.store.verify import verify
from eventlog.store.writer import EventLog

from store_support import REPO, ev

KILLS = int(os.environ.get("CRASH_KILLS_REWRITE", "50"))
CANARY = b"zebracanary"


def _kill_during(args: list[str], rng: random.Random) -> str:
    p = subprocess.Popen([sys.executable, "-m", "eventlog", *args], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    time.sleep(rng.uniform(0.15, 1.2))  # start-up takes ~0.3 s here: most kills land inside the work
    p.kill()
    _, err = p.communicate(timeout=60)
    return err.decode()


def _grep_root(root: Path, needle: bytes) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def _v1_day(root: Path, chat: str, day: str, n: int) -> str:
    """A day file as the v1 writer wrote it (canonical JSON, v=1, chained over the plain lines)."""
    rel = f"raw/telegram/chats/{chat}/{day[:4]}/{day[5:7]}/{day[8:]}.jsonl"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    prev = schema.genesis(rel)
    out = []
    for i in range(n):
        line = schema.encode({"v": 1, "id": schema.new_id(), "event": "message:received", "channel": "telegram",
                              "chat_id": chat, "ts": f"{day}T10:{i // 60:02d}:{i % 60:02d}.000Z",
                              "text": f"{CANARY.decode()} {i} " + "ж" * (i % 50), "prev": prev})
        prev = schema.line_hash(line)
        out.append(line + b"\n")
    path.write_bytes(b"".join(out))
    return rel


@pytest.mark.slow
def test_sigkill_during_forget(tmp_path: Path):
    root = tmp_path / "root"
    log = EventLog(root, fsync="never")
    rng = random.Random(20261201)
    days = [f"2026-11-{d:02d}" for d in range(1, 8)]
    for d in days:
        log.append_many([ev(chat="43", ts=f"{d}T09:00:00Z", text=f"other {d}")])
    seal_files(log, [f"raw/telegram/chats/43/2026/11/{d[8:]}.jsonl" for d in days])
    h0 = checkpoint(log)
    errors = []
    for i in range(KILLS):
        # fresh content every round, in sealed days too (forget reseals them), so every kill has work to interrupt
        log.append_many([ev(chat="42", ts=f"{rng.choice(days)}T10:00:{j % 60:02d}Z",
                            text=f"{CANARY.decode()} {i}.{j}", raw={"n": j}) for j in range(40)])
        if i % 5 == 0:
            seal_files(log, [lf for lf in (f"raw/telegram/chats/42/2026/11/{d[8:]}.jsonl" for d in days)
                             if (root / lf).exists()])
        err = _kill_during(["forget", "--chat", "42", "--reason", "crash test", "--yes", "--root", str(root)], rng)
        assert "Traceback" not in err, err
        rep = verify(root)
        if not rep.ok:
            errors.append((i, [str(d) for d in rep.damage[:3]]))
    assert not errors, errors
    r = subprocess.run([sys.executable, "-m", "eventlog", "forget", "--chat", "42", "--reason", "finish", "--yes",
                        "--root", str(root)], cwd=REPO, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert _grep_root(root, CANARY) == []
    rep = verify(root)
    assert rep.ok and not [w for w in rep.warnings if "size differs" in w.reason], rep.warnings[:3]
    from eventlog.store.head import verify_head

    assert verify_head(root, h0) == []


@pytest.mark.slow
def test_sigkill_during_migrate(tmp_path: Path):
    root = tmp_path / "root"
    root.mkdir()
    rng = random.Random(20261202)
    log = EventLog(root, fsync="never")
    errors = []
    for i in range(KILLS):
        # a new v1 chat every round: three days, two of them sealed
        chat = str(1000 + i)
        rels = [_v1_day(root, chat, f"2026-10-{d:02d}", 30 + i % 40) for d in (1, 2, 3)]
        seal_files(log, rels[:2])
        err = _kill_during(["migrate", "--root", str(root)], rng)
        assert "Traceback" not in err, err
        rep = verify(root)
        if not rep.ok:
            errors.append((i, [str(d) for d in rep.damage[:3]]))
    assert not errors, errors
    r = subprocess.run([sys.executable, "-m", "eventlog", "migrate", "--root", str(root)], cwd=REPO,
                       capture_output=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rep = verify(root)
    assert rep.ok and not rep.warnings, [str(w) for w in rep.warnings[:3]]
    assert not [p for p in root.rglob("*.migrate-*")]
    for p in (root / "raw").rglob("*.jsonl"):
        assert b'"v":1' not in p.read_bytes(), p
