"""Fixtures for end-to-end tests on the real OpenClaw gateway (see docs/e2e.md).

The gateway needs 25–50 s to start and ~1.2 GB, so gateways are shared: ``gateway`` is one unpatched gateway for the
whole session; ``gateway_factory(**kwargs)`` starts more (patched copies, ``streaming="partial"`` …) and stops them all
at the end of the session. Each test takes its own user/chat with ``gateway.new_user()`` so tests never read each
other's traffic. A missing Node 26 / openclaw install is a test failure naming the make target, not a skip.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from eventlog.smoke.harness import Gateway, HarnessError, check_install, clone_openclaw


@pytest.fixture(scope="session")
def openclaw_install() -> tuple[Path, Path]:
    """(node, openclaw package dir) of the unpatched install from `make node openclaw`."""
    try:
        return check_install()
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def gateway_factory(tmp_path_factory: pytest.TempPathFactory,
                    openclaw_install: tuple[Path, Path]) -> Iterator[Callable[..., Gateway]]:
    """``gateway_factory(name="x", **Gateway kwargs)`` → a started Gateway; all are stopped at session end, and each
    must have stayed on loopback (a violation fails the session's teardown with the list of attempts)."""
    started: list[Gateway] = []

    def make(name: str = "gw", **kwargs: Any) -> Gateway:
        g = Gateway(tmp_path_factory.mktemp(name), **kwargs)
        started.append(g)
        try:
            return g.start()
        except HarnessError as exc:
            pytest.fail(str(exc), pytrace=False)

    yield make
    problems = []
    for g in started:
        g.stop()
        problems += [f"{g.workdir}: {v}" for v in g.net_violations()]
    if problems:
        pytest.fail("non-loopback network attempts:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def gateway(gateway_factory: Callable[..., Gateway]) -> Gateway:
    """One unpatched gateway (default streaming) shared by the session."""
    return gateway_factory("baseline")


# A patched copy of the install and its gateways, per test module (test_tap.py and the test_tap_*.py that share them).
@pytest.fixture(scope="module")
def patched_dir(tmp_path_factory: pytest.TempPathFactory, openclaw_install: tuple[Path, Path]) -> Path:
    pkg = clone_openclaw(tmp_path_factory.mktemp("openclaw-patched"), openclaw_install[1])
    r = subprocess.run([sys.executable, "-m", "eventlog", "patch", "apply", "--openclaw", str(pkg), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return pkg


@pytest.fixture(scope="module")
def patched(gateway_factory: Callable[..., Gateway], patched_dir: Path) -> Gateway:
    return gateway_factory("patched", openclaw_dir=patched_dir)


@pytest.fixture(scope="module")
def patched_stream(gateway_factory: Callable[..., Gateway], patched_dir: Path) -> Gateway:
    return gateway_factory("patched-stream", openclaw_dir=patched_dir, streaming="partial")
