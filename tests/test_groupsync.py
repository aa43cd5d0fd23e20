"""Group commit (eventlog/store/groupsync.py): a failed fsync is raised only after every other one has returned, so
the caller never closes a descriptor another thread is still syncing (and could sync a reused one)."""
from __future__ import annotations

import os
import threading
import time

import pytest

from eventlog.store import groupsync


def test_the_first_error_is_raised_after_every_call_returned() -> None:
    failed = threading.Event()
    done: list[int] = []

    def call(item: int) -> None:
        if item == 0:
            failed.set()
            raise OSError(5, "EIO on the first file")
        failed.wait(5)
        time.sleep(0.2)  # still running when the first call has already failed
        done.append(item)

    with pytest.raises(OSError, match="EIO"):
        groupsync._each(call, [0, 1, 2])
    assert sorted(done) == [1, 2]


def test_fsync_many_syncs_every_descriptor_and_reports_a_bad_one(tmp_path) -> None:
    fds = [os.open(tmp_path / f"f{i}", os.O_CREAT | os.O_WRONLY) for i in range(3)]
    bad = os.open(tmp_path / "gone", os.O_CREAT | os.O_WRONLY)
    os.close(bad)
    try:
        groupsync.fsync_many(fds)
        with pytest.raises(OSError):
            groupsync.fsync_many([*fds, bad])
    finally:
        for fd in fds:
            os.close(fd)
