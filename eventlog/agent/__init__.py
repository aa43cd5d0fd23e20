"""The agent's recall tool: an OpenClaw plugin (eventlog_search, eventlog_context) over the log, and its installer.

- `install.py`: `eventlog agent install|uninstall|status` — copy the plugin out of the package, register it in the
  gateway config with a backup, reverse it byte for byte; `agent_status()` for `eventlog doctor`.
- `tool.py`: what one tool call does (scope check, search or context, DLP redaction, size caps, the `recall:query`
  event); the plugin reaches it through `eventlog agent call` (one process per call) or `eventlog agent serve`.
- `search.py`: ranking a natural-language query over `eventlog.recall`; `context.py`: the events around one id.
- `plugin/`: the plugin's JavaScript and manifest, shipped as package data.
"""
from __future__ import annotations

from .install import agent_status

__all__ = ["agent_status"]
