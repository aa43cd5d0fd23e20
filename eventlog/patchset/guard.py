"""`eventlog patch guard`: notice an OpenClaw update as it happens and put the tap back (issue 10, item 5).

A watchdog observer watches the package directory (recursively) and its parent (to see the directory replaced, which
is what npm does on an update). Events only mark the tree dirty; `ensure` runs once the tree has been quiet for
`settle` seconds (an npm install writes thousands of files), and a periodic fingerprint check (`interval`) covers
anything inotify missed. Outcomes go to the log as system events:

- `patch:reapplied` — ensure changed the tree (applied, rebased and applied, runtime refreshed);
- `patch:failed` — ensure refused and the tree stayed as it was for another `settle` seconds (a half-written install
  is not reported; the same failure on the same tree is recorded once).

Both carry `old_version` (the release the guard saw before), `new_version` and `report` (the ensure outcome).
"""
from __future__ import annotations

import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

import orjson

from eventlog.errors import EventlogError
from eventlog.patchset.ensure import ensure
from eventlog.patchset.errors import PatchError
from eventlog.patchset.events import record


def _version(pkg: Path) -> str | None:
    try:
        v = orjson.loads((pkg / "package.json").read_bytes()).get("version")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
    return str(v) if v is not None else None


def fingerprint(pkg: Path) -> tuple[Any, ...]:
    """Cheap identity of the installed tree: directory inode, package.json, the tap's install record."""
    def st(p: Path) -> tuple[int, int, int] | None:
        try:
            s = p.stat()
        except OSError:
            return None
        return s.st_ino, s.st_size, s.st_mtime_ns
    return st(pkg), st(pkg / "package.json"), st(pkg / "eventlog-tap" / "install.json"), _version(pkg)


def _compact(rep: dict[str, Any]) -> dict[str, Any]:
    keep = ("ok", "result", "error", "reason", "openclaw_version", "manifest", "manifest_version", "known_good",
            "rebase")
    return {k: rep[k] for k in keep if k in rep}


class Guard:
    def __init__(self, pkg: Path, root: Path, *, settle: float = 10.0, interval: float = 60.0,
                 then: str | None = None, emit: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.pkg, self.root = Path(pkg), Path(root)
        self.settle, self.interval, self.then = settle, interval, then
        self.emit = emit or (lambda _r: None)
        self.stop_event = threading.Event()
        self._lock = threading.Lock()
        self._last_event = 0.0
        self._dirty = False
        self._version: str | None = _version(self.pkg)
        self._recorded_failure: tuple[Any, ...] | None = None
        self._observer: Any = None
        self._pkg_watch: Any = None
        self._pkg_ino: int | None = None

    # ---- watching ------------------------------------------------------------------------------------------------
    def _touch(self, *_a: Any) -> None:
        with self._lock:
            self._dirty = True
            self._last_event = time.monotonic()

    def _watch(self) -> None:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        guard = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                if event.event_type in ("opened", "closed", "closed_no_write"):
                    return
                guard._touch()

        self._handler = Handler()
        self._observer = Observer()
        self._observer.schedule(self._handler, str(self.pkg.parent), recursive=False)
        self._observer.start()
        self._rewatch_pkg()

    def _rewatch_pkg(self) -> None:
        """(Re)watch the package directory; npm replaces it on an update, and a watch dies with its directory."""
        try:
            ino = self.pkg.stat().st_ino
        except OSError:
            ino = None
        if ino == self._pkg_ino and self._pkg_watch is not None:
            return
        if self._pkg_watch is not None:
            try:
                self._observer.unschedule(self._pkg_watch)
            except (KeyError, ValueError, OSError):
                pass
            self._pkg_watch = None
        self._pkg_ino = ino
        if ino is not None:
            try:
                self._pkg_watch = self._observer.schedule(self._handler, str(self.pkg), recursive=True)
            except OSError:
                self._pkg_watch = None

    # ---- acting --------------------------------------------------------------------------------------------------
    def check(self, initial: bool = False) -> dict[str, Any] | None:
        """Run ensure once; record the outcome. Returns what was recorded (or the quiet outcome), None if deferred."""
        old = self._version
        new = _version(self.pkg)
        try:
            rep = ensure(self.pkg)
        except PatchError as e:
            rep = {**e.report, "ok": False}
            if not initial and self._wait_quiet():
                return None  # the tree is still changing: not a failure yet
            if self._recorded_failure == fingerprint(self.pkg):
                return {"event": "patch:failed", "repeat": True, "report": _compact(rep)}
            self._recorded_failure = fingerprint(self.pkg)
            out = {"old_version": old, "new_version": new, "openclaw_dir": str(self.pkg), "report": _compact(rep)}
            ev = self._record("patch:failed", out)
            self._version = new
            self.emit({"event": "patch:failed", **out, "id": ev.get("id")})
            return ev
        self._recorded_failure = None
        self._version = new
        if not rep.get("changed"):
            res = {"event": None, "result": rep["result"], "openclaw_version": new}
            self.emit(res)
            return res
        out = {"old_version": old, "new_version": new, "openclaw_dir": str(self.pkg), "report": _compact(rep)}
        ev = self._record("patch:reapplied", out)
        self.emit({"event": "patch:reapplied", **out, "id": ev.get("id")})
        if self.then:
            r = subprocess.run(shlex.split(self.then), capture_output=True, text=True)
            self.emit({"event": None, "then": self.then, "exit": r.returncode})
        return ev

    def _record(self, kind: str, fields: dict[str, Any]) -> dict[str, Any]:
        try:
            return record(self.root, kind, **fields)
        except (EventlogError, OSError) as e:  # keep guarding; say loudly that the log missed it
            self.emit({"event": kind, "record_error": str(e)})
            return {"event": kind, **fields, "recorded": False}

    def _wait_quiet(self) -> bool:
        """Wait `settle` seconds; True if the tree changed meanwhile (then the main loop checks again)."""
        with self._lock:
            start_mark = self._last_event
        deadline = time.monotonic() + self.settle
        while time.monotonic() < deadline and not self.stop_event.is_set():
            time.sleep(0.2)
        with self._lock:
            return self._last_event != start_mark

    def run(self, once: bool = False) -> None:
        self.check(initial=True)
        if once:
            return
        self._watch()
        last_fp = fingerprint(self.pkg)
        next_poll = time.monotonic() + self.interval
        try:
            while not self.stop_event.wait(0.25):
                now = time.monotonic()
                with self._lock:
                    due = self._dirty and now - self._last_event >= self.settle
                    if due:
                        self._dirty = False
                if now >= next_poll:
                    next_poll = now + self.interval
                    fp = fingerprint(self.pkg)
                    due = due or fp != last_fp
                if due:
                    self._rewatch_pkg()
                    self.check()
                    last_fp = fingerprint(self.pkg)
                    self._rewatch_pkg()
        finally:
            if self._observer is not None:
                self._observer.stop()
                self._observer.join(timeout=5)

    def stop(self, *_a: Any) -> None:
        self.stop_event.set()

