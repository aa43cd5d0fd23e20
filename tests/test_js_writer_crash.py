"""Crash loop for the JS writer: a Node process appending with fsync=always is SIGKILLed at random moments, over and
over, alternating with Python appends. Every id the JS writer acknowledged (after its append resolved) is in the log
exactly once, no torn line is ever read back as an event, and `eventlog verify` passes."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from eventlog.store.writer import EventLog

REPO = Path(__file__).resolve().parents[1]
WRITER = REPO / "eventlog" / "patches" / "openclaw" / "runtime" / "writer.mjs"
sys.path.insert(0, str(REPO))
from eventlog import toolchain  # noqa: E402

ACKER = """
const { openEventLog } = await import(process.argv[2]);
const log = await openEventLog({ root: process.argv[3], fsync: "always" });
process.stdout.write("ready\\n");
for (let i = 0; ; i++) {
  const burst = [];
  for (let j = 0; j < 4; j++) {  // several in flight: exercises the queue, the lock and group writes when killed
    burst.push(log.append({ event: "message:received", channel: "telegram", chat_id: "7",
      ts: new Date().toISOString(), text: "x".repeat(1 + (i * 37 + j * 101) % 3000) + " Ёж 👋", seq: i * 4 + j }));
  }
  for (const stored of await Promise.all(burst)) process.stdout.write(stored.id + "\\n");
}
"""


@pytest.mark.slow
def test_sigkill_loop_keeps_every_acknowledged_event_once(tmp_path: Path) -> None:
    node = toolchain.node_or_default()
    script = tmp_path / "acker.mjs"
    script.write_text(ACKER)
    root = tmp_path / "root"
    rng = random.Random(5)
    acked: list[str] = []
    py = EventLog(root, fsync="always")
    for round_ in range(200):
        p = subprocess.Popen([node, str(script), WRITER.as_uri(), str(root)], stdout=subprocess.PIPE)
        assert p.stdout is not None
        assert p.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.08))
        p.send_signal(signal.SIGKILL)
        out = p.stdout.read()
        p.wait()
        # Only complete lines are acknowledgements; a partial id at the cut was never printed in full.
        acked += [ln.decode() for ln in out.split(b"\n")[:-1]]
        if round_ % 10 == 0:  # the Python writer takes over between crashes (repairs a torn tail if any)
            py.append({"event": "message:sent", "channel": "telegram", "chat_id": "7",
                       "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "text": f"py {round_}"})
    files = sorted((root / "raw").rglob("*.jsonl"))
    ids: list[str] = []
    for f in files:
        for line in f.read_bytes().split(b"\n")[:-1]:
            ids.append(orjson.loads(line)["id"])  # every stored line parses: no torn line is read back
    assert acked, "the writer never acknowledged anything"
    missing = set(acked) - set(ids)
    assert not missing, f"{len(missing)} acknowledged events lost"
    assert len(ids) == len(set(ids)), "an event was stored twice"
    # A final append repairs a torn tail left by the last kill; then the whole log verifies.
    py.append({"event": "message:sent", "channel": "telegram", "chat_id": "7",
               "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "text": "final"})
    verify = subprocess.run([sys.executable, "-m", "eventlog", "verify", "--root", str(root)], capture_output=True,
                            text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
