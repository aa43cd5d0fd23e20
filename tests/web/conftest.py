"""Fixtures for the web page's tests (docs/web.md, docs/testing.md "Browser tests"): the log, a real `eventlog serve`
subprocess under strace, and headless Debian Chromium driven by Playwright, also under strace.

A missing Chromium or strace is a failure naming its make target, never a skip: `make test` installs both
(`make chromium`, `make strace`); `make test-fast` deselects the `browser` marker instead.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import pytest
from serve_support import CHROMIUM, STRACE, Server, Session, Traced, WebLog, build_log, net_report, traced_driver

ZONE = "Asia/Kathmandu"  # UTC+05:45: the group's 20:00Z messages fall on the next day there


@pytest.fixture(scope="module")
def web_log(tmp_path_factory: pytest.TempPathFactory) -> WebLog:
    root = tmp_path_factory.mktemp("web") / "root"
    root.mkdir(mode=0o700)
    return build_log(root)


@pytest.fixture(scope="module")
def server(web_log: WebLog, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server per module on its log, traced; at the end SIGTERM must stop it with exit 0, and it must have
    connected to nothing but loopback."""
    if shutil.which(STRACE) is None:
        pytest.fail("strace(1) not found: run `make strace`", pytrace=False)
    trace = tmp_path_factory.mktemp("serve-trace") / "serve.trace"
    with Server(web_log.root, "--tz", ZONE, trace=trace) as s:
        yield s
        rc = s.stop()
    assert rc == 0, f"eventlog serve exited {rc} on SIGTERM: {s.stderr()}"
    rep = net_report(trace)
    assert rep.outside == [] and rep.probes == [], f"eventlog serve reached non-loopback addresses: {rep}"


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traced]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: run `make chromium` (Debian's chromium and chromium-driver)",
                    pytrace=False)
    if shutil.which(STRACE) is None:
        pytest.fail("strace(1) not found: run `make strace`", pytrace=False)
    from playwright.sync_api import sync_playwright

    d = tmp_path_factory.mktemp("chromium")
    trace = d / "browser.trace"
    with pytest.MonkeyPatch.context() as mp:
        # Playwright's driver, and so the Chromium it starts, run under strace -f
        mp.setenv("PLAYWRIGHT_NODEJS_PATH", str(traced_driver(d, trace)))
        with sync_playwright() as p:
            # --no-sandbox: Debian's Chromium cannot start its sandbox as root, and the tests run as root in CI.
            # --host-resolver-rules: Chromium looks up accounts.google.com at start, whatever page it shows (seen in
            # the trace: DNS queries to the machine's resolver); with every name but localhost unresolvable no query
            # leaves, and the page, on 127.0.0.1, needs no name.
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=[
                "--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1"])
            traced = Traced(browser, trace)
            yield traced
            browser.close()
    rep = net_report(trace)
    assert rep.outside == [], f"Playwright's driver or Chromium reached non-loopback addresses: {rep.outside}"


@pytest.fixture
def tab(chromium: Traced, server: Server) -> Iterator[Session]:
    context = chromium.browser.new_context(viewport={"width": 1280, "height": 860})
    s = Session(context, server)
    yield s
    s.drain()
    context.close()
    elsewhere = [u for u in s.requests if not u.startswith(server.base + "/")]
    assert elsewhere == [], f"the page requested other origins: {elsewhere}"


@pytest.fixture
def screenshots(request: pytest.FixtureRequest, tmp_path: Path) -> Path | None:
    """Where the docs' screenshots go: `pytest --screenshots docs/img` (never by default, so `make test` leaves the
    tree clean); None otherwise."""
    opt = request.config.getoption("--screenshots")
    return Path(opt) if opt else None
