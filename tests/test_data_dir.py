"""The one data-dir rule (eventlog/config.py `data_dir`): every part that writes outside the root uses it."""
from __future__ import annotations

from pathlib import Path

from eventlog import config
from eventlog.agent import install
from eventlog.lake import extensions
from eventlog.patchset import matrix, paths


def test_every_part_uses_the_one_rule() -> None:
    assert paths.data_dir is config.data_dir
    assert matrix.data_dir is config.data_dir
    assert install.data_dir is config.data_dir


def test_the_rule(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    assert config.data_dir({}) == home / ".local" / "share" / "openclaw-eventlog"
    assert config.data_dir({"XDG_DATA_HOME": "~/xdg"}) == home / "xdg" / "openclaw-eventlog"
    assert config.data_dir({"XDG_DATA_HOME": "/x", "EVENTLOG_DATA_DIR": "~/d"}) == home / "d"
    assert config.data_dir({"XDG_DATA_HOME": "", "EVENTLOG_DATA_DIR": ""}) == home / ".local" / "share" / \
        "openclaw-eventlog"


def test_the_lake_extensions_follow_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("EVENTLOG_DATA_DIR", str(tmp_path / "d"))
    assert extensions.extension_dir().is_relative_to(tmp_path / "d")
