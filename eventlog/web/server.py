"""`eventlog serve`'s server: bind the socket, print the one URL line, run uvicorn, stop cleanly.

The socket is bound and listening before the line is printed, so a client that reads the line can connect at once
(the kernel queues connections until uvicorn accepts them); `--port 0` is a free port, read back from the socket.
uvicorn handles SIGINT/SIGTERM by finishing open requests and stopping, and then raises the signal again so the
process dies of it; `eventlog serve` stops on purpose there, so that re-raise is dropped and the command exits 0.
Handlers of its own, set before the line is printed, cover a signal that comes before uvicorn's are in place or
after they are gone.
"""
from __future__ import annotations

import contextlib
import ipaddress
import signal
import socket
import sys
import threading
from typing import IO, Any, Iterator

from ..errors import EventlogError

DEFAULT_BIND = "127.0.0.1"
DEFAULT_PORT = 8765


class BindRefused(EventlogError):
    """A non-loopback --bind without --allow-remote, or an address that cannot be bound."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int, allow_remote: bool = False) -> socket.socket:
    """A listening TCP socket on host:port (IPv4 or IPv6); anything but loopback needs allow_remote."""
    if not is_loopback(host) and not allow_remote:
        raise BindRefused(f"--bind {host}: not a loopback address; the page shows your whole log to whoever has the "
                          "token, over plain HTTP — add --allow-remote to bind it anyway")
    if not 0 <= port <= 65535:
        raise BindRefused(f"--port {port}: not a port number")
    addr = "127.0.0.1" if host == "localhost" else host.strip("[]")
    try:
        infos = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE | socket.AI_NUMERICHOST)
    except socket.gaierror:
        raise BindRefused(f"--bind {host}: not an IP address (give 127.0.0.1, ::1, or an address of this machine)") \
            from None
    family, _, _, _, sockaddr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(sockaddr)
    except OSError as exc:
        sock.close()
        raise BindRefused(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, token: str) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def serve(app: Any, sock: socket.socket, token: str, out: IO[str] = sys.stdout) -> None:
    """Print the URL line (flushed: a pipe reader sees it at once) and serve until SIGINT/SIGTERM."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                try:
                    yield
                finally:
                    self._captured_signals.clear()  # stopped on purpose: no re-raise (exit 0)

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False,
                            timeout_graceful_shutdown=5)
    server = Server(config)

    def stop(signum: int, frame: Any) -> None:
        server.should_exit = True  # what uvicorn's own handler does; ours covers before it starts and after it ends

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, stop)
    print(url_of(sock, token), file=out, flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()

