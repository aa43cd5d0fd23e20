"""Helpers for the web page's tests: a real `eventlog serve` subprocess, its listening sockets, plain HTTP without
redirects, the log the tests browse (built through the CLI), and the network trace of a traced process.

A plain module, not conftest (conftest names collide between test folders). docs/web.md is the contract these follow.
"""
from __future__ import annotations

import json
import os
import queue
import re
import secrets
import signal
import string
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
STRACE = "strace"
# The URL line of docs/web.md: loopback IPv4 or IPv6, a port, a 43-character url-safe token.
URL_LINE = re.compile(r"^http://(127\.\d+\.\d+\.\d+|\[::1\]):(\d+)/\?token=([A-Za-z0-9_-]{43})$")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
ALNUM = string.ascii_letters + string.digits

PRIVATE_CHAT = "42"
GROUP_CHAT = "-1001234567890"
XSS = ("<img src=x onerror=\"document.title='pwned';window.__xss=1\">"
       "<script>window.__xss=2;document.title='pwned'</script> look at this")


def fake_key() -> str:
    """An Anthropic-shaped key made at run time (no secret-looking literal is stored in the suite)."""
    return "sk-ant-api03-" + "".join(secrets.choice(ALNUM) for _ in range(93)) + "AA"


def fake_card() -> str:
    """A Visa-shaped number with a valid Luhn digit, made at run time."""
    while True:
        n = "4" + "".join(secrets.choice(string.digits) for _ in range(15))
        digits = [int(c) for c in reversed(n)]
        total = sum(d if i % 2 == 0 else (2 * d - 9 if d > 4 else 2 * d) for i, d in enumerate(digits))
        if total % 10 == 0:
            return n


def cli(*args: str, root: Path, input: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess (the installed entry point's module), as an operator runs it."""
    return subprocess.run([sys.executable, "-m", "eventlog", *args, "--root", str(root)], input=input,
                          capture_output=True, text=True, timeout=timeout)


def alerts(root: Path, *extra: str) -> list[dict[str, Any]]:
    r = cli("dlp", "alerts", "--json", *extra, root=root)
    assert r.returncode in (0, 1), r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def _update(update_id: int, chat: dict[str, Any], msg_id: int, ts_unix: int, sender: dict[str, Any],
            body: dict[str, Any], kind: str = "message") -> dict[str, Any]:
    return {"update_id": update_id, kind: {"message_id": msg_id, "from": sender, "chat": chat, "date": ts_unix, **body}}


@dataclass
class WebLog:
    root: Path
    key: str
    card: str
    # message_id → the text the log holds, for the assertions
    texts: dict[int, str] = field(default_factory=dict)


def build_log(root: Path) -> WebLog:
    """Two chats through `eventlog append` (a private chat and a supergroup with a negative id), then the alerts the
    re-scan raises (`eventlog dlp scan --log`): one on a fake Anthropic key in the private chat, one on a card number
    in the group. The group's messages are at 20:00Z, the next day in Asia/Kathmandu (UTC+05:45)."""
    key, card = fake_key(), fake_card()
    alice = {"id": 1001, "is_bot": False, "first_name": "Alice", "username": "alice"}
    bob = {"id": 1002, "is_bot": False, "first_name": "Bob", "username": "bob"}
    bot = {"id": 9000, "is_bot": True, "username": "eventlog_bot", "name": "Eventlog Bot"}
    pchat = {"id": 42, "type": "private", "username": "alice", "first_name": "Alice"}
    gchat = {"id": int(GROUP_CHAT), "type": "supergroup", "title": "Ops room"}
    base = 1796032800  # 2026-11-30T10:00:00Z
    texts = {1: "hi bot, the quarterly invoice is attached", 2: f"my key is {key} please store it",
             10: XSS, 11: f"card {card}, that's my visa", 12: "please do not paste html here"}

    def inbound(chat: dict[str, Any], sender: dict[str, Any], mid: int, ts: str, off: int, body: dict[str, Any],
                kind: str = "message") -> dict[str, Any]:
        ev = {"event": "message:received", "channel": "telegram", "chat_id": str(chat["id"]), "ts": ts,
              "direction": "in", "update_type": kind, "update_id": 5000 + mid + (100 if kind != "message" else 0),
              "message_id": mid, "from": {"id": sender["id"], "username": sender["username"],
                                          "name": sender["first_name"], "is_bot": False},
              "raw": _update(5000 + mid, chat, mid, base + off, sender, body, kind)}
        if "text" in body or "caption" in body:
            ev["text"] = body.get("text", body.get("caption"))
        return ev

    def sent(mid: int, ts: str, method: str, text: str) -> dict[str, Any]:
        payload: dict[str, Any] = {"chat_id": 42, "text": text}
        if method == "editMessageText":
            payload["message_id"] = mid
        # as the tap writes it (runtime/tap-core.mjs): the message id Telegram answered, also at the top level
        return {"event": "message:sent", "channel": "telegram", "chat_id": PRIVATE_CHAT, "ts": ts, "direction": "out",
                "method": method, "text": text, "payload": payload, "message_id": mid,
                "outcome": {"ok": True, "message_id": mid, "from": bot}}

    events = [
        inbound(pchat, alice, 1, "2026-11-30T10:00:00.000Z", 0, {"text": texts[1]}),
        inbound(pchat, alice, 2, "2026-11-30T10:00:05.000Z", 5, {"text": texts[2]}),
        sent(3, "2026-11-30T10:00:09.000Z", "sendMessage", "I will not store keys."),
        # a streamed reply: the send and two previews; the page folds them into one message with its final text
        sent(4, "2026-11-30T10:01:00.000Z", "sendMessage", "Here is the"),
        sent(4, "2026-11-30T10:01:01.000Z", "editMessageText", "Here is the summary"),
        sent(4, "2026-11-30T10:01:02.000Z", "editMessageText", "Here is the summary of the quarterly invoice."),
        inbound(gchat, bob, 10, "2026-11-30T20:00:00.000Z", 36000, {"text": texts[10]}),
        inbound(gchat, bob, 11, "2026-11-30T20:00:30.000Z", 36030, {"text": texts[11]}),
        inbound(gchat, alice, 12, "2026-11-30T20:01:00.000Z", 36060,
                {"text": texts[12], "reply_to_message": {"message_id": 10, "chat": gchat, "date": base + 36000}}),
        inbound(gchat, alice, 13, "2026-11-30T20:02:00.000Z", 36120,
                {"photo": [{"file_id": "AgAD1", "file_unique_id": "u1", "width": 90, "height": 60}],
                 "caption": "the whiteboard"}),
    ]
    r = cli("append", root=root, input="".join(json.dumps(e) + "\n" for e in events))
    assert r.returncode == 0, r.stderr
    r = cli("dlp", "scan", "--log", "--json", root=root)
    assert r.returncode == 0, r.stdout + r.stderr
    found = sorted(json.loads(line)["rule"] for line in r.stdout.splitlines())
    assert found == ["anthropic-api-key", "payment-card"], found
    return WebLog(root, key, card, texts)


class Server:
    """`eventlog serve --port 0` on a root, in a subprocess (optionally under strace, to see every address it
    connects to); `url` is the line it printed. Stop with `stop()`: SIGTERM, then its exit code."""

    def __init__(self, root: Path, *args: str, trace: Path | None = None, env: dict[str, str] | None = None):
        cmd = [sys.executable, "-m", "eventlog", "serve", "--root", str(root), "--port", "0", *args]
        if trace is not None:
            cmd = strace_prefix(trace) + cmd
        self.trace = trace
        self.stderr_path = Path(root).parent / f"serve-{secrets.token_hex(4)}.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr,
                                     env={**os.environ, **(env or {})})
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.line = self._first_line()
        m = URL_LINE.match(self.line)
        assert m, f"not the URL line of docs/web.md: {self.line!r}"
        self.host, self.port, self.token = m.group(1), int(m.group(2)), m.group(3)
        self.base = f"http://{self.host}:{self.port}"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def _first_line(self) -> str:
        try:
            line = self.lines.get(timeout=START_TIMEOUT)
        except queue.Empty:
            self.kill()
            raise AssertionError(f"eventlog serve printed no line in {START_TIMEOUT:.0f} s: {self.stderr()}") from None
        if line is None:
            rc = self.proc.wait(10)
            raise AssertionError(f"eventlog serve exited {rc} before its URL line: {self.stderr()}")
        return line

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")[-3000:]

    @property
    def pid(self) -> int:
        """The server's own pid (under strace, the traced child's)."""
        if self.trace is None:
            return self.proc.pid
        kids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        assert len(kids) == 1, kids
        return int(kids[0])

    def url(self, path: str, token: bool = True) -> str:
        if not token:
            return self.base + path
        return self.base + path + ("&" if "?" in path else "?") + "token=" + self.token

    def stop(self) -> int:
        """SIGTERM to the server; its exit code (under strace, strace exits with the tracee's code)."""
        if self.proc.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
        try:
            rc = self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"eventlog serve still running {STOP_TIMEOUT:.0f} s after SIGTERM") from None
        self._stderr.close()
        return rc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
        if not self._stderr.closed:
            self._stderr.close()


class Traced:
    """The browser and the file its strace writes (Playwright's driver and Chromium)."""

    def __init__(self, browser: Any, trace: Path):
        self.browser, self.trace = browser, trace

    def net(self) -> NetReport:
        return net_report(self.trace)


class Session:
    """One browser context on the server: every request it makes and every response body it receives are kept.

    A body can only be read until the page navigates away, so navigation goes through `goto` / `navigate`, which read
    the pending bodies first; `drain()` reads them at any other point (the test ends with one)."""

    def __init__(self, context: Any, server: Server):
        self.context, self.server = context, server
        self.page = context.new_page()
        self.requests: list[str] = []
        self.bodies: list[tuple[str, int, bytes]] = []
        self._pending: list[Any] = []
        context.on("request", lambda r: self.requests.append(r.url))
        context.on("response", lambda r: self._pending.append(r))

    def drain(self) -> None:
        while self._pending:
            r = self._pending.pop(0)
            failure = r.finished()
            assert failure is None, f"{r.url}: {failure}"
            assert not 300 <= r.status < 400, f"a redirect: {r.status} {r.url} → {r.headers.get('location')}"
            self.bodies.append((r.url, r.status, r.body()))

    def goto(self, path: str, token: bool = True) -> Any:
        self.drain()
        resp = self.page.goto(self.server.url(path, token=token))
        self.page.wait_for_load_state("networkidle")
        self.drain()
        return resp

    def navigate(self, locator: Any) -> None:
        """Click a link that navigates, and wait for the new page."""
        self.drain()
        with self.page.expect_navigation():
            locator.click()
        self.page.wait_for_load_state("networkidle")
        self.drain()


# ---- listening sockets, from /proc (no psutil) -------------------------------------------------------------------

def _hex_ip(h: str) -> str:
    """/proc/net/tcp{,6} addresses: IPv4 as one little-endian word, IPv6 as four of them."""
    b = bytes.fromhex(h)
    if len(b) == 4:
        return ".".join(str(x) for x in b[::-1])
    import ipaddress
    words = b"".join(b[i:i + 4][::-1] for i in range(0, 16, 4))
    return str(ipaddress.IPv6Address(words))


def listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state that the process holds open."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            cols = line.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state == "0A" and inode in inodes:  # 0A: TCP_LISTEN
                addr, port = local.split(":")
                found.append((_hex_ip(addr), int(port, 16)))
    return found


# ---- HTTP without a browser: nothing followed, every answer returned ---------------------------------------------

class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect, urllib.request.ProxyHandler({}))


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def http(method: str, url: str, headers: dict[str, str] | None = None, body: bytes | None = None) -> Answer:
    assert url.startswith(("http://127.", "http://[::1]")), url  # loopback only, whatever a test builds
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with _OPENER.open(req, timeout=60) as r:
            return Answer(r.status, {k.lower(): v for k, v in r.headers.items()}, r.read())
    except urllib.error.HTTPError as e:
        return Answer(e.code, {k.lower(): v for k, v in e.headers.items()}, e.read())


# ---- strace: every address a process tree connects or sends to ----------------------------------------------------

def strace_prefix(trace: Path) -> list[str]:
    # connect() covers TCP and the route a UDP socket takes; the send calls cover every datagram (DNS included). -yy
    # names each descriptor's socket type (TCP/UDP/UNIX…). Only these calls stop the process (seccomp-bpf), so it runs
    # at nearly full speed.
    return [STRACE, "-f", "-qq", "--seccomp-bpf", "-yy", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o",
            str(trace)]


_CALL = re.compile(r"^\d+\s+(connect|sendto|sendmsg|sendmmsg)\((\d+)(?:<([^>]*)>)?")
_INET = re.compile(r'sin_addr=inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"')
_PEER = re.compile(r"->\[?([0-9a-fA-F.:]+?)\]?:\d+\]")
_LOCAL = re.compile(r"^(?:UDP|UDPv6):\[\[?([0-9a-fA-F.:]+?)\]?:\d+\]$")


@dataclass
class NetReport:
    """What a traced process tree did on the network: `outside` lists every attempt that could put a packet on a
    non-loopback address (a TCP connect, a datagram sent); `probes` the UDP connects to such an address, which send
    nothing (Chromium's IPv6 reachability check connects a UDP socket to a public address only to learn the route);
    `loopback` counts the calls to loopback addresses (the trace works: a run that used the network has some)."""
    outside: list[str] = field(default_factory=list)
    probes: list[str] = field(default_factory=list)
    loopback: int = 0


def net_report(trace: Path) -> NetReport:
    rep = NetReport()
    for line in trace.read_text(errors="replace").splitlines():
        m = _CALL.match(line)
        if not m:
            continue
        call, sock = m.group(1), m.group(3) or ""
        kind = sock.split(":", 1)[0]
        if kind.startswith(("UNIX", "NETLINK")):
            continue
        addrs = [a or b for a, b in _INET.findall(line)]
        if not addrs and call != "connect":
            peer = _PEER.search(sock)
            local = _LOCAL.match(sock)
            if peer:
                addrs = [peer.group(1)]
            elif kind.startswith("TCP"):
                continue  # a send on a connected stream: its connect() was checked
            elif local and is_loopback(local.group(1)):
                addrs = [local.group(1)]
            else:  # a datagram to wherever the socket was connected: not provably loopback
                rep.outside.append(line[:300])
                continue
        for addr in addrs:
            if is_loopback(addr):
                rep.loopback += 1
            elif call == "connect" and kind.startswith("UDP"):
                rep.probes.append(line[:300])
            else:
                rep.outside.append(line[:300])
    return rep


def is_loopback(addr: str) -> bool:
    import ipaddress
    ip = ipaddress.ip_address(addr)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def traced_driver(directory: Path, trace: Path) -> Path:
    """A launcher for Playwright's own Node driver under `strace -f` (Playwright runs it from $PLAYWRIGHT_NODEJS_PATH):
    the trace then holds the driver and the Chromium it starts, every process of both."""
    import playwright

    node = Path(playwright.__file__).parent / "driver" / "node"
    assert node.is_file(), f"Playwright's wheel has no Node driver at {node}"
    path = directory / "node-traced"
    path.write_text("#!/bin/sh\nexec " + " ".join(strace_prefix(trace)) + f' {node} "$@"\n')
    path.chmod(0o755)
    return path


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR; AssertionError when it is not a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", data[:16]
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
