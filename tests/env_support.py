"""The environment the suite pins (a plain module, not conftest: `conftest` names collide between test folders)."""

# Kept: the variables naming the toolchain the Makefile installed and exported for the tests (Node 26 and the OpenClaw
# install, and the cache they live in). Every other variable with one of the prefixes is cleared.
KEEP = {"EVENTLOG_NODE", "EVENTLOG_OPENCLAW_DIR", "EVENTLOG_CACHE", "XDG_CACHE_HOME"}
PREFIXES = ("EVENTLOG_", "OPENCLAW_", "XDG_")
