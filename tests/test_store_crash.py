"""Crash loop: `eventlog append --ack --fsync always` killed with SIGKILL at random moments, 200 times."""
import random
import subprocess
import sys
import threading
import time
from collections import Counter

import orjson
import pytest

from eventlog.store.reader import iter_events
from eventlog.store.verify import verify

from store_support import REPO

KILLS = int(__import__("os").environ.get("CRASH_KILLS", "200"))


def _feed(stdin, rng, stop):
    i = 0
    try:
        while not stop.is_set():
            chat = rng.choice(["1", "2", "-1003"])
            day = rng.choice(["27", "28", "29"])
            ev = {"event": "message:received", "channel": "telegram", "chat_id": chat,
                  "ts": f"2026-11-{day}T12:00:00.{i % 1000:03d}Z", "text": f"event {i} " + "ж" * rng.randint(0, 3000)}
            stdin.write(orjson.dumps(ev) + b"\n")
            stdin.flush()
            i += 1
    except (BrokenPipeError, ValueError, OSError):
        pass


@pytest.mark.slow
def test_sigkill_loop_every_ack_survives_exactly_once(tmp_path):
    root = tmp_path / "root"
    rng = random.Random(20261130)
    acked: list[str] = []
    for _ in range(KILLS):
        p = subprocess.Popen([sys.executable, "-m", "eventlog", "append", "--ack", "--fsync", "always",
                              "--root", str(root)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        stop = threading.Event()
        feeder = threading.Thread(target=_feed, args=(p.stdin, random.Random(rng.random()), stop), daemon=True)
        feeder.start()
        chunks: list[bytes] = []
        first = threading.Event()

        def _collect(p=p, chunks=chunks, first=first):  # bound now: the loop goes on while the thread runs
            while data := p.stdout.read1(65536):
                chunks.append(data)
                first.set()

        collector = threading.Thread(target=_collect, daemon=True)
        collector.start()
        # Kill inside the write path: after the first ack, a random few ms later (one run in ten: blindly, during
        # start-up, lock taking or repair).
        if rng.random() < 0.9:
            first.wait(timeout=3)
            time.sleep(rng.uniform(0, 0.03))
        else:
            time.sleep(rng.uniform(0, 0.4))
        p.kill()
        p.wait()
        stop.set()
        collector.join(timeout=5)
        feeder.join(timeout=5)
        out = b"".join(chunks)
        # Only whole ack lines count: a line cut by the kill was never acknowledged.
        acked += [l.decode() for l in out.split(b"\n")[:-1] if l]
        err = p.stderr.read().decode()
        assert "Traceback" not in err, err
    assert len(acked) > KILLS  # the loop really wrote between kills
    problems = []
    counts = Counter(e["id"] for e in iter_events(root, on_problem=problems.append))
    missing = [i for i in acked if counts[i] != 1]
    assert not missing, f"{len(missing)} acknowledged ids missing or duplicated"
    assert all(p.reason.startswith("torn final line") for p in problems), problems
    report = verify(root)
    assert report.ok, [str(d) for d in report.damage[:5]]
