"""Fixtures for end-to-end tests on the real OpenClaw gateway (see docs/e2e.md).

The gateway needs 25–50 s to start and ~1.2 GB, so gateways are shared: ``gateway`` is one unpatched gateway for the
whole session; ``gateway_factory(**kwargs)`` starts more (patched copies, ``streaming="partial"`` …) and stops them all
at the end of the session. Each test takes its own user/chat with ``gateway.new_user()`` so tests never read each
other's traffic. A missing Node 26 / openclaw install is a test failure naming the make target, not a skip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from eventlog.smoke.harness import Gateway, HarnessError, check_install


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
