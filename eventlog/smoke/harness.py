"""Run the real OpenClaw gateway offline against the loopback fakes (eventlog.smoke.fake_telegram, .fake_llm).

One ``Gateway`` = one temp dir holding everything the gateway touches (HOME, state dir, config, its log file, the
event-log root), a fake Telegram, a fake LLM and the ``openclaw gateway`` process under Node 26. The process is started
with a preload (loopback_guard.cjs) that denies and records any network attempt that is not loopback.

    g = Gateway(tmp_dir).start()            # ~25–50 s on 2 cores: waits for the first getUpdates
    user = g.new_user()                     # a Telegram user id on the dmPolicy allowlist
    g.llm.script("Hello from the fake model")
    upd, reply = g.chat("hi", user_id=user) # DM in → the reply's sendMessage/editMessageText request
    g.stop()                                # SIGTERM, then SIGKILL after 15 s
    assert g.net_violations() == []

Node and OpenClaw come from ``$EVENTLOG_NODE`` / ``$EVENTLOG_OPENCLAW_DIR`` (the Makefile exports both), else the
``make node`` / ``make openclaw`` cache paths (eventlog.toolchain). ``clone_openclaw()`` makes a private, patchable copy of the installed
package (the shared cache must stay unpatched).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from eventlog import toolchain
from eventlog.smoke.fake_llm import MODEL_ID, FakeLLM
from eventlog.smoke.fake_telegram import DEFAULT_TOKEN, FakeTelegram, Request

GUARD = Path(__file__).with_name("loopback_guard.cjs")
# Lines in the gateway's output that mean a name lookup or connection reached past the guard.
_NET_TROUBLE = re.compile(r"getaddrinfo|ENOTFOUND|EAI_AGAIN")
# Hosts the unpatched pinned gateway asks for on its own; the guard refuses them (no packet leaves: the lookup fails
# inside the process) and OpenClaw carries on with its fallback. Listed so a NEW attempt — say, from the patch set —
# stands out as a violation while these stay visible in net_attempts().
KNOWN_DENIED = {
    "clawhub.ai": "hosted official-plugin catalog feed, fetched for plugin icons after the first agent run; "
                  "OpenClaw falls back to its bundled catalog",
}


class HarnessError(RuntimeError):
    """The gateway did not start / answer; the message carries the tail of its output and log."""


def default_node() -> Path:
    """$EVENTLOG_NODE, else the pinned Node of `make node`, else `node` on PATH (eventlog.toolchain)."""
    return toolchain.find_node() or toolchain.pinned_node()


def default_openclaw_dir() -> Path:
    return toolchain.dev_openclaw_dir()


def check_install(node: Path | None = None, openclaw_dir: Path | None = None) -> tuple[Path, Path]:
    """Both paths, or HarnessError saying which `make` target installs the missing one."""
    node = node or default_node()
    openclaw_dir = openclaw_dir or default_openclaw_dir()
    if not os.access(node, os.X_OK):
        raise HarnessError(f"Node 26 not found at {node}: run `make node` (or set EVENTLOG_NODE)")
    if not (openclaw_dir / "openclaw.mjs").is_file():
        raise HarnessError(f"openclaw not found at {openclaw_dir}: run `make openclaw` (or set EVENTLOG_OPENCLAW_DIR)")
    return node, openclaw_dir


def clone_openclaw(dest: Path, source: Path | None = None) -> Path:
    """A private copy of the installed ``openclaw`` package that can be patched without touching the shared cache.

    The package itself (~330 MB) is copied; its dependencies are symlinked from the source's ``node_modules``. Node
    resolves a module's imports from its real path, so the copy's files find their dependencies through the links
    and never load the cache's own ``openclaw``. Returns the new package root (pass it as ``openclaw_dir``).
    """
    source = (source or default_openclaw_dir()).resolve()
    modules = dest / "node_modules"
    modules.mkdir(parents=True, exist_ok=True)
    pkg = modules / "openclaw"
    shutil.copytree(source, pkg, symlinks=True)
    for entry in source.parent.iterdir():
        if entry.name in ("openclaw", ".bin", ".package-lock.json"):
            continue
        link = modules / entry.name
        if not link.exists():
            link.symlink_to(entry)
    return pkg


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = v
    return base


class Gateway:
    """One offline OpenClaw gateway with its own fakes and temp dir (see the module doc)."""

    def __init__(self, workdir: Path, *, node: Path | None = None, openclaw_dir: Path | None = None,
                 streaming: str | None = None, users: int = 20, extra_config: dict[str, Any] | None = None,
                 env: dict[str, str] | None = None, telegram: FakeTelegram | None = None,
                 llm: FakeLLM | None = None) -> None:
        self.workdir = Path(workdir)
        self.node, self.openclaw_dir = node, openclaw_dir
        self.streaming = streaming
        base = 500_000_000 + int(time.time()) % 100_000 * 1000  # positive ids, distinct between runs
        self.users = [base + i for i in range(users)]
        self._next_user = 0
        self.extra_config = extra_config or {}
        self.extra_env = env or {}
        self.telegram = telegram or FakeTelegram(token=DEFAULT_TOKEN)
        self.llm = llm or FakeLLM()
        self.home = self.workdir / "home"
        self.state_dir = self.workdir / "state"
        self.config_path = self.workdir / "openclaw.json"
        self.eventlog_root = self.workdir / "eventlog"
        self.log_file = self.workdir / "logs" / "openclaw.log"
        self.output_file = self.workdir / "gateway.out"
        self.net_log = self.workdir / "net-attempts.jsonl"
        self.port = 0
        self.gateway_token = secrets.token_hex(24)
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_seconds: float | None = None

    # ---- configuration -----------------------------------------------------------------------------------------
    def config_text(self) -> str:
        """The config file's text (a subclass may write JSON5, as a person does)."""
        return json.dumps(self.config(), indent=2)

    def config(self) -> dict[str, Any]:
        """The OpenClaw config this gateway runs with (openclaw-notes.md, "Running the real gateway offline")."""
        telegram: dict[str, Any] = {"enabled": True, "botToken": self.telegram.token, "apiRoot": self.telegram.url,
                                    "dmPolicy": "allowlist", "allowFrom": [str(u) for u in self.users]}
        if self.streaming:
            telegram["streaming"] = {"mode": self.streaming}
        cfg: dict[str, Any] = {
            "gateway": {"mode": "local", "port": self.port, "bind": "loopback",
                        "auth": {"mode": "token", "token": self.gateway_token}},
            "models": {"mode": "merge", "catalogRefresh": {"enabled": False},
                       "providers": {"fakellm": {
                           "baseUrl": self.llm.base_url, "apiKey": "x", "api": "openai-completions",
                           "models": [{"id": MODEL_ID, "name": "Fake", "reasoning": False, "input": ["text"],
                                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                                       "contextWindow": 128000, "maxTokens": 4096}]}}},
            "agents": {"defaults": {"model": {"primary": f"fakellm/{MODEL_ID}"}}},
            "bindings": [{"agentId": "main", "match": {"channel": "telegram", "accountId": "default"}}],
            "channels": {"telegram": telegram},
            "update": {"checkOnStart": False},
            "logging": {"file": str(self.log_file)},
        }
        return _merge(cfg, json.loads(json.dumps(self.extra_config)))

    def environment(self) -> dict[str, str]:
        """Everything points into the temp dir and the guard is preloaded. Only a few neutral variables are passed
        on: the caller's OpenClaw settings, provider API keys or proxies must not change what the gateway does."""
        keep = {k: v for k, v in os.environ.items()
                if k in ("PATH", "LANG", "TZ", "TERM", "USER", "LOGNAME", "SHELL") or k.startswith("LC_")}
        env = dict(keep, HOME=str(self.home), OPENCLAW_HOME=str(self.home), OPENCLAW_STATE_DIR=str(self.state_dir),
                   OPENCLAW_CONFIG_PATH=str(self.config_path), OPENCLAW_NO_AUTO_UPDATE="1",
                   EVENTLOG_ROOT=str(self.eventlog_root), EVENTLOG_E2E_NET_LOG=str(self.net_log),
                   NODE_OPTIONS=f'--require="{GUARD}"', TMPDIR=str(self.workdir / "tmp"), NO_COLOR="1")
        env["PATH"] = f"{self.node.parent}:{env.get('PATH', '')}" if self.node else env.get("PATH", "")
        env.update(self.extra_env)
        return env

    # ---- lifecycle -----------------------------------------------------------------------------------------------
    def start(self, timeout: float = 240.0) -> "Gateway":
        """Start fakes and gateway; return once the gateway polls Telegram (its first ``getUpdates``)."""
        self.node, self.openclaw_dir = check_install(self.node, self.openclaw_dir)
        for d in (self.home, self.state_dir, self.log_file.parent, self.workdir / "tmp"):
            d.mkdir(parents=True, exist_ok=True)
        if self.telegram._server is None:
            self.telegram.start()
        if self.llm._server is None:
            self.llm.start()
        self.port = free_port()
        self.config_path.write_text(self.config_text())
        mark = self.telegram.mark()
        out = open(self.output_file, "ab")
        t0 = time.monotonic()
        self.proc = subprocess.Popen([str(self.node), str(self.openclaw_dir / "openclaw.mjs"), "gateway",
                                      "--port", str(self.port)], cwd=self.workdir, env=self.environment(),
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        out.close()
        deadline = t0 + timeout
        while True:
            try:
                self.telegram.wait_for(method="getUpdates", since=mark, timeout=1.0)
                break
            except TimeoutError:
                pass
            if self.proc.poll() is not None:
                raise HarnessError(f"gateway exited with code {self.proc.returncode} before polling Telegram\n"
                                   + self.log_tail())
            if time.monotonic() > deadline:
                self.stop()
                raise HarnessError(f"gateway did not call getUpdates within {timeout:.0f}s\n" + self.log_tail())
        self.start_seconds = time.monotonic() - t0
        return self

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM the gateway (its whole process group), SIGKILL after ``timeout``; stop the fakes. → exit code."""
        code = self._terminate(timeout)
        self.telegram.stop()
        self.llm.stop()
        if os.environ.get("EVENTLOG_E2E_DUMP") == "1":
            self.dump_requests()
        return code

    def dump_requests(self) -> None:
        """Write what each fake received to telegram-requests.jsonl / llm-requests.jsonl in the workdir, for reading
        a run afterwards. Opt-in (stop() does it with EVENTLOG_E2E_DUMP=1): the scripted replies of a DLP test carry
        the planted secret, and the project writes no plaintext secret to disk unasked."""
        with open(self.workdir / "telegram-requests.jsonl", "w", encoding="utf-8") as f:
            for r in list(self.telegram.requests):
                f.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")
        with open(self.workdir / "llm-requests.jsonl", "w", encoding="utf-8") as f:
            for q in list(self.llm.requests):
                f.write(json.dumps(q.to_json(), ensure_ascii=False) + "\n")

    def restart(self, timeout: float = 240.0) -> "Gateway":
        """Stop only the gateway process and start it again on the same state dir and fakes."""
        self._terminate(15.0)
        return self.start(timeout)

    def _terminate(self, timeout: float) -> int | None:
        """SIGTERM to the gateway's process group; once the gateway has exited (seen without reaping it, so its pid
        and group id cannot be reused meanwhile), SIGKILL to whatever is left of its group; then reap."""
        proc = self.proc
        if proc is None:
            return None
        if proc.returncode is not None:
            return proc.returncode
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                break
            time.sleep(0.05)
        try:  # helpers it started (its spawn broker) must not outlive it; a gateway that hangs is killed too
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return proc.wait()

    def __enter__(self) -> "Gateway":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # ---- conversation helpers ------------------------------------------------------------------------------------
    def new_user(self) -> int:
        """A fresh allowlisted user id (its DM chat id is the same number): keeps tests' chats apart."""
        if self._next_user >= len(self.users):
            raise HarnessError(f"all {len(self.users)} allowlisted users used; pass users=N")
        u = self.users[self._next_user]
        self._next_user += 1
        return u

    def send_dm(self, text: str, user_id: int | None = None) -> dict[str, Any]:
        return self.telegram.send_dm(text, user_id=user_id or self.users[0])

    def wait_reply(self, chat_id: int, *, since: int = 0, contains: str | None = None,
                   methods: tuple[str, ...] = ("sendMessage", "editMessageText"), timeout: float = 120.0) -> Request:
        """The first content request to ``chat_id`` (containing ``contains``, if given) from index ``since``."""
        def match(r: Request) -> bool:
            body = r.body if isinstance(r.body, dict) else {}
            return (r.method in methods and str(body.get("chat_id")) == str(chat_id)
                    and (contains is None or contains in r.text()))
        try:
            return self.telegram.wait_for(match, since=since, timeout=timeout)
        except TimeoutError as exc:
            raise HarnessError(f"{exc}\nLLM requests: {len(self.llm.requests)}\n" + self.log_tail()) from None

    def chat(self, text: str, *, user_id: int | None = None, contains: str | None = None,
             timeout: float = 120.0) -> tuple[dict[str, Any], Request]:
        """Send a DM and wait for the reply request that carries ``contains`` (default: any content request)."""
        user_id = user_id or self.users[0]
        mark = self.telegram.mark()
        upd = self.send_dm(text, user_id)
        return upd, self.wait_reply(user_id, since=mark, contains=contains, timeout=timeout)

    # ---- diagnostics -----------------------------------------------------------------------------------------------
    def log_tail(self, lines: int = 40) -> str:
        parts = []
        for label, path in (("gateway stdout/stderr", self.output_file), ("openclaw log", self.log_file)):
            text = path.read_text(errors="replace") if path.exists() else "(missing)"
            tail = "\n".join(text.splitlines()[-lines:])
            parts.append(f"--- {label}: {path} (last {lines} lines) ---\n{tail}")
        return "\n".join(parts)

    def net_attempts(self) -> list[dict[str, Any]]:
        """Every non-loopback attempt the guard refused (kind, target, stack), known ones included."""
        if not self.net_log.exists():
            return []
        return [json.loads(ln) for ln in self.net_log.read_text().splitlines() if ln.strip()]

    def net_violations(self) -> list[str]:
        """Non-loopback network attempts that are not in KNOWN_DENIED, the fakes' stray requests, and resolver errors
        in the gateway's output (a lookup that got past the guard). Empty means the run stayed on 127.0.0.1."""
        found: list[str] = []
        for a in self.net_attempts():
            host = a["target"].split()[-1].rsplit(":", 1)[0] if a["kind"] == "connect" else a["target"].split()[-1]
            if host not in KNOWN_DENIED:
                found.append(f"{a['kind']} {a['target']} at {' < '.join(a.get('stack', [])[:4])}")
        found += [f"fake telegram: unexpected path {r['path']}" for r in self.telegram.foreign_requests]
        found += [f"fake telegram: call with a foreign token: {r.method}" for r in self.telegram.requests
                  if r.status == 401]
        for path in (self.output_file, self.log_file):
            if path.exists():
                found += [f"{path.name}: {ln.strip()[:300]}" for ln in path.read_text(errors="replace").splitlines()
                          if _NET_TROUBLE.search(ln) and not any(h in ln for h in KNOWN_DENIED)]
        return found


def main(argv: list[str] | None = None) -> int:
    """Smoke run: start an unpatched gateway in a temp dir, one DM, print timings and the reply, stop."""
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--openclaw-dir", type=Path, default=None)
    ap.add_argument("--streaming", default=None, help="e.g. partial")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = ap.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="openclaw-e2e-"))
    g = Gateway(workdir, openclaw_dir=args.openclaw_dir, streaming=args.streaming)
    try:
        g.start()
        print(f"gateway polling after {g.start_seconds:.1f}s (workdir {workdir})", flush=True)
        g.llm.script("Hello from the fake model.")
        t0 = time.monotonic()
        _, reply = g.chat("hi", contains="Hello from the fake model")
        print(f"reply after {time.monotonic() - t0:.1f}s: {reply.method} {reply.text()!r}")
        violations = g.net_violations()
        print("non-loopback attempts:", violations or "none")
        return 1 if violations else 0
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        g.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
