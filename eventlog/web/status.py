"""The status strip: what `eventlog doctor` says of the tap, what `eventlog verify` says of the chain, the last event.

Doctor and verify read the whole install and the whole log (seconds on a big one), so they run in a background
thread — at start and when asked to refresh — and the page shows the last finished result ("checking" before the
first). The doctor's checks come in as a callable: `doctor` is read by the CLI only (tests/test_architecture.py), so
`eventlog serve` hands `eventlog.doctor.run_checks` over, as `eventlog search` hands grep to the search library.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

import orjson

from ..store.layout import log_files
from ..store.verify import verify

DoctorChecks = Callable[[Path], list[dict[str, Any]]]
TAP_CHECKS = ("tap", "tap-live")  # of doctor's checks, the ones the strip shows


def last_event_ts(root: Path) -> str | None:
    """The newest ts among the last lines of every chat's newest day file (the system stream included)."""
    newest: dict[tuple[str, str, str], Path] = {}
    for lf in log_files(root):  # sorted by (channel, account, chat, day): the last one of a chat wins
        newest[(lf.channel, lf.account, lf.chat_id)] = lf.path
    best: str | None = None
    for path in newest.values():
        try:
            with open(path, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - 65536))
                tail = f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
            ts = orjson.loads(tail).get("ts")
        except (OSError, orjson.JSONDecodeError, AttributeError):
            continue
        if isinstance(ts, str) and (best is None or ts > best):
            best = ts
    return best


def compute(root: Path, doctor: DoctorChecks | None) -> list[dict[str, Any]]:
    """The strip's checks: {check, ok, detail} each, as `eventlog doctor --json` prints them."""
    checks: list[dict[str, Any]] = []
    if doctor is not None:
        try:
            checks += [c for c in doctor(root) if c.get("check") in TAP_CHECKS]
        except Exception as exc:  # noqa: BLE001 - a broken install must not take the page down; it says so instead
            checks.append({"check": "tap", "ok": False, "detail": f"doctor failed: {type(exc).__name__}: {exc}"})
    report = verify(root)
    checks.append({"check": "chain", "ok": report.ok,
                   "detail": f"{report.files} files, {report.lines} lines: "
                             + ("intact" if report.ok else f"{len(report.damage)} damaged place(s) (`eventlog verify`)")})
    last = last_event_ts(root)
    checks.append({"check": "last-event", "ok": last is not None, "detail": last or "no events"})
    return checks


class Status:
    """The last finished checks, refreshed in a background thread (one at a time)."""

    def __init__(self, root: Path, doctor: DoctorChecks | None) -> None:
        self.root, self.doctor = root, doctor
        self._checks: list[dict[str, Any]] | None = None
        self._lock = threading.Lock()
        self._running: threading.Thread | None = None

    def refresh(self) -> None:
        """Start a run unless one is under way."""
        with self._lock:
            if self._running is not None and self._running.is_alive():
                return
            self._running = threading.Thread(target=self._run, name="eventlog-web-status", daemon=True)
            self._running.start()

    def _run(self) -> None:
        try:
            checks = compute(self.root, self.doctor)
        except Exception as exc:  # noqa: BLE001 - the strip reports the failure rather than hiding the page
            checks = [{"check": "chain", "ok": False, "detail": f"verify failed: {type(exc).__name__}: {exc}"}]
        with self._lock:
            self._checks = checks

    def wait(self, timeout: float | None = None) -> None:
        """Until the current run ends (tests and the bench)."""
        t = self._running
        if t is not None:
            t.join(timeout)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"ready": self._checks is not None, "checks": list(self._checks or [])}
