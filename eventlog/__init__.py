"""openclaw-eventlog: an append-only, tamper-evident JSONL log of an OpenClaw agent's Telegram traffic."""
__version__ = "0.1.0"
