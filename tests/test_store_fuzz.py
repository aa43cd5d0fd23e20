"""A seeded fuzz of `eventlog append` (issue 9): 10,000 input lines — valid events from a wide space (years 0001–9999,
offsets, integer and odd chat ids, Unicode, nested values, caller ids) and invalid ones with a known reason (bad JSON
and UTF-8, non-ASCII digits, out-of-range years, hostile names, duplicate ids …) — fed through the CLI from pipes and
from files. The test's own oracle says which lines are valid and which file each lands in; the writer is not asked.

It must end with: no traceback, exit 2 with one `stdin line N` line exactly at each invalid line, every acknowledged
id written, and every acknowledged event visible to `verify`, `stats`, `sql` and `grep`.
"""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli

CASES = int(__import__("os").environ.get("FUZZ_CASES", "10000"))
SEED = 20261130
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
MESSAGE_KINDS = ("message:received", "message:sent")
KINDS = MESSAGE_KINDS + ("chat:service", "tool:call_done")
CHATS = [42, -1001234567890, "-100777", "user@host", "a.b-c_d", "Z" * 128, 7]
CHANNELS = ["telegram", "whatsapp-x", "a1"]
WORDS = ["привет", "hello", "😀", "مرحبا", "e\u0301", "日本語", "\u0000nul", "tab\there", "quote\"", "back\\slash",
         "\u2028", "‮rtl"]
UNI_DIGITS = "٠١٢٣٤٥٦٧٨٩"  # ARABIC-INDIC: digits to Python's re \d, not to RFC 3339


class Oracle:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.ids: dict[str, set[str]] = {}  # relpath → caller-supplied ids written there
        self.used: list[tuple[str, str]] = []  # (relpath, id) to duplicate

    def ts(self) -> tuple[str, datetime]:
        """A valid RFC 3339 ts and its UTC instant (ms precision), years 0001–9999 in UTC."""
        r = self.rng
        lo, hi = datetime(1, 1, 2, tzinfo=timezone.utc), datetime(9999, 12, 30, tzinfo=timezone.utc)
        if r.random() < 0.5:
            utc = datetime(2026, 11, 30, tzinfo=timezone.utc) + timedelta(seconds=r.randrange(-86400 * 3, 86400 * 3))
        else:
            utc = lo + timedelta(seconds=r.randrange(int((hi - lo).total_seconds())))
        utc += timedelta(microseconds=r.randrange(1_000_000))
        off = timedelta(minutes=r.choice([0, 0, 60, -300, 330, 23 * 60 + 59, -(23 * 60 + 59), 45]))
        local = utc + off
        frac = r.choice(["", f".{local.microsecond // 1000:03d}", f".{local.microsecond:06d}", f".{local.microsecond // 100000}"])
        sep = r.choice("TTt ")
        if off:
            sign = "+" if off > timedelta(0) else "-"
            mins = abs(int(off.total_seconds())) // 60
            zone = f"{sign}{mins // 60:02d}:{mins % 60:02d}"
        else:
            zone = r.choice("ZZz") if r.random() < 0.9 else "+00:00"
        text = f"{local.year:04d}-{local.month:02d}-{local.day:02d}{sep}{local:%H:%M:%S}{frac}{zone}"
        digits = frac[1:4].ljust(3, "0") if frac else "000"
        return text, utc.replace(microsecond=int(digits) * 1000)

    def ulid(self) -> str:
        return self.rng.choice("01234567") + "".join(self.rng.choice(CROCKFORD) for _ in range(25))

    def value(self, depth: int = 0):
        r = self.rng
        kinds = ["int", "float", "str", "bool", "null"] + (["list", "dict"] if depth < 3 else [])
        k = r.choice(kinds)
        if k == "int":
            return r.choice([0, -1, 2**63 - 1, -(2**63), r.randrange(-10**6, 10**6)])
        if k == "float":
            return r.choice([0.5, -1.25, 1e-6, 3.14159, 1e300])
        if k == "str":
            return " ".join(r.choice(WORDS) for _ in range(r.randrange(4)))
        if k == "bool":
            return r.random() < 0.5
        if k == "null":
            return None
        if k == "list":
            return [self.value(depth + 1) for _ in range(r.randrange(4))]
        return {r.choice(["id", "a", "Ключ", "😀", "z", "text"]): self.value(depth + 1) for _ in range(r.randrange(4))}

    def good(self, case: int) -> tuple[dict, str]:
        r = self.rng
        ts, utc = self.ts()
        chat = r.choice(CHATS)
        ev = {"event": r.choice(KINDS), "channel": r.choice(CHANNELS), "chat_id": chat, "ts": ts,
              "text": f"fz{case} " + " ".join(r.choice(WORDS) for _ in range(r.randrange(6)))}
        for _ in range(r.randrange(4)):
            ev[r.choice(["raw", "from", "payload", "n", "nested", "prev"])] = self.value()
        if r.random() < 0.1:
            ev["v"] = 1
        rel = f"raw/{ev['channel']}/chats/{chat}/{utc:%Y}/{utc:%m}/{utc:%d}.jsonl".replace(
            f"/{utc:%Y}/", f"/{utc.year:04d}/")
        if r.random() < 0.1:
            ev["id"] = self.ulid()
        return ev, rel

    def bad(self, case: int) -> bytes:
        r = self.rng
        ev, rel = self.good(case)
        ev.pop("id", None)
        choice = r.randrange(22)
        if choice == 0:
            return orjson.dumps(ev)[:-3]  # truncated JSON
        if choice == 1:
            return r.choice([b"[1,2]", b'"x"', b"3", b"null", b"{}"])
        if choice == 2:
            del ev[r.choice(["event", "channel", "chat_id", "ts"])]
        elif choice == 3:
            i = r.randrange(len(ev["ts"]))
            ev["ts"] = ev["ts"][:i] + r.choice(UNI_DIGITS) + ev["ts"][i + 1:] if ev["ts"][i].isdigit() else \
                "2026-11-30T1" + r.choice(UNI_DIGITS) + ":00:00Z"
        elif choice == 4:
            ev["ts"] = r.choice(["0000-06-01T00:00:00Z", "0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00",
                                 "10000-01-01T00:00:00Z"])
        elif choice == 5:
            ev["ts"] = r.choice(["2026-11-30", "2026-11-30T04:24:25", "2026-11-30T04:24:25+05:75", "yesterday",
                                 "2026-11-30T23:59:60Z", "2026-02-29T00:00:00Z", "2026-11-30T04:24:25+0300", 1796000000])
        elif choice == 6:
            ev["chat_id"] = r.choice(["../x", "a/b", "", ".", "x" * 129, "a\x00b", "a b", True, None, 1.5, ["1"]])
        elif choice == 7:
            ev["channel"] = r.choice(["Telegram", "..", "", "a" * 33, 5])
        elif choice == 8:
            ev["event"] = r.choice(["Message", "message", "message:", ":x", "a:b c", 7])
        elif choice == 9:
            ev["v"] = r.choice([3, 0, True, "1", "2"])  # writers accept 1 and 2 (format v2)
        elif choice == 10:
            ev["id"] = r.choice(["x", "01KB", "8" + "0" * 25, "01kb0000000000000000000001", 5])
        elif choice == 11 and self.used:
            rel_dup, dup = r.choice(self.used)  # an id already in that file
            ev2, _ = self.good(case)
            ev2.pop("id", None)
            parts = rel_dup.split("/")
            chat = parts[3]
            ev2.update(channel=parts[1], chat_id=chat, ts=f"{parts[4]}-{parts[5]}-{parts[6][:2]}T12:00:00Z", id=dup)
            return orjson.dumps(ev2)
        elif choice == 12:
            return orjson.dumps(ev)[:-1] + b',"text2":"\xff\xfe"}'  # invalid UTF-8
        elif choice == 13:
            return orjson.dumps(ev)[:-1] + b',"s":"\\ud800"}'  # a lone surrogate
        elif choice == 14:
            return orjson.dumps(ev)[:-1] + b',"big":123456789012345678901234567890}'  # read as a float by orjson
        elif choice == 15:
            return orjson.dumps(ev)[:-1] + b',\x00"x":1}'
        elif choice == 16:
            return b"{" + orjson.dumps(ev)  # junk
        else:
            ev["ts"] = r.choice(["2026-13-01T00:00:00Z", "2026-11-31T00:00:00Z", "1900-02-29T00:00:00Z",
                                 "2026-11-30T24:00:00Z", "2026-11-30T04:60:00Z", "2026-11-30T04:24:25+24:00"])
        return orjson.dumps(ev)


def run_append(root: Path, data: bytes, as_file: Path | None):
    args = ["append", "--root", str(root), "--ack", "--fsync", "never"]
    if as_file is None:
        return CliRunner().invoke(cli, args, input=data, catch_exceptions=False)
    as_file.write_bytes(data)
    with open(as_file, "rb") as f:
        return CliRunner().invoke(cli, args, input=f, catch_exceptions=False)


@pytest.mark.slow
def test_fuzz_append_10000_cases(tmp_path):
    rng = random.Random(SEED)
    oracle = Oracle(rng)
    root = tmp_path / "root"
    acked: dict[str, dict] = {}
    counts = {"cases": 0, "good": 0, "bad": 0, "invocations": 0, "file": 0, "pipe": 0}
    case = 0
    while case < CASES:
        # one invocation: a run of good lines, then (usually) one bad line, which ends it
        good, lines = [], []
        pending: dict[str, set[str]] = {}
        for _ in range(rng.randrange(1, 60)):
            if case >= CASES:
                break
            if rng.random() < 0.2:
                lines.append(oracle.bad(case))
                case += 1
                break
            ev, rel = oracle.good(case)
            if "id" in ev and (ev["id"] in oracle.ids.get(rel, set()) or ev["id"] in pending.get(rel, set())):
                ev.pop("id")  # the oracle keeps good lines good
            if "id" in ev:
                pending.setdefault(rel, set()).add(ev["id"])
            good.append((ev, rel))
            lines.append(orjson.dumps(ev))
            case += 1
        has_bad = len(lines) > len(good)
        data = b"\n".join(lines) + b"\n"
        as_file = tmp_path / "in.jsonl" if rng.random() < 0.4 else None
        counts["invocations"] += 1
        counts["file" if as_file else "pipe"] += 1
        r = run_append(root, data, as_file)
        if has_bad:
            assert r.exit_code == 2, (r.output, data[-300:])
            err = r.stderr.strip()
            assert err.startswith(f"eventlog: stdin line {len(lines)}:") and "\n" not in err, (err, data[-300:])
            if as_file is not None:
                assert r.stdout == "", "a file with a bad line writes nothing"
                r = run_append(root, b"\n".join(lines[:-1]) + b"\n", as_file)  # the good part, then
        if not has_bad or as_file is not None:
            assert r.exit_code == 0, (r.output, r.stderr)
        ids = r.stdout.split()
        assert len(ids) == len(good), (r.stderr, len(ids), len(good))
        for (ev, rel), i in zip(good, ids, strict=True):
            assert ev.get("id", i) == i
            acked[i] = {"rel": rel, "kind": ev["event"], "text": ev["text"]}
            if "id" in ev:
                oracle.ids.setdefault(rel, set()).add(i)
                oracle.used.append((rel, i))
        counts["good"] += len(good)
        counts["bad"] += has_bad
    counts["cases"] = case
    assert counts["cases"] == CASES and counts["bad"] > 1000 and counts["file"] > 100 and counts["pipe"] > 100

    def cmd(*args):
        return CliRunner().invoke(cli, [*args, "--root", str(root)], catch_exceptions=False)

    v = cmd("verify", "--json")
    assert v.exit_code == 0, v.output[-2000:]
    summary = orjson.loads(v.stdout.splitlines()[-1])
    assert summary["ok"] and summary["damaged"] == 0
    stats = [orjson.loads(ln) for ln in cmd("stats", "--json", "--by", "day").stdout_bytes.split(b"\n") if ln]
    assert sum(s["events"] for s in stats) == len(acked)
    s = cmd("sql", "--json", "SELECT id, file FROM events")
    assert s.exit_code == 0, s.stderr
    rows = [orjson.loads(ln) for ln in s.stdout_bytes.split(b"\n") if ln]  # not splitlines(): texts hold U+2028
    assert {row["id"] for row in rows} == set(acked) and len(rows) == len(acked)
    g = cmd("grep", "-E", "fz[0-9]+", "--json")
    assert g.exit_code == 0, g.stderr
    found = {orjson.loads(ln)["event"]["id"] for ln in g.stdout_bytes.split(b"\n") if b'"type":"match"' in ln}
    assert found == {i for i, a in acked.items() if a["kind"] in MESSAGE_KINDS}
    on_disk = {p.relative_to(root).as_posix() for p in (root / "raw").rglob("*.jsonl")}
    assert on_disk == {a["rel"] for a in acked.values()}
    assert not list(root.rglob("*.lock")) and not list(root.rglob("*.torn-*"))
    print(counts)
