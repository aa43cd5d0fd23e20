"""Benchmark plumbing: each case runs in a fresh process; wall time and its peak RSS (ru_maxrss from wait4)."""
from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def compile_bytecode(tree: Path = REPO / "eventlog") -> None:
    """Write the package's bytecode, as an installed package has it. With PYTHONDONTWRITEBYTECODE set (it is in some
    environments) and no __pycache__, every measured command would compile each module it imports from source again
    (measured: ≈ 20 ms of the 230 ms CPU of a whole-log `eventlog grep --count-total` on 25,000 day files)."""
    import sys

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})


def run_measured(cmd: list[str], stdin_path: str | None = None, env: dict | None = None,
                 cwd: Path = REPO, ok_codes: tuple[int, ...] = (0, 1)) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stdout) of one child process."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    # ru_maxrss of a forked child starts from this process's high-water mark (it survives exec), so peak RSS comes from
    # GNU time's %M when it is installed; wait4's figure is the fallback (an upper bound).
    gnu_time = Path("/usr/bin/time")
    rss_file = tempfile.NamedTemporaryFile(prefix="rss-", delete=False) if gnu_time.exists() else None
    if rss_file:
        cmd = [str(gnu_time), "-f", "%M", "-o", rss_file.name, *cmd]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                         env={**os.environ, **(env or {})})
    bufs: dict[str, bytes] = {}

    def drain(name: str, stream) -> None:
        bufs[name] = stream.read()

    threads = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", p.stdout), ("err", p.stderr))]
    for t in threads:
        t.start()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    for t in threads:
        t.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    if stdin_path:
        stdin.close()
    if p.returncode not in ok_codes:
        raise RuntimeError(f"{' '.join(map(str, cmd[:4]))} failed ({p.returncode}): {bufs['err'].decode()[-800:]}")
    rss = usage.ru_maxrss / 1024
    if rss_file:
        try:
            rss = int(Path(rss_file.name).read_text().split()[-1]) / 1024
        except (ValueError, IndexError):
            pass
        os.unlink(rss_file.name)
    return wall, rss, bufs["out"].decode()


def median_of(fn, repeat: int = 3) -> tuple[float, float, str]:
    """Median wall over `repeat` runs of fn() → (median wall, max peak RSS MB, last stdout)."""
    walls, rss, out = [], [], ""
    for _ in range(repeat):
        w, r, out = fn()
        walls.append(w)
        rss.append(r)
    return statistics.median(walls), max(rss), out


def table(rows: list[dict], cols: list[str]) -> str:
    widths = [max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(str(r.get(c, "")).ljust(w) for c, w in zip(cols, widths, strict=True)) for r in rows]
    return "\n".join(lines)
