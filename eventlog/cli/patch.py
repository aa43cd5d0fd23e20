"""`eventlog patch …` — parse, call eventlog.patchset, render. No logic here.

Exit codes: apply/revert/ensure 0 done (or nothing to do), 2 refused (one line on stderr; with --json also the
report on stdout);
status 0 applied, 1 not applied, 2 partial; audit 0 clean, 1 not applied, 2 problems; guard runs until stopped.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import click
import orjson

from eventlog import patchset
from eventlog.patchset.find import find_openclaw
from eventlog.patchset.manifest import manifest_for

from .common import STDOUT, handle_errors, output_to
from .main import cli

openclaw_opt = click.option("--openclaw", "openclaw_dir", type=click.Path(file_okay=False, path_type=Path),
                            default=None, help="Installed openclaw package root (default: $EVENTLOG_OPENCLAW_DIR, "
                                               "else the package of `openclaw` on PATH, else `npm root -g`/openclaw).")
manifest_opt = click.option("--manifest", type=click.Path(dir_okay=False, path_type=Path), default=None,
                            help="Patch manifest (default: the one made for the installed release — a rebase in the "
                                 "data dir or a shipped one — else the pinned one).")
json_opt = click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON line.")
# accepted for uniformity with every other subcommand; the patch set does not touch the log
root_opt = click.option("--root", type=click.Path(file_okay=False), default=None, hidden=True)


def _emit(report: dict[str, Any], as_json: bool, human: Callable[[dict[str, Any]], str]) -> None:
    if as_json:
        click.echo(orjson.dumps(report).decode())
    else:
        click.echo(human(report))


def _run(fn: Callable[..., dict[str, Any]], openclaw_dir: Path | None, manifest: Path | None,
         need_pkg: bool = True, as_json: bool = False) -> dict[str, Any]:
    found = None
    try:
        if not need_pkg:
            return fn(None, patchset.load_manifest(manifest))
        found = find_openclaw(openclaw_dir)
        m = manifest_for(found.dir, manifest)
        return {**fn(found.dir, m), "found": found.to_json()}
    except patchset.PatchError as e:
        # fail closed: stderr gets one line; with --json the report (naming the missing/ambiguous anchor) on stdout
        if as_json:
            click.echo(orjson.dumps({**e.report, **({"found": found.to_json()} if found else {})}).decode())
        click.echo(f"eventlog patch: {e.message}", err=True)
        sys.exit(2)


def _changes(r: dict[str, Any]) -> str:
    return "\n".join(f"  {c['change']}: {c.get('state', '')} {' '.join(c.get('files') or c.get('targets') or [])}"
                     for c in r.get("changes", []))


@click.group("patch")
def patch() -> None:
    """Apply, revert, inspect and audit the OpenClaw patch set.

    \b
    Examples:
      eventlog patch apply
      eventlog patch status
      eventlog patch audit --json
    """


@patch.command("apply")
@openclaw_opt
@manifest_opt
@json_opt
@root_opt
def apply_cmd(openclaw_dir: Path | None, manifest: Path | None, as_json: bool, root: str | None) -> None:
    """Patch an installed OpenClaw (idempotent, all files or none; refuses on a missing/ambiguous anchor).

    \b
    Example:
      eventlog patch apply --openclaw "$(npm root -g)/openclaw"
    """
    r = _run(patchset.apply, openclaw_dir, manifest, as_json=as_json)
    _emit(r, as_json, lambda r: f"{r['result']} (openclaw {r['openclaw_version']}): " + ", ".join(r["changed"]))


@patch.command("revert")
@openclaw_opt
@manifest_opt
@json_opt
@root_opt
def revert_cmd(openclaw_dir: Path | None, manifest: Path | None, as_json: bool, root: str | None) -> None:
    """Restore every patched file byte for byte and remove the runtime.

    \b
    Example:
      eventlog patch revert --json
    """
    r = _run(patchset.revert, openclaw_dir, manifest, as_json=as_json)
    _emit(r, as_json, lambda r: f"{r['result']} (openclaw {r['openclaw_version']}): " + ", ".join(r["changed"]))


@patch.command("ensure")
@openclaw_opt
@manifest_opt
@json_opt
@root_opt
def ensure_cmd(openclaw_dir: Path | None, manifest: Path | None, as_json: bool, root: str | None) -> None:
    """Make sure the tap is applied and audits clean; the command to run before the gateway starts.

    Applies it if the installed release is known-good, rebases onto it if not (only when every change re-anchors).
    Exit 0 ok, 2 refused (JSON reason on stdout, tree unchanged).

    \b
    Example (a line of the gateway's systemd unit):
      ExecStartPre=/home/me/.local/bin/eventlog patch ensure --openclaw /usr/lib/node_modules/openclaw
    """
    from eventlog.patchset.ensure import ensure

    r = _run(lambda pkg, m: ensure(pkg, m if manifest else None), openclaw_dir, manifest, as_json=as_json)
    _emit(r, as_json, lambda r: f"{r['result']}: openclaw {r['openclaw_version']} at {r['openclaw_dir']} "
                                f"(found by {r['found']['how']})")


@patch.command("guard")
@openclaw_opt
@click.option("--root", "root", type=click.Path(file_okay=False), default=None,
              help="Log root for the patch:* events (default: $EVENTLOG_ROOT, $OPENCLAW_STATE_DIR/eventlog, "
                   "~/.openclaw/eventlog).")
@click.option("--settle", type=click.FloatRange(0.1), default=10.0, show_default=True,
              help="Seconds the package must be quiet before ensure runs (an npm install writes thousands of files).")
@click.option("--interval", type=click.FloatRange(1.0), default=60.0, show_default=True,
              help="Seconds between fingerprint checks that back up the file watcher.")
@click.option("--then", "then", default=None, metavar="CMD",
              help="Run CMD after the tap was re-applied, e.g. 'systemctl --user restart openclaw-gateway'.")
@click.option("--once", is_flag=True, help="Check once (ensure + record) and exit: 0 ok, 2 failed.")
def guard_cmd(openclaw_dir: Path | None, root: str | None, settle: float, interval: float, then: str | None,
              once: bool) -> None:
    """Watch the OpenClaw package; after an update, run ensure and log patch:reapplied / patch:failed.

    Prints one JSON line per outcome. Runs until SIGTERM / Ctrl-C.

    \b
    Example:
      eventlog patch guard --then 'systemctl --user restart openclaw-gateway'
    """
    import signal

    from eventlog.store.layout import resolve_root
    from eventlog.patchset.guard import Guard

    found = _run(lambda pkg, _m: {}, openclaw_dir, None)["found"]
    # JSON without --json, deliberately: the guard is a service and its stdout an outcome stream read by machines
    # (journald, a supervisor), as its help says; there is no human form to choose instead.
    g = Guard(Path(found["dir"]), resolve_root(root), settle=settle, interval=interval, then=then,
              emit=lambda r: click.echo(orjson.dumps(r).decode()))
    signal.signal(signal.SIGTERM, g.stop)
    signal.signal(signal.SIGINT, g.stop)
    click.echo(orjson.dumps({"event": None, "guard": "started", "found": found}).decode())
    try:
        g.run(once=once)
    except patchset.PatchError as e:
        click.echo(f"eventlog patch guard: {e.message}", err=True)
        sys.exit(2)
    except OSError as e:
        click.echo(f"eventlog patch guard: {e}", err=True)
        sys.exit(2)
    if once and g._recorded_failure is not None:
        sys.exit(2)


@patch.command("unit")
@openclaw_opt
@click.option("--wrapper", is_flag=True, help="Print a start script for non-systemd setups instead of a drop-in.")
@click.option("--unit", "unit", default="openclaw-gateway", show_default=True,
              help="The gateway's systemd user unit (OpenClaw's $OPENCLAW_SYSTEMD_UNIT).")
@click.option("--log-root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also set EVENTLOG_ROOT for the gateway in the drop-in.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write it to this file (default and `-`: stdout; the drop-in's place is printed on stderr).")
@root_opt
@handle_errors
def unit_cmd(openclaw_dir: Path | None, wrapper: bool, unit: str, log_root: Path | None, out: Path | None,
             root: str | None) -> None:
    """Print the systemd drop-in (ExecStartPre=eventlog patch ensure) or a wrapper script: fail-closed starts.

    \b
    Example:
      eventlog patch unit > ~/.config/systemd/user/openclaw-gateway.service.d/eventlog-ensure.conf
      systemctl --user daemon-reload && systemctl --user restart openclaw-gateway
    """
    from eventlog.patchset.service import dropin_path, systemd_dropin, wrapper_script

    found = _run(lambda _pkg, _m: {}, openclaw_dir, None)["found"]
    pkg = Path(found["dir"]).absolute()
    text = wrapper_script(pkg) if wrapper else systemd_dropin(pkg, root=log_root.absolute() if log_root else None)
    with output_to(out or STDOUT) as f:
        f.write(text.encode())
    if wrapper and out and str(out) != STDOUT and out.is_file():
        out.chmod(0o755)
    if not wrapper:
        click.echo(f"# drop-in location: {dropin_path(unit)}", err=True)


@patch.command("status")
@openclaw_opt
@manifest_opt
@json_opt
@root_opt
def status_cmd(openclaw_dir: Path | None, manifest: Path | None, as_json: bool, root: str | None) -> None:
    """applied / not-applied / partial, with OpenClaw and manifest versions. Exit 0 / 1 / 2.

    \b
    Example:
      eventlog patch status --json
    """
    r = _run(patchset.status, openclaw_dir, manifest, as_json=as_json)
    _emit(r, as_json, lambda r: f"{r['state']}: openclaw {r['openclaw_version']} at {r['openclaw_dir']}, "
                                f"manifest v{r['manifest_version']}\n  found by {r['found']['how']}: "
                                f"{r['found']['why']}\n" + _changes(r))
    sys.exit({"applied": 0, "not-applied": 1}.get(r["state"], 2))


@patch.command("audit")
@openclaw_opt
@manifest_opt
@json_opt
@root_opt
def audit_cmd(openclaw_dir: Path | None, manifest: Path | None, as_json: bool, root: str | None) -> None:
    """Check the installed tree matches the manifest exactly. Exit 0 clean, 1 not applied, 2 problems.

    \b
    Example:
      eventlog patch audit --json
    """
    r = _run(patchset.audit, openclaw_dir, manifest, as_json=as_json)
    _emit(r, as_json, lambda r: ("ok" if r["ok"] else r["state"] if not r["problems"] else "FAILED") + "".join(
        "\n  " + orjson.dumps(p).decode() for p in r["problems"]) + "".join(
        "\n  warning: " + orjson.dumps(w).decode() for w in r.get("warnings", [])))
    sys.exit(0 if r["ok"] else 1 if r["state"] == "not-applied" else 2)


@patch.command("diffs")
@openclaw_opt
@manifest_opt
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output directory (default: <data dir>/diffs/<version>/); `-`: every diff on stdout, one after "
                   "the other (one patch series, as `patch -p1` reads it).")
@root_opt
def diffs_cmd(openclaw_dir: Path | None, manifest: Path | None, out: Path | None, root: str | None) -> None:
    """Write the unified diffs of the patch set for a pristine OpenClaw tree.

    \b
    Example:
      eventlog patch diffs --out - | less
    """
    from eventlog.patchset.diffs import render_diffs, write_diffs

    if str(out) == STDOUT:
        texts = _run(lambda pkg, m: {"diffs": list(render_diffs(pkg, m).values())}, openclaw_dir, manifest)
        with output_to(STDOUT) as f:
            for text in texts["diffs"]:
                f.write(text.encode("utf-8", "surrogateescape"))
        return
    paths = _run(lambda pkg, m: {"paths": [str(p) for p in write_diffs(pkg, out, m)]}, openclaw_dir, manifest)
    for p in paths["paths"]:
        click.echo(p)


@patch.command("rebase")
@click.option("--to", "to", required=True, help="Release version (fetched with `npm pack` into the cache) or a directory.")
@manifest_opt
@click.option("--verify", is_flag=True, help="Run the e2e smoke on that release's real gateway.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write the manifest and diffs here (default: <data dir>/releases/<v>/, <data dir>/diffs/<v>/; "
                   "the data dir is $EVENTLOG_DATA_DIR, else ~/.local/share/openclaw-eventlog).")
@click.option("--dry-run", is_flag=True, help="Report only; write nothing.")
@json_opt
@root_opt
def rebase_cmd(to: str, manifest: Path | None, verify: bool, out: Path | None, dry_run: bool, as_json: bool,
               root: str | None) -> None:
    """Re-anchor the patch set onto another release; exit 0 only if every change applied (and verified).

    \b
    Example:
      eventlog patch rebase --to 2026.9.6 --dry-run
    """
    from eventlog.patchset.rebase import rebase

    if str(out) == STDOUT:
        raise click.BadParameter("a manifest and its diffs are several files: give a directory, not `-`",
                                 param_hint="'--out'")
    r = _run(lambda _pkg, m: rebase(to, m, out, write=not dry_run, verify=verify), None, manifest, need_pkg=False,
             as_json=as_json)
    _emit(r, as_json, _render_rebase)
    sys.exit(0 if r["ok"] and (r["verified"] or not verify) else 2)


def _render_rebase(r: dict[str, Any]) -> str:
    lines = [f"rebase onto {r['release']}: {'ok' if r['ok'] else 'FAILED'}"
             + (f", verified={r['verified']}" if "verify" in r else "")]
    for c in r["changes"]:
        t = c.get("target") or {}
        lines.append(f"  {c['change']}: {c['result']}" + (f" score={c['score']}" if c.get("score") is not None else "")
                     + (f" [{c['reason']}]" if c.get("reason") else ""))
        if t.get("new"):
            lines.append(f"    file: {t.get('old')} -> {t['new']}")
        if c.get("anchor", {}).get("new") and c["result"] == "re-anchored":
            lines.append(f"    anchor: {c['anchor']['new']}")
    for p in r.get("problems", []):
        lines.append(f"  problem: {p}")
    if r.get("verify") and not r["verify"]["ok"]:
        lines.append(f"  verify: {r['verify'].get('reason')} {r['verify'].get('checks')}")
    return "\n".join(lines)


@patch.command("drift")
@click.option("--from", "a", required=True, help="Release version or directory.")
@click.option("--to", "b", required=True, help="Release version or directory.")
@manifest_opt
@json_opt
@root_opt
def drift_cmd(a: str, b: str, manifest: Path | None, as_json: bool, root: str | None) -> None:
    """What upstream changed around our anchors between two releases.

    \b
    Example:
      eventlog patch drift --from 2026.9.5 --to 2026.9.6
    """
    from eventlog.patchset.drift import drift, render

    r = _run(lambda _pkg, m: drift(a, b, m), None, manifest, need_pkg=False, as_json=as_json)
    _emit(r, as_json, render)


@patch.command("matrix")
@click.argument("releases", nargs=-1, required=True)
@manifest_opt
@click.option("--verify", is_flag=True, help="Also run the e2e smoke for each release.")
@click.option("--write", is_flag=True, help="Also write each rebased manifest and its diffs into the data dir.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Markdown table (default: <data dir>/matrix.md; `-`: stdout only).")
@json_opt
@root_opt
def matrix_cmd(releases: tuple[str, ...], manifest: Path | None, verify: bool, write: bool, out: Path | None,
               as_json: bool, root: str | None) -> None:
    """Rebase (+ verify) every release given and write the known-good table. Exit 0 only if all pass.

    \b
    Example:
      eventlog patch matrix 2026.9.5 2026.9.6 --verify --out -
    """
    from eventlog.patchset.matrix import run_matrix

    to_stdout = str(out) == STDOUT
    r = _run(lambda _pkg, m: run_matrix(list(releases), m, verify=verify, write=write, out=None if to_stdout else out,
                                        save=not to_stdout), None, manifest, need_pkg=False, as_json=as_json)
    _emit(r, as_json, lambda r: r["document" if to_stdout else "markdown"])
    sys.exit(0 if r["ok"] else 2)


@patch.command("fetch")
@click.argument("versions", nargs=-1, required=True)
@click.option("--install", is_flag=True, help="Also `npm install` them with dependencies (what --verify runs).")
@root_opt
def fetch_cmd(versions: tuple[str, ...], install: bool, root: str | None) -> None:
    """Download releases (`npm pack`, the tarball is kept) into the cache for rebase/drift; prints each package dir.

    Example: eventlog patch fetch 2026.9.5 --install
    """
    from eventlog.patchset.rebase import release_dir, release_tarball
    from eventlog.patchset.verify import installed_release

    def one(v: str) -> dict[str, str]:
        release_tarball(v)
        return {"dir": str(installed_release(v) if install else release_dir(v))}

    for v in versions:
        r = _run(lambda _pkg, _m, ver=v: one(ver), None, None, need_pkg=False)
        click.echo(r["dir"])


cli.add_command(patch)
