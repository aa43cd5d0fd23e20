"""`eventlog serve` as a process (docs/web.md, "Starting and stopping"): one URL line flushed into a pipe, a loopback
socket by default (read from /proc/net/tcp, no traffic to any other address), the token on real HTTP, a clean exit 0
on SIGTERM and on Ctrl-C, and a refused non-loopback --bind."""
from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from eventlog.cli.main import cli
from eventlog.web.server import BindRefused, bind, is_loopback
from web_support import make_log

URL = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{43})\n")


def _start(root: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "eventlog", "serve", "--root", str(root), "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": ""})


def _line(proc: subprocess.Popen, timeout: float = 60) -> str:
    """The first stdout line, read from the pipe as it comes (a block-buffered stdout would never deliver it)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "no URL line within the time"
    return proc.stdout.readline().decode()


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:  # noqa: S310 - loopback only, the server we started
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} writes them) of the sockets listening on `port`."""
    out = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for ln in lines:
            f = ln.split()
            addr, hexport = f[1].rsplit(":", 1)
            if int(hexport, 16) == port and f[3] == "0A":  # 0A: LISTEN
                out.append(addr)
    return out


@pytest.fixture(scope="module")
def logroot(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("serve") / "root"
    root.mkdir(mode=0o700)
    make_log(root)
    return root


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_prints_one_line_listens_on_loopback_and_stops_cleanly(logroot: Path, sig: signal.Signals) -> None:
    proc = _start(logroot)
    try:
        line = _line(proc)
        m = URL.fullmatch(line)
        assert m, line
        port, token = int(m[1]), m[2]
        assert _listening(port) == ["0100007F"]  # 127.0.0.1 only
        assert _get(f"http://127.0.0.1:{port}/")[0] == 401
        assert _get(f"http://127.0.0.1:{port}/?token=x{token[1:]}")[0] == 403
        status, body = _get(line.strip())
        assert status == 200 and "Ops team" in body
        status, body = _get(f"http://127.0.0.1:{port}/api/alerts", {"Authorization": f"Bearer {token}"})
        assert status == 200 and '"state":"open"' in body
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    assert out == b"" and b"Traceback" not in err  # the URL line was all of stdout


def test_a_signal_right_after_the_line_still_exits_0(logroot: Path) -> None:
    proc = _start(logroot)
    try:
        assert URL.fullmatch(_line(proc))
        proc.send_signal(signal.SIGTERM)  # maybe before uvicorn's handlers are in place: ours stop it the same way
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()


def test_each_start_has_its_own_token(logroot: Path) -> None:
    tokens = set()
    for _ in range(2):
        proc = _start(logroot)
        try:
            m = URL.fullmatch(_line(proc))
            assert m
            tokens.add(m[2])
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
    assert len(tokens) == 2


def _cli(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_a_non_loopback_bind_needs_allow_remote(logroot: Path) -> None:
    r = _cli("serve", "--root", str(logroot), "--bind", "0.0.0.0", "--port", "0")
    assert r.exit_code == 2 and "--allow-remote" in r.stderr and len(r.stderr.splitlines()) == 1
    r = _cli("serve", "--root", str(logroot), "--bind", "not-an-address", "--port", "0", "--allow-remote")
    assert r.exit_code == 2 and "not an IP address" in r.stderr
    r = _cli("serve", "--root", str(logroot / "missing"), "--port", "0")
    assert r.exit_code == 2 and "no log at" in r.stderr


def test_loopback_addresses() -> None:
    for host in ("127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "example.org", "127.0.0.1.example.org"):
        assert not is_loopback(host), host
    with pytest.raises(BindRefused):
        bind("0.0.0.0", 0)
    s = bind("localhost", 0)
    try:
        assert s.getsockname()[0] == "127.0.0.1"
        with pytest.raises(BindRefused, match="cannot listen"):
            bind("127.0.0.1", s.getsockname()[1])  # taken
    finally:
        s.close()


def test_an_ipv6_loopback_url_has_brackets() -> None:
    from eventlog.web.server import url_of

    try:
        s = bind("::1", 0)
    except BindRefused as exc:  # a machine without IPv6 on lo: nothing to check here
        pytest.skip(f"no IPv6 loopback: {exc}")
    try:
        port = s.getsockname()[1]
        assert url_of(s, "tok") == f"http://[::1]:{port}/?token=tok"
        assert _listening(port) == ["00000000000000000000000001000000"]  # ::1 as /proc/net/tcp6 writes it
    finally:
        s.close()
