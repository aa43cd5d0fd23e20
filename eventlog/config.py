"""The optional config file (design.md, "Config"): `$EVENTLOG_CONFIG`, else `<root>/config.toml`.

Every key has an environment twin that wins over the file. Keys this module knows:
- `retention_days` (int ≥ 1; `$EVENTLOG_RETENTION_DAYS`): `eventlog forget --retention` erases days older than this.
- `tz` (a zone name: `Europe/Moscow`, `UTC`, `+03:00`; `$EVENTLOG_TZ`, and `--tz` wins over both): the zone times are
  typed and shown in (eventlog/recall/when.py checks the name where it is used).
A key it does not know is listed in `Config.unknown` (the commands warn: a misspelt key must not pass silently).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .errors import EventlogError

KEYS: dict[str, str] = {"retention_days": "EVENTLOG_RETENTION_DAYS", "tz": "EVENTLOG_TZ"}


@dataclass
class Config:
    path: Path
    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # key → "$ENV" or the file path
    unknown: list[str] = field(default_factory=list)  # keys in the file that no module reads

    def get(self, key: str) -> Any:
        return self.values.get(key)


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The one data-dir rule — where files written outside the root go (rebased manifests and diffs, the agent plugin,
    the lake's DuckDB extensions): $EVENTLOG_DATA_DIR, else $XDG_DATA_HOME/openclaw-eventlog, else
    ~/.local/share/openclaw-eventlog (`~` expanded in both variables)."""
    env = os.environ if env is None else env
    if env.get("EVENTLOG_DATA_DIR"):
        return Path(env["EVENTLOG_DATA_DIR"]).expanduser()
    base = Path(env["XDG_DATA_HOME"]).expanduser() if env.get("XDG_DATA_HOME") else Path.home() / ".local" / "share"
    return base / "openclaw-eventlog"


def config_path(root: Path, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env["EVENTLOG_CONFIG"]).expanduser() if env.get("EVENTLOG_CONFIG") else root / "config.toml"


def _check(key: str, value: Any, where: str) -> Any:
    if key == "retention_days":
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise EventlogError(f"{where}: retention_days must be a whole number of days ≥ 1, not {value!r}")
    if key == "tz" and (not isinstance(value, str) or not value.strip()):
        raise EventlogError(f"{where}: tz must be a zone name (Europe/Moscow, UTC, +03:00), not {value!r}")
    return value


def load_config(root: Path, env: Mapping[str, str] | None = None) -> Config:
    """Read the config file (if any) and the environment twins. Never creates anything."""
    env = os.environ if env is None else env
    path = config_path(root, env)
    cfg = Config(path)
    data: dict[str, Any] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = None
    except UnicodeDecodeError as exc:
        raise EventlogError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:  # a directory, no permission: the config is unreadable, not absent
        raise EventlogError(f"{path}: cannot read the config file ({exc.strerror or exc})") from None
    if text is not None:
        import tomllib  # only when there is a file: every command reads the config, most logs have none

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise EventlogError(f"{path}: not valid TOML ({exc})") from None
    for key, var in KEYS.items():
        if env.get(var):
            cfg.values[key] = _check(key, env[var], f"${var}")
            cfg.sources[key] = f"${var}"
        elif key in data:
            cfg.values[key] = _check(key, data[key], str(path))
            cfg.sources[key] = str(path)
    cfg.unknown = sorted(k for k in data if k not in KEYS)
    return cfg
