"""Helpers for the DLP tests: locate Node 26, run the JS engine driver over JSON Lines."""
from __future__ import annotations

import binascii
import json
import os
import secrets
import string
import shutil
import subprocess
from pathlib import Path

from eventlog import toolchain
from eventlog.patchset.paths import PATCH_DIR

REPO = Path(__file__).resolve().parent.parent
# Data built from other projects' fixtures is never in the repository: it lives beside it, in ../shared/data/ (on every
# machine and in CI), read-only.
SHARED_DLP = REPO.parent / "shared" / "data" / "dlp-external"
DRIVER = PATCH_DIR / "runtime" / "dlp-driver.mjs"
NODE_26 = toolchain.pinned_node()


def node_bin() -> str:
    """Node ≥ 24 (the Makefile exports EVENTLOG_NODE). Missing Node is a failure, not a skip: `make node` installs it."""
    for cand in (os.environ.get("EVENTLOG_NODE"), str(NODE_26), shutil.which("node")):
        if cand and Path(cand).exists():
            out = subprocess.run([cand, "--version"], capture_output=True, text=True).stdout.strip()
            if out.startswith("v") and int(out[1:].split(".")[0]) >= 24:
                return cand
    raise AssertionError("Node >= 24 not found: run `make node` (or set EVENTLOG_NODE)")


def run_driver(items: list[dict], key_hex: str, *extra: str, timeout: float = 600) -> list[dict]:
    data = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
    p = subprocess.run([node_bin(), str(DRIVER), "--key-hex", key_hex, *extra], input=data.encode(),
                       capture_output=True, timeout=timeout)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    return [json.loads(line) for line in p.stdout.decode().splitlines()]


def candidates_without_prefilter_total(rules, key: bytes, texts: list[str]) -> int:
    """Assert that Scanner.candidates (keyword prefilter + keyword-anchored search) finds exactly what a reference
    scanner finds that tries every rule at every position (the same rules with no anchor and, as keywords, every
    character of the texts); returns how many candidates there were, for the caller's lower bound."""
    from dataclasses import replace

    from eventlog.dlp.engine import Scanner
    from eventlog.dlp.rules import RuleSet

    chars = sorted({c for t in texts for c in t.lower()})
    ref_rules = RuleSet(rules.version, [replace(r, keywords=chars, anchor=None) for r in rules.rules], rules.source,
                        rules.examples)
    sc, ref = Scanner(rules, key), Scanner(ref_rules, key)
    total = 0
    for t in texts:
        want = ref.candidates(t)
        assert sorted(sc.candidates(t)) == sorted(want), t
        total += len(want)
    return total


def external_messages(name: str = "messages.jsonl") -> list[dict]:
    """The external evaluation corpus from ../shared/data/dlp-external/. Missing is a failure naming the file, never a
    skip: the evaluation is part of the test suite (docs/dlp.md, "External evaluation", says how to build it)."""
    path = SHARED_DLP / name
    if not path.is_file():
        raise AssertionError(f"external DLP corpus missing: {path} (expected beside the repository in "
                             "../shared/data/dlp-external/; build it with tools/dlp_external_corpus.py --out DIR)")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def github_token() -> str:
    """A fresh ghp_ token in GitHub's published format (30 random base62 characters, CRC32 of them base62 in 6)."""
    body = "".join(secrets.choice(B62) for _ in range(30))
    n, tail = binascii.crc32(body.encode()), ""
    while n:
        n, d = divmod(n, 62)
        tail = B62[d] + tail
    return "ghp_" + body + tail.rjust(6, "0")
