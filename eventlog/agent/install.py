"""Install the recall plugin outside the openclaw package and register it in the gateway config, reversibly.

Where things go (docs/agent.md):
- the plugin files: `<data dir>/openclaw-plugin/eventlog-recall/` (`$EVENTLOG_DATA_DIR`, else
  `$XDG_DATA_HOME/openclaw-eventlog`, else `~/.local/share/openclaw-eventlog`) — ours, outside the openclaw package, so
  `openclaw update` leaves it alone (OpenClaw loads it through `plugins.load.paths`);
- per config file: a state record and the byte-exact backup under `<data dir>/agent/<key>/` (key = hash of the config's
  absolute path).

The config file: `--config`, else `$OPENCLAW_CONFIG_PATH`, else `$OPENCLAW_STATE_DIR/openclaw.json`, else
`~/.openclaw/openclaw.json`. OpenClaw reads it as JSON5; so does every function here (the `json5` package). A
strict-JSON file is rewritten in its own style; a JSON5 file (comments, trailing commas, unquoted keys) is edited in
place by json5edit, every byte of it kept — re-serialising would drop what makes it JSON5, and `openclaw config set`
strips its comments too (docs/agent.md). Where that edit cannot be made with certainty, install writes the plugin
files and returns the exact additions to make by hand (`hand_edits`). Uninstall writes the backup back when the file
is exactly what install left (byte for byte restore); when someone changed it since, only this plugin's entries are
removed and the backup is kept.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from ..config import data_dir
from ..errors import EventlogError
from ..store.fsutil import replace_file

PLUGIN_ID = "eventlog-recall"
TOOL_NAMES = ("eventlog_search", "eventlog_context")
PLUGIN_FILES = ("index.mjs", "openclaw.plugin.json", "package.json")
STATE_VERSION = 1


class AgentInstallError(EventlogError):
    """The config cannot be edited safely (JSON5, not an object, changed under us) or a file cannot be written."""


def resolve_config(config: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> tuple[Path, str]:
    """(absolute config path, where it came from)."""
    env = os.environ if env is None else env
    if config:
        return Path(config).expanduser().absolute(), "--config"
    if env.get("OPENCLAW_CONFIG_PATH"):
        return Path(env["OPENCLAW_CONFIG_PATH"]).expanduser().absolute(), "$OPENCLAW_CONFIG_PATH"
    if env.get("OPENCLAW_STATE_DIR"):
        return (Path(env["OPENCLAW_STATE_DIR"]).expanduser() / "openclaw.json").absolute(), "$OPENCLAW_STATE_DIR"
    return Path.home() / ".openclaw" / "openclaw.json", "default"


def plugin_dir(env: Mapping[str, str] | None = None) -> Path:
    return data_dir(env) / "openclaw-plugin" / PLUGIN_ID


def _state_dir(config_path: Path, env: Mapping[str, str] | None) -> Path:
    key = hashlib.sha256(str(config_path).encode()).hexdigest()[:16]
    return data_dir(env) / "agent" / key


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def packaged_plugin() -> dict[str, bytes]:
    """The plugin's files as shipped inside the Python package (works from a wheel)."""
    base = resources.files("eventlog.agent").joinpath("plugin")
    return {name: base.joinpath(name).read_bytes() for name in PLUGIN_FILES}


def _atomic_write(path: Path, data: bytes, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, data, "eventlog-tmp", mode)


# -- the config file -------------------------------------------------------------------------------------------------

def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AgentInstallError(f"cannot read {path}: {exc.strerror}") from None


def read_config(data: bytes, path: Path) -> tuple[dict[str, Any], bool]:
    """(the config object, whether it is strict JSON and so may be rewritten) — read as OpenClaw reads it, JSON5;
    AgentInstallError when it is not even that."""
    import json5

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise AgentInstallError(f"{path} is not UTF-8; not edited") from None
    if not text.strip():
        return {}, True
    strict = True
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        strict = False
        try:
            doc = json5.loads(text)
        except ValueError as exc:
            raise AgentInstallError(f"{path} is not valid JSON5 ({exc}); not edited") from None
    if not isinstance(doc, dict):
        raise AgentInstallError(f"{path}: the config is not a JSON object; not edited")
    return doc, strict


def parse_config(data: bytes, path: Path) -> dict[str, Any]:
    """A config this installer may rewrite (strict JSON), or AgentInstallError saying why it is not edited."""
    doc, strict = read_config(data, path)
    if not strict:
        raise AgentInstallError(f"{path} is JSON5 (comments, trailing commas or unquoted keys); rewriting it would "
                                "drop those, so it is not edited: make the changes `eventlog agent install` lists "
                                "by hand")
    return doc


def _style(text: str) -> tuple[int | None, bool, bool]:
    """(indent, ensure_ascii, trailing newline) of an existing file, so a rewrite looks like it."""
    indent: int | None = None
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and not line.startswith("\t"):
            indent = (len(line) - len(stripped)) or None
            break
    if "\n" not in text.strip():
        indent = None
    return indent, text.isascii(), text.endswith("\n")


def dump_config(doc: dict[str, Any], like: str) -> bytes:
    indent, ascii_only, newline = _style(like) if like.strip() else (2, True, True)
    out = json.dumps(doc, indent=indent, ensure_ascii=ascii_only)
    return (out + ("\n" if newline else "")).encode("utf-8")


def plugin_entry(command: list[str], options: dict[str, Any]) -> dict[str, Any]:
    cfg: dict[str, Any] = {"command": command}
    cfg.update({k: v for k, v in options.items() if v not in (None, [], "")})
    return {"enabled": True, "config": cfg}


def default_command() -> list[str]:
    """How the plugin starts this installation's eventlog: the interpreter it runs under (venv or wheel install).
    `-P` keeps the working directory off sys.path, so a directory named `eventlog` there (the log root under
    ~/.openclaw, say) cannot shadow the package."""
    return [sys.executable, "-P", "-m", "eventlog"]


def add_entries(doc: dict[str, Any], pdir: Path, entry: dict[str, Any]) -> dict[str, Any]:
    plugins = doc.setdefault("plugins", {})
    if not isinstance(plugins, dict):
        raise AgentInstallError("`plugins` in the config is not an object; not edited")
    load = plugins.setdefault("load", {})
    if not isinstance(load, dict):
        raise AgentInstallError("`plugins.load` in the config is not an object; not edited")
    paths = load.setdefault("paths", [])
    if not isinstance(paths, list):
        raise AgentInstallError("`plugins.load.paths` in the config is not a list; not edited")
    if str(pdir) not in paths:
        paths.append(str(pdir))
    entries = plugins.setdefault("entries", {})
    if not isinstance(entries, dict):
        raise AgentInstallError("`plugins.entries` in the config is not an object; not edited")
    entries[PLUGIN_ID] = entry
    # An exclusive allowlist would keep the plugin (and its tools) off: add it only where the operator keeps one.
    if isinstance(plugins.get("allow"), list) and PLUGIN_ID not in plugins["allow"]:
        plugins["allow"].append(PLUGIN_ID)
    tools = doc.get("tools")
    if isinstance(tools, dict) and isinstance(tools.get("allow"), list) and PLUGIN_ID not in tools["allow"]:
        tools["allow"].append(PLUGIN_ID)
    return doc


def remove_entries(doc: dict[str, Any], pdir: Path) -> dict[str, Any]:
    plugins = doc.get("plugins")
    if not isinstance(plugins, dict):
        return doc
    load = plugins.get("load")
    if isinstance(load, dict) and isinstance(load.get("paths"), list):
        load["paths"] = [p for p in load["paths"] if p != str(pdir)]
        if not load["paths"]:
            del load["paths"]
        if not load:
            del plugins["load"]
    entries = plugins.get("entries")
    if isinstance(entries, dict):
        entries.pop(PLUGIN_ID, None)
        if not entries:
            del plugins["entries"]
    if isinstance(plugins.get("allow"), list) and PLUGIN_ID in plugins["allow"]:
        plugins["allow"].remove(PLUGIN_ID)
    tools = doc.get("tools")
    if isinstance(tools, dict) and isinstance(tools.get("allow"), list) and PLUGIN_ID in tools["allow"]:
        tools["allow"].remove(PLUGIN_ID)
    if not plugins:
        del doc["plugins"]
    return doc


def registered(doc: dict[str, Any], pdir: Path) -> dict[str, bool]:
    plugins = p if isinstance(p := doc.get("plugins"), dict) else {}
    load = ld if isinstance(ld := plugins.get("load"), dict) else {}
    entries = e if isinstance(e := plugins.get("entries"), dict) else {}
    entry = entries.get(PLUGIN_ID)
    return {"load_path": str(pdir) in (load.get("paths") or []),
            "entry": isinstance(entry, dict),
            "enabled": isinstance(entry, dict) and entry.get("enabled") is not False,
            "denied": PLUGIN_ID in (plugins.get("deny") or [])}


# -- state -------------------------------------------------------------------------------------------------------------

def _load_state(sdir: Path) -> dict[str, Any] | None:
    p = sdir / "state.json"
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise AgentInstallError(f"install record {p} is unreadable ({exc}); remove it to start over") from None


def _save_state(sdir: Path, state: dict[str, Any]) -> None:
    _atomic_write(sdir / "state.json", (json.dumps(state, indent=2) + "\n").encode())


def _write_plugin(pdir: Path) -> bool:
    """Copy the packaged plugin into place; True when a file changed."""
    changed = False
    for name, data in packaged_plugin().items():
        target = pdir / name
        if _read(target) != data:
            _atomic_write(target, data, 0o644)
            changed = True
    return changed


# -- the commands ------------------------------------------------------------------------------------------------------

def install(config: str | os.PathLike[str] | None = None, *, options: dict[str, Any] | None = None,
            command: list[str] | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Copy the plugin, register it; idempotent (a second run with the same options changes nothing). A JSON5 config
    is edited in place, its comments and layout kept (json5edit; the result is re-read and must mean exactly the
    wanted config). When that cannot be done with certainty the file is left as it is: the plugin files are written
    all the same, and `hand_edits` lists what to add by hand, `edit_refused` why (empty once it has been done)."""
    from .json5edit import Json5EditError, hand_edits
    from .json5edit import apply as edit_json5

    path, source = resolve_config(config, env)
    pdir, sdir = plugin_dir(env), _state_dir(path, env)
    before = _read(path)
    doc, strict = read_config(before, path) if before is not None else ({}, True)
    entry = plugin_entry(command or default_command(), options or {})
    wanted = add_entries(json.loads(json.dumps(doc)), pdir, entry)
    if strict:
        new = dump_config(wanted, (before or b"").decode("utf-8"))
    else:
        assert before is not None  # a missing file is strict: install writes it as JSON
        edits = hand_edits(doc, wanted)
        try:
            new = edit_json5(before.decode("utf-8"), edits, wanted).encode("utf-8") if edits else before
        except Json5EditError as exc:
            return {"config": str(path), "config_source": source, "config_format": "json5", "plugin_dir": str(pdir),
                    "config_changed": False, "plugin_changed": _write_plugin(pdir), "backup": None, "entry": entry,
                    "hand_edits": edits, "edit_refused": str(exc)}
    state = _load_state(sdir)
    plugin_changed = _write_plugin(pdir)
    config_changed = new != before
    if state is None or state.get("after_sha256") != _sha(before):
        # First install on this file, or the file changed since our last write: this content is what to restore.
        backup = sdir / ("backup-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ") + ".json")
        if before is not None:
            _atomic_write(backup, before, 0o600)
        state = {"v": STATE_VERSION, "config": str(path), "plugin_dir": str(pdir), "created": before is None,
                 "backup": str(backup) if before is not None else None, "before_sha256": _sha(before)}
    if config_changed:
        mode = path.stat().st_mode & 0o7777 if before is not None else 0o600
        _atomic_write(path, new, mode)
    state["after_sha256"] = _sha(new)
    state["installed_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    _save_state(sdir, state)
    return {"config": str(path), "config_source": source, "config_format": "json" if strict else "json5",
            "plugin_dir": str(pdir), "config_changed": config_changed, "plugin_changed": plugin_changed,
            "backup": state.get("backup"), "entry": entry, "hand_edits": []}


def uninstall(config: str | os.PathLike[str] | None = None, *, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    path, source = resolve_config(config, env)
    pdir, sdir = plugin_dir(env), _state_dir(path, env)
    state = _load_state(sdir)
    current = _read(path)
    result: dict[str, Any] = {"config": str(path), "config_source": source, "plugin_dir": str(pdir)}
    # The backup is worth restoring only if install changed the file (it may have found the plugin registered by hand).
    if state is not None and current is not None and _sha(current) == state.get("after_sha256") \
            and state.get("before_sha256") != state.get("after_sha256"):
        if state.get("created"):
            path.unlink()
            result["action"] = "removed (install had created it)"
        else:
            backup = Path(state["backup"])
            data = _read(backup)
            if data is None or _sha(data) != state.get("before_sha256"):
                raise AgentInstallError(f"backup {backup} is missing or changed; config left as it is")
            _atomic_write(path, data, path.stat().st_mode & 0o7777)
            result["action"] = "restored byte for byte from the backup"
    elif current is not None:
        doc, strict = read_config(current, path)
        if not strict and any(registered(doc, pdir).values()):
            raise AgentInstallError(
                f"{path} is JSON5 and is not rewritten (its comments would go): remove by hand "
                f"\"{pdir}\" from plugins.load.paths and the key \"{PLUGIN_ID}\" from plugins.entries"
                f" (and from plugins.allow / tools.allow if listed there), then run `eventlog agent uninstall` again")
        if any(registered(doc, pdir).values()):
            _atomic_write(path, dump_config(remove_entries(doc, pdir), current.decode("utf-8")),
                          path.stat().st_mode & 0o7777)
            result["action"] = ("changed since install: removed only this plugin's entries"
                                + (f"; the original is kept at {state.get('backup')}" if state else ""))
        else:
            result["action"] = "not registered; config unchanged"
    else:
        result["action"] = "no config file; nothing to do"
    if state is not None:
        if state.get("backup") and result["action"].startswith("restored"):
            Path(state["backup"]).unlink(missing_ok=True)
        (sdir / "state.json").unlink(missing_ok=True)
        try:
            sdir.rmdir()
        except OSError:
            pass  # a kept backup stays
    # The plugin copy is shared by every config installed from this data dir: remove it with the last one.
    others = [p for p in (data_dir(env) / "agent").glob("*/state.json")] if (data_dir(env) / "agent").is_dir() else []
    if not others and pdir.is_dir():
        shutil.rmtree(pdir)
        result["plugin_removed"] = True
    return result


def agent_status(config: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Everything `eventlog doctor` needs to judge the recall plugin; never raises for a broken setup, reports it.

    Keys: config, config_source, config_exists, config_format ("json" | "json5" | None), config_error,
    registered {load_path, entry, enabled, denied}, plugin_dir, plugin_files ("ok" | "missing" | "outdated"), command,
    command_ok, installed_by_eventlog, changed_since_install, backup, ok, problems [str]."""
    path, source = resolve_config(config, env)
    pdir, sdir = plugin_dir(env), _state_dir(path, env)
    out: dict[str, Any] = {"config": str(path), "config_source": source, "plugin_dir": str(pdir), "problems": []}
    data = _read(path)
    out["config_exists"] = data is not None
    doc: dict[str, Any] = {}
    out["config_error"] = None
    out["config_format"] = None
    if data is not None:
        try:
            doc, strict = read_config(data, path)
            out["config_format"] = "json" if strict else "json5"
        except AgentInstallError as exc:
            out["config_error"] = str(exc)
    out["registered"] = registered(doc, pdir)
    shipped = packaged_plugin()
    present = {n: _read(pdir / n) for n in PLUGIN_FILES}
    out["plugin_files"] = ("missing" if any(v is None for v in present.values())
                           else "ok" if present == shipped else "outdated")
    entry = ((doc.get("plugins") or {}).get("entries") or {}).get(PLUGIN_ID) if isinstance(doc.get("plugins"), dict) \
        else None
    command = ((entry or {}).get("config") or {}).get("command") if isinstance(entry, dict) else None
    out["command"] = command
    out["command_ok"] = bool(isinstance(command, list) and command and shutil.which(str(command[0])))
    try:
        state = _load_state(sdir)
    except AgentInstallError as exc:
        state = None
        out["problems"].append(str(exc))
    out["installed_by_eventlog"] = state is not None
    out["changed_since_install"] = bool(state and _sha(data) != state.get("after_sha256"))
    out["backup"] = state.get("backup") if state else None
    reg = out["registered"]
    if out["config_error"]:
        out["problems"].append(out["config_error"])
    if not (reg["load_path"] and reg["entry"]):
        out["problems"].append("the plugin is not registered in the config (run `eventlog agent install`)")
    elif not reg["enabled"] or reg["denied"]:
        out["problems"].append("the plugin is registered but disabled or denied in the config")
    if out["plugin_files"] != "ok":
        out["problems"].append(f"plugin files {out['plugin_files']} at {pdir} (run `eventlog agent install`)")
    if reg["entry"] and not out["command_ok"]:
        out["problems"].append(f"the plugin's command {command!r} cannot be run (reinstall from this environment)")
    out["ok"] = not out["problems"]
    return out
