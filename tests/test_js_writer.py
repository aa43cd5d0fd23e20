"""The JS writer (eventlog/patches/openclaw/runtime/writer.mjs) against the Python store: same bytes for the same parsed events,
and Python and Node processes appending to one chat/day at the same time keep one verifiable chain."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from eventlog.store import schema
from eventlog.store.writer import EventLog

REPO = Path(__file__).resolve().parents[1]
WRITER = REPO / "eventlog" / "patches" / "openclaw" / "runtime" / "writer.mjs"
sys.path.insert(0, str(REPO))
from eventlog import toolchain  # noqa: E402

# Appends the events of a JSON Lines file (or N generated ones) with the JS writer; prints how many it wrote.
DRIVER = """
import { readFileSync } from "node:fs";
const [writerUrl, root, fsync, mode, arg, tag] = process.argv.slice(2);
const { openEventLog } = await import(writerUrl);
const log = await openEventLog({ root, fsync });
let n = 0;
if (mode === "file") {
  for (const line of readFileSync(arg, "utf8").split("\\n")) {
    if (line) { await log.append(JSON.parse(line)); n++; }
  }
} else {
  // Bursts of concurrent appends: exercises the in-process queue and group commit against the other processes.
  const total = Number(arg);
  for (let i = 0; i < total; i += 25) {
    const burst = [];
    for (let j = i; j < Math.min(total, i + 25); j++) {
      burst.push(log.append({ event: "message:received", channel: "telegram", chat_id: "-100500",
        ts: "2026-11-30T12:00:00.000Z", text: `${tag} ${j} Привет 👋`, writer: tag, seq: j }));
    }
    await Promise.all(burst);
    n += burst.length;
  }
}
console.log(n);
"""


def node_bin() -> str:
    found = toolchain.find_node()
    assert found, "no node binary: run `make node`"
    return str(found)


def run_node(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    script = tmp_path / "driver.mjs"
    if not script.exists():
        script.write_text(DRIVER)
    return subprocess.Popen([node_bin(), str(script), WRITER.as_uri(), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _text(rng: random.Random, n: int) -> str:
    pools = ["abc xyz", "Привет мир Ёё", "👋🏽🎉𝔘", "\"\\/\b\f\n\r\t\x00\x01\x1f\x7f", "\u2028\u2029\ufeff\uffff",
             "<b>html</b> &amp;", "中文字符", "ًٌٍ عربى"]
    return "".join(rng.choice(rng.choice(pools)) for _ in range(n))


def _value(rng: random.Random, depth: int) -> object:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.randint(-(2**53 - 1), 2**53 - 1)
    if kind == 1:
        return rng.choice([rng.uniform(-1e6, 1e6), rng.uniform(1e-6, 1e-5), rng.uniform(-1, 1) * 1e-8, 0.5,
                           51.50735])
    if kind == 2:
        return _text(rng, rng.randrange(0, 30))
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return rng.randint(-1000, 1000)
    if kind == 5:
        return ""
    if kind in (6, 7):
        return {_text(rng, rng.randrange(1, 6)): _value(rng, depth + 1) for _ in range(rng.randrange(0, 5))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(0, 5))]


def random_events(seed: int, n: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ev = {"event": rng.choice(["message:received", "message:sent", "dlp:alert"]), "channel": "telegram",
              "chat_id": rng.choice([42, "-1001234567890", "@chan_x"]),
              "ts": rng.choice(["2026-11-30T10:00:00Z", "2026-11-30T23:59:59.999+00:00",
                                "2026-12-01T01:30:00.123456+03:00", "2026-11-29T20:00:00-05:00"]),
              "id": schema.new_id(), "text": _text(rng, rng.randrange(0, 200)),
              "salt": rng.randbytes(16).hex()}  # given, like the id: both sides must write the same bytes
        for _ in range(rng.randrange(0, 6)):
            ev[_text(rng, rng.randrange(1, 8))] = _value(rng, 0)
        out.append(ev)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_node_writes_the_same_bytes_as_python_for_random_events(tmp_path: Path, seed: int) -> None:
    events = random_events(seed, 300)
    src = tmp_path / "events.jsonl"
    src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    py_root, js_root = tmp_path / "py", tmp_path / "js"
    log = EventLog(py_root, fsync="never")
    for line in src.read_bytes().splitlines():  # both sides append the same parsed objects, in the same order
        log.append(orjson.loads(line))
    p = run_node(tmp_path, str(js_root), "never", "file", str(src), "x")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert out.strip() == "300"
    py_files = sorted(f.relative_to(py_root) for f in py_root.rglob("*") if f.is_file())
    js_files = sorted(f.relative_to(js_root) for f in js_root.rglob("*") if f.is_file())
    assert py_files == js_files and py_files
    for rel in py_files:
        assert (js_root / rel).read_bytes() == (py_root / rel).read_bytes(), f"{rel} differs"


def test_python_and_node_processes_append_to_one_chat_day_concurrently(tmp_path: Path) -> None:
    root = tmp_path / "root"
    per_writer = 1500
    procs = [run_node(tmp_path, str(root), policy, "gen", str(per_writer), f"js{i}")
             for i, policy in enumerate(["batch", "never"])]
    lines = "".join(json.dumps({"event": "message:sent", "channel": "telegram", "chat_id": "-100500",
                                "ts": "2026-11-30T12:00:00Z", "text": f"py{k} {i}", "writer": f"py{k}", "seq": i},
                               ensure_ascii=False) + "\n" for k in range(2) for i in range(per_writer))
    py_inputs = [lines.splitlines(keepends=True)[k * per_writer:(k + 1) * per_writer] for k in range(2)]
    py = [subprocess.Popen([sys.executable, "-m", "eventlog", "append", "--root", str(root),
                            "--fsync", policy, "--ack"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True) for policy in ("batch", "never")]
    acked = []
    for proc, inp in zip(py, py_inputs, strict=True):
        out, err = proc.communicate("".join(inp), timeout=300)
        assert proc.returncode == 0, err
        acked += out.split()
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out.strip() == str(per_writer)
    day = root / "raw/telegram/chats/-100500/2026/11/30.jsonl"
    events = [orjson.loads(ln) for ln in day.read_bytes().splitlines()]
    assert len(events) == 4 * per_writer
    assert len({e["id"] for e in events}) == len(events)
    assert set(acked) <= {e["id"] for e in events} and len(acked) == 2 * per_writer
    for w in ("js0", "js1", "py0", "py1"):  # each writer's events stay in its own order
        seqs = [e["seq"] for e in events if e["writer"] == w]
        assert seqs == list(range(per_writer)), w
    writers_seen = [e["writer"] for e in events]
    switches = sum(1 for a, b in zip(writers_seen, writers_seen[1:], strict=False) if a != b)
    assert switches >= 3, "the writers did not actually interleave"
    verify = subprocess.run([sys.executable, "-m", "eventlog", "verify", "--root", str(root)], capture_output=True,
                            text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert not list(day.parent.glob("*.lock"))


def test_python_repairs_a_tail_torn_by_a_killed_node_writer_and_node_continues_the_chain(tmp_path: Path) -> None:
    root = tmp_path / "root"
    p = run_node(tmp_path, str(root), "never", "gen", "50", "js")
    assert p.communicate(timeout=60)[0].strip() == "50"
    day = root / "raw/telegram/chats/-100500/2026/11/30.jsonl"
    with open(day, "ab") as f:
        f.write(b'{"half a line')  # what a SIGKILL between two write() calls of a non-atomic writer would leave
    EventLog(root, fsync="never").append({"event": "message:sent", "channel": "telegram", "chat_id": "-100500",
                                          "ts": "2026-11-30T12:30:00Z", "text": "py after the crash"})
    p = run_node(tmp_path, str(root), "never", "gen", "10", "js2")
    assert p.communicate(timeout=60)[0].strip() == "10"
    events = [orjson.loads(ln) for ln in day.read_bytes().splitlines()]
    assert [e["event"] for e in events[50:52]] == ["log:repair", "message:sent"]
    assert len(events) == 50 + 2 + 10
    verify = subprocess.run([sys.executable, "-m", "eventlog", "verify", "--root", str(root)], capture_output=True,
                            text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.parametrize("env", [
    {"EVENTLOG_ROOT": "/srv/log", "OPENCLAW_STATE_DIR": "/st"},
    {"EVENTLOG_ROOT": "~/elog"},
    {"EVENTLOG_ROOT": "relative/root"},
    {"OPENCLAW_STATE_DIR": "/st"},
    {"OPENCLAW_STATE_DIR": "~/state"},
    {},
])
def test_both_sides_resolve_the_log_root_the_same_way(tmp_path: Path, env: dict[str, str]) -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("EVENTLOG_ROOT", "OPENCLAW_STATE_DIR")}
    full = dict(base, HOME=str(tmp_path / "home"), **env)
    js = subprocess.run([node_bin(), "--input-type=module", "-e",
                         f"import {{ resolveRoot }} from {json.dumps(WRITER.as_uri())};"
                         "console.log(resolveRoot(process.env))"], env=full, cwd=tmp_path, capture_output=True,
                        text=True, timeout=60)
    py = subprocess.run([sys.executable, "-c", "from eventlog.store.layout import resolve_root; print(resolve_root())"],
                        env=full, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert js.returncode == 0 and py.returncode == 0, js.stderr + py.stderr
    assert js.stdout.strip() == py.stdout.strip()


def test_js_written_log_has_a_head_python_verifies_and_can_forget(tmp_path: Path) -> None:
    """The JS writer's auto-seals write checkpoints; Python's head/verify --head/forget work on what it wrote, and the
    JS writer keeps appending to the erased, resealed day afterwards."""
    from click.testing import CliRunner

    from eventlog.cli.main import cli
    from eventlog.store.head import verify_head
    from store_support import current_head

    root = tmp_path / "root"
    src = tmp_path / "events.jsonl"
    evs = [{"event": "message:received", "channel": "telegram", "chat_id": "42", "ts": f"2026-11-{d}T10:00:00Z",
            "text": f"zebracanary {d}", "from": {"id": 1, "username": "canaryuser"}} for d in ("28", "29", "30")]
    src.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in evs))
    p = run_node(tmp_path, str(root), "always", "file", str(src), "x")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    h0 = current_head(root)
    assert h0 and verify_head(root, h0) == []
    r = CliRunner().invoke(cli, ["forget", "--chat", "42", "--reason", "test", "--yes", "--root", str(root)],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert not [f for f in root.rglob("*") if f.is_file() and b"canary" in f.read_bytes()]
    late = tmp_path / "late.jsonl"
    late.write_bytes(orjson.dumps({**evs[0], "text": "late", "from": None}) + b"\n")
    p = run_node(tmp_path, str(root), "always", "file", str(late), "x")  # into the erased, resealed 28th
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    r = CliRunner().invoke(cli, ["verify", "--head", h0, "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output


def test_forget_while_the_js_writer_appends_to_the_same_chat(tmp_path: Path) -> None:
    """forget rewrites day files under the same lock the JS writer takes: erasing a chat while a gateway appends to it
    loses nothing and leaves one verifiable chain per file."""
    from eventlog.ops.forget import forget
    from eventlog.store.reader import iter_events
    from eventlog.store.verify import verify

    root = tmp_path / "root"
    EventLog(root, fsync="never").append({"event": "message:received", "channel": "telegram", "chat_id": "-100500",
                                          "ts": "2026-11-30T11:00:00Z", "text": "first"})
    p = run_node(tmp_path, str(root), "batch", "gen", "1500", "js")
    rounds = 0
    while p.poll() is None or rounds == 0:
        forget(root, chat="-100500", reason="concurrency test")
        rounds += 1
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert out.strip() == "1500" and rounds >= 1
    events = [e for e in iter_events(root, chat="-100500")]
    assert len(events) == 1501 and len({e["id"] for e in events}) == 1501
    rep = verify(root)
    assert rep.ok, [str(d) for d in rep.damage[:5]]


ALERTS_DRIVER = """
const [writerUrl, headUrl, root, n, doCheckpoint] = process.argv.slice(2);
const { openEventLog } = await import(writerUrl);
const { checkpoint } = await import(headUrl);
const log = await openEventLog({ root, fsync: "never" });
for (let i = 0; i < Number(n); i++) {
  await log.appendStream("dlp/alerts.jsonl", { event: "dlp:alert", channel: "telegram", chat_id: "7",
    ts: new Date().toISOString(), rule: "anthropic-key", severity: "critical", action: "block", n: i });
}
if (doCheckpoint === "1") await checkpoint(log);
await log.close();
"""


def test_alerts_written_by_the_js_tap_are_committed_by_the_head_and_their_loss_is_damage(tmp_path: Path) -> None:
    """DLP alerts the gateway's writer appends (no seal involved) are covered by the next checkpoint — `eventlog head`
    writes one, and so does the JS writer's own checkpoint (it reads the Python-written records incrementally);
    deleting alert lines afterwards makes `verify --head` exit 2 naming dlp/alerts.jsonl."""
    from click.testing import CliRunner

    from eventlog.cli.main import cli
    from eventlog.store.head import read_checkpoints, verify_head

    root = tmp_path / "root"
    script = tmp_path / "alerts.mjs"
    script.write_text(ALERTS_DRIVER)
    head_url = (WRITER.parent / "writer-head.mjs").as_uri()

    def js(n: int, cp: bool) -> None:
        p = subprocess.run([node_bin(), str(script), WRITER.as_uri(), head_url, str(root), str(n), "1" if cp else "0"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr

    js(3, False)
    r = CliRunner().invoke(cli, ["head", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    h1 = r.output.strip()
    js(2, True)  # the JS writer's checkpoint builds on the one Python wrote
    state, hashes = read_checkpoints(root)
    assert len(hashes) == 2 and hashes[0] == h1
    alerts = (root / "dlp" / "alerts.jsonl").read_bytes().split(b"\n")[:-1]
    assert state["dlp/alerts.jsonl"]["lines"] == 5 == len(alerts)
    h2 = hashes[-1]
    assert verify_head(root, h1) == [] and verify_head(root, h2) == []
    (root / "dlp" / "alerts.jsonl").write_bytes(b"".join(x + b"\n" for x in alerts[:4]))  # the last alert deleted
    assert verify_head(root, h1) == []  # the older head never saw the fifth alert
    r = CliRunner().invoke(cli, ["verify", "--head", h2, "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 2 and "dlp/alerts.jsonl" in r.output, r.output
