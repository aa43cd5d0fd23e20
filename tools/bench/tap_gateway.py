"""Reply latency of the patched vs the unpatched OpenClaw gateway, side by side in one run.

Both gateways run at the same time (same machine load) against their own loopback fakes; DMs alternate between
them. Latency = DM injected into the fake Telegram → the reply's sendMessage arrives there (includes polling, the
agent run and the fake model). Prints one JSON line per gateway (median, p90, max, ratio to unpatched, peak RSS of
the gateway process tree) and a table.

    python tools/bench/tap_gateway.py [--rounds 8]
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tools.bench.common import table  # noqa: E402
from eventlog.smoke.harness import Gateway, check_install, clone_openclaw  # noqa: E402


def tree_hwm_mb(pid: int) -> float:
    """Sum of VmHWM over the process and its descendants (the gateway spawns workers)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args(argv)
    _node, source = check_install()
    work = Path(tempfile.mkdtemp(prefix="tap-bench-gw-"))
    gws: dict[str, Gateway] = {}
    try:
        pkg = clone_openclaw(work / "patched-pkg", source)
        subprocess.run([sys.executable, "-m", "eventlog", "patch", "apply", "--openclaw", str(pkg)], check=True,
                       capture_output=True)
        gws["unpatched"] = Gateway(work / "unpatched", openclaw_dir=source)
        gws["patched"] = Gateway(work / "patched", openclaw_dir=pkg)
        for g in gws.values():
            g.start()
        lat: dict[str, list[float]] = {k: [] for k in gws}
        for r in range(args.rounds + 1):  # round 0 warms up (first reply is 14–28 s: caches, model catalog)
            for name, g in gws.items():
                user = g.new_user()
                marker = f"bench{secrets.token_hex(4)}"
                g.llm.script(f"Reply {marker} done.", when=marker)
                mark = g.telegram.mark()
                t0 = time.monotonic()
                g.send_dm(f"hi {marker}", user)
                g.wait_reply(user, since=mark, contains=f"Reply {marker}", timeout=240)
                if r:
                    lat[name].append(time.monotonic() - t0)
        rows = []
        base = statistics.median(lat["unpatched"])
        for name, g in gws.items():
            xs = sorted(lat[name])
            row = {"bench": "tap-reply-latency", "case": name, "n": len(xs),
                   "median_s": round(statistics.median(xs), 2), "p90_s": round(xs[int(0.9 * (len(xs) - 1))], 2),
                   "max_s": round(xs[-1], 2), "ratio_median": round(statistics.median(xs) / base, 2),
                   "peak_rss_mb": round(tree_hwm_mb(g.proc.pid)) if g.proc else None}
            rows.append(row)
            print(json.dumps(row), flush=True)
        print(table(rows, ["case", "n", "median_s", "p90_s", "max_s", "ratio_median", "peak_rss_mb"]))
        return 0
    finally:
        for g in gws.values():
            g.stop()
        if not os.environ.get("KEEP"):
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
