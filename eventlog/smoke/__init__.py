"""Smoke harness: the real OpenClaw gateway offline against loopback fakes (used by `eventlog patch rebase --verify`).

Runnable: `python -m eventlog.smoke.harness`, `python -m eventlog.smoke.fake_telegram`, `python -m eventlog.smoke.fake_llm`.
"""
