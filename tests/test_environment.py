"""The pin of tests/conftest.py reaches what runs before the per-test fixture: a module fixture sees TZ=UTC and no
product variable, whatever the caller's environment (CI runs the fast half once under TZ=Asia/Kathmandu)."""
from __future__ import annotations

import os
import time

import pytest

from env_support import KEEP, PREFIXES


@pytest.fixture(scope="module")
def module_environment() -> tuple[str | None, str, list[str]]:
    return (os.environ.get("TZ"), time.strftime("%z", time.localtime(0)),
            [n for n in os.environ if n.startswith(PREFIXES) and n not in KEEP])


def test_module_fixtures_run_in_the_pinned_environment(module_environment) -> None:
    assert module_environment == ("UTC", "+0000", [])
