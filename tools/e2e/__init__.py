"""End-to-end harness: the real OpenClaw gateway against loopback fakes (see harness.py, docs/e2e.md)."""
