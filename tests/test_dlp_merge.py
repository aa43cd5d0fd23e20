"""One alert per leak: the Python decision replays tests/vectors/dlp/alert_merge.json (the JS tap replays the same
file in runtime/test/dlp-alerts.test.mjs), and a log re-scan of growing previews raises one alert, updated."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from eventlog.dlp.merge import AlertMerger

VEC = json.loads((Path(__file__).parent / "vectors/dlp/alert_merge.json").read_text())


@pytest.mark.parametrize("seq", VEC["sequences"], ids=[s["name"] for s in VEC["sequences"]])
def test_merge_vectors(seq: dict) -> None:
    m = AlertMerger()
    ids: list[str | None] = []
    for i, st in enumerate(seq["steps"]):
        kind, aid = m.decide(st["chat"], st["message_id"], st["rule"], st["start"], st["end"], st["field"],
                             st["head"])
        if kind == "new":
            aid = f"A{i}"
            m.add(st["chat"], st["message_id"], st["rule"], st["start"], st["end"], aid, st["field"], st["head"])
            got = "new"
        else:
            got = f"{kind}:{ids.index(aid)}"
        ids.append(aid if kind == "new" else None)
        assert got == st["expect"], (i, st)


def test_log_rescan_growing_secret_is_one_alert(tmp_path: Path) -> None:
    """`eventlog dlp scan --log` over a streamed reply (send + edits with a growing token, same message_id) raises one
    alert with updates; the same token in another message is another alert; the projection shows the longest."""
    from eventlog.dlp.alerts import project
    from eventlog.dlp.engine import open_scanner
    from eventlog.dlp.logscan import scan_log
    from eventlog.store.writer import EventLog

    tok = "ghs_" + "Qx7kP2mZ9vLw4RtY8nB3cD6fH1jK5sA0eG" * 4
    texts = [f"token {tok[:44]} …", f"token {tok[:90]} …", f"token {tok} done", f"token {tok} done, bye"]
    evs = [{"event": "message:sent", "ts": f"2026-11-30T10:00:0{i}.000Z", "channel": "telegram", "chat_id": "42",
            "direction": "out", "method": "sendMessage" if i == 0 else "editMessageText", "message_id": 10,
            "text": t} for i, t in enumerate(texts)]
    evs.append({"event": "message:sent", "ts": "2026-11-30T10:00:09.000Z", "channel": "telegram", "chat_id": "42",
                "direction": "out", "method": "sendMessage", "message_id": 11, "text": f"again {tok}"})
    EventLog(tmp_path).append_many(evs)
    hits = list(scan_log(tmp_path, open_scanner(tmp_path)))
    assert len(hits) == 5
    assert sum(h.new for h in hits) == 2
    assert len({h.alert_id for h in hits[:4]}) == 1 and hits[4].alert_id != hits[0].alert_id
    states = {s.id: s for s in project(tmp_path)}
    assert len(states) == 2
    first = states[hits[0].alert_id].alert
    assert first["updates"] == 2 and first["end"] - first["start"] == len(tok)
    assert first["ts"] == "2026-11-30T10:00:00.000Z" and first["detected_at"] > first["ts"]
    # re-running finds the same alerts, raises nothing new
    again = list(scan_log(tmp_path, open_scanner(tmp_path)))
    assert not any(h.new for h in again)
    assert (tmp_path / "dlp/alerts.jsonl").read_text().count(tok[4:20]) == 0  # never the plaintext
