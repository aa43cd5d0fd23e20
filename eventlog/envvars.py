"""Every environment variable the package reads — Python and the JS runtime — in one registry.

The one place for this fact (design.md, convention 12): `eventlog path` prints the table with the current values,
`tools/gen_env_docs.py` renders docs/environment.md from it, and tests/test_envvars.py fails when code under eventlog/
names an `EVENTLOG_*`, `OPENCLAW_*` or `XDG_*` variable this module does not list.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class EnvVar:
    name: str
    what: str
    default: str
    readers: str  # the modules that read it (a `.mjs`/`.cjs` is read by Node: the tap, the plugin, the harness)
    audience: str = "operator"  # "operator" (a user sets it) or "development" (tests, the harness, debugging)


VARIABLES: tuple[EnvVar, ...] = (
    EnvVar("EVENTLOG_ROOT", "The log root (after `--root DIR`).", "`$OPENCLAW_STATE_DIR/eventlog`, else "
           "`~/.openclaw/eventlog`", "store/layout.py, runtime/writer.mjs (the tap)"),
    EnvVar("OPENCLAW_STATE_DIR", "OpenClaw's state directory: the log root is `<it>/eventlog` when `$EVENTLOG_ROOT` "
           "is unset; the gateway config is `<it>/openclaw.json`.", "`~/.openclaw`",
           "store/layout.py, runtime/writer.mjs, agent/install.py"),
    EnvVar("EVENTLOG_CONFIG", "The optional TOML config file.", "`<root>/config.toml`", "config.py"),
    EnvVar("EVENTLOG_RETENTION_DAYS", "Twin of the config key `retention_days` (`eventlog forget --retention`).",
           "the config file's value, else none", "config.py, cli/forget.py"),
    EnvVar("EVENTLOG_TZ", "The zone times are typed and shown in (after `--tz`); twin of the config key `tz`.",
           "the config file's `tz`, else the system zone (`$TZ`, else /etc/localtime, else UTC)",
           "recall/when.py, config.py"),
    EnvVar("EVENTLOG_DLP_RULES", "The DLP rule file, instead of the packaged `eventlog/dlp/rules.json`.",
           "the packaged rules.json", "runtime/dlp.mjs (the tap), agent/tool.py"),
    EnvVar("EVENTLOG_PREVIEW_RELEASE_MS", "Quiet period (ms) before the tap releases a held-back preview tail; "
           "`0` turns releasing off.", "`3000`", "runtime/tap-release.mjs"),
    EnvVar("EVENTLOG_FSYNC", "The tap's fsync policy: `always`, `batch` or `never`.", "`batch`",
           "runtime/tap.mjs"),
    EnvVar("EVENTLOG_WRITER_THREAD", "`1` runs the tap's log writer in its own worker thread (opt-in: less "
           "event-loop CPU per call, +16–74 MB RSS in a flood; docs/benchmark-results.md).",
           "unset (on the event loop)", "runtime/writer.mjs"),
    EnvVar("EVENTLOG_REVIEWER", "Who a DLP review is recorded as (after `--reviewer`).", "the login name",
           "dlp/alerts.py"),
    EnvVar("EVENTLOG_OPERATOR", "Who a `log:erased` event names as the operator.", "the login name",
           "ops/forget.py"),
    EnvVar("EVENTLOG_DATA_DIR", "Where files written outside the root go: rebased manifests and diffs, the agent "
           "plugin, the lake's DuckDB extensions (`duckdb-extensions/<version>`).",
           "`$XDG_DATA_HOME/openclaw-eventlog`", "config.py"),
    EnvVar("XDG_DATA_HOME", "Base of the data dir when `$EVENTLOG_DATA_DIR` is unset.", "`~/.local/share`",
           "config.py"),
    EnvVar("EVENTLOG_CACHE", "The cache: pinned Node, OpenClaw and acorn, release tarballs, wheels; the embedding "
           "model's derived tables (`model/`) and `eventlog sql`'s skipped-line counts (`sql-lines/`), both rebuilt "
           "when missing or damaged.",
           "`$XDG_CACHE_HOME/openclaw-eventlog`", "toolchain.py, search/modelcache.py, recall/linecounts.py"),
    EnvVar("XDG_CACHE_HOME", "Base of the cache when `$EVENTLOG_CACHE` is unset.", "`~/.cache`", "toolchain.py"),
    EnvVar("EVENTLOG_OPENCLAW_DIR", "The OpenClaw package to patch (after `--openclaw DIR`); for the tests, the "
           "unpatched copy they start from.", "the package behind `openclaw` on PATH, else `$(npm root -g)/openclaw`",
           "patchset/find.py, toolchain.py, smoke/harness.py"),
    EnvVar("EVENTLOG_NODE", "The Node executable.", "the pinned Node in the cache, else `node` on PATH",
           "toolchain.py, doctor.py, patchset/tree.py, smoke/harness.py"),
    EnvVar("EVENTLOG_PATCH_MANIFEST", "A patch manifest instead of the packaged one.",
           "`eventlog/patches/openclaw/manifest.json`", "patchset/manifest.py"),
    EnvVar("OPENCLAW_CONFIG_PATH", "The gateway config `eventlog agent install` edits (after `--config`).",
           "`$OPENCLAW_STATE_DIR/openclaw.json`, else `~/.openclaw/openclaw.json`", "agent/install.py"),
    EnvVar("EVENTLOG_EMBED_MODEL", "The embedding model of `eventlog search` / `index`: `use`; `e5` and `wl` (the "
           "`bench` extra) for the evaluation (docs/search.md).", "`use`",
           "search/embed.py"),
    EnvVar("EVENTLOG_KEEP_VERIFY", "Non-empty: `patch rebase --verify` keeps its work directory.", "unset",
           "patchset/verify.py", "development"),
    EnvVar("EVENTLOG_AGENT_CTX_DUMP", "A file the recall plugin appends each call's gateway context to (ids and "
           "flags, never text).", "unset", "agent/plugin/index.mjs", "development"),
    EnvVar("EVENTLOG_E2E_DUMP", "`1`: the e2e harness writes what each fake received to its workdir (opt-in: "
           "DLP tests' replies carry planted secrets).", "unset",
           "smoke/harness.py", "development"),
    EnvVar("EVENTLOG_E2E_NET_LOG", "The file the loopback guard records refused connections in (set by the "
           "harness).", "unset", "smoke/loopback_guard.cjs", "development"),
)

# Names of that shape in the code that are not read from the environment, and why (the test accepts only these).
NOT_VARIABLES: dict[str, str] = {
    "EVENTLOG_ERROR": "error code of the JS writer's errors (writer-format.mjs)",
    "EVENTLOG_BAD_EVENT": "error code of the JS writer's BadEvent",
    "EVENTLOG_DAMAGED": "error code of the JS writer's DamagedLog",
    "EVENTLOG_LOCK_TIMEOUT": "error code of the JS writer's LockTimeout",
    "EVENTLOG_WRITER_DEAD": "error code of the JS writer thread's WriterThreadDead",
    "OPENCLAW_VERSION": "a pin printed by `python -m eventlog.toolchain env` for the Makefile",
    "OPENCLAW_PREVIOUS": "a pin printed by `python -m eventlog.toolchain env`",
    "OPENCLAW_RELEASES": "a pin printed by `python -m eventlog.toolchain env`",
    "OPENCLAW_PREFIX": "a path printed by `python -m eventlog.toolchain env`",
    "OPENCLAW_DIR": "a path printed by `python -m eventlog.toolchain env`",
    "OPENCLAW_STAMP": "a path printed by `python -m eventlog.toolchain env`",
    "OPENCLAW_HOME": "set by the e2e harness for the gateway it starts (OpenClaw reads it)",
    "OPENCLAW_NO_AUTO_UPDATE": "set by the e2e harness for the gateway it starts (OpenClaw reads it)",
    "OPENCLAW_SYSTEMD_UNIT": "OpenClaw's own variable, named in `patch unit --unit`'s help",
}


def current(env: Mapping[str, str] | None = None) -> list[tuple[EnvVar, str | None]]:
    """Each variable with its value in `env` (default: the process environment), None when unset."""
    env = os.environ if env is None else env
    return [(v, env.get(v.name)) for v in VARIABLES]

