"""Month packs: the day units of a past month merged into one unit, so a query over a year touches ~12 arrays, not 365.

A pack is derived from its member day units alone — their per-message arrays concatenated, their BM25 postings
merged, their projections (project.py) kept per member as segments (each member's axes as rows of one `basis`, `bstart`) — and names every member's data file:

    <root>/index/packs/<yyyy-mm>.json          the record: {"members": {day: data file}, ...} + the unit record fields
    <root>/index/packs/<yyyy-mm>.<gen>.bin     the arrays (store.pack format)

**Exact by construction.** A query uses a pack only when its members are exactly the month's days in scope that
are packable (before today, UTC) with exactly the data files their records name now; otherwise it reads those days'
units. A data file never changes under its name (store.py), so a pack is either the union of the current units or
unused — never stale, never partial. Today's day is never packed (it changes with every message); a changed past day
(late event, erasure, a new chat) makes its month's pack unused until `eventlog index` or the next query's refresh
rebuilds it (`index --check` lists it). Scores are the same either way: BM25's statistics are global sums, the
projection estimate is per member, every array is the members' own.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ..store import erased
from . import project, store

PACK_DIR = "packs"
MIN_DAYS = 2  # a month with fewer packable days is read as day units
_PER_DOC = ("id", "file", "offset", "ts", "dir", "dl", "thash", "vec", "scale")


def packs_dir(root: Path) -> Path:
    return root / store.INDEX_DIR / PACK_DIR


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


def load_records(root: Path) -> dict[str, dict[str, Any]]:
    """month → pack record (of this format version)."""
    return store.load_records(root, subdir=PACK_DIR)


def wanted(records: dict[str, dict[str, Any]], days: list[str] | None = None,
           now: str | None = None) -> dict[str, dict[str, str]]:
    """month → {day: data file} of the packable days (before today; all of `records`, or those of `days`) of every
    month with at least MIN_DAYS of them whose units agree on the model and have vectors or not alike."""
    now = now or today()
    out: dict[str, dict[str, str]] = {}
    for d in (sorted(records) if days is None else days):
        rec = records.get(d)
        if rec is not None and d < now:
            out.setdefault(d[:7], {})[d] = rec["data"]
    for m in list(out):
        models = {(records[d].get("model"), records[d].get("dim")) for d in out[m]}
        if len(out[m]) < MIN_DAYS or len(models) != 1:
            del out[m]
    return out


def stale(root: Path, records: dict[str, dict[str, Any]], months: tuple[str, str] = ("", "9999")) -> list[str]:
    """The months (within `months`, first and last yyyy-mm) whose pack is missing or does not match their units as
    they are now."""
    have = load_records(root)
    want = wanted(records)
    return sorted(m for m, members in want.items()
                  if months[0] <= m <= months[1] and (m not in have or have[m].get("members") != members))


def merge(units: list[tuple[dict[str, Any], dict[str, Any]]], projs: list[dict[str, Any] | None]
          ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(record fields, arrays) of the units merged in order: per-message arrays concatenated (file indexes shifted),
    postings merged (documents shifted, still ascending per term), projections as segments `sstart`."""
    offs = np.cumsum([0] + [rec["docs"] for rec, _ in units])
    nfiles = np.cumsum([0] + [len(rec["files"]) for rec, _ in units])
    arrays: dict[str, np.ndarray] = {}
    for k in _PER_DOC:
        if all(k in arr for _, arr in units):
            parts = [np.asarray(arr[k]) + np.int32(nfiles[i]) if k == "file" else np.asarray(arr[k])
                     for i, (_, arr) in enumerate(units)]
            arrays[k] = np.concatenate(parts).astype(parts[0].dtype)
    if all("kdoc" in arr for _, arr in units):  # long messages' chunks (build.py): message rows shifted
        arrays["kdoc"] = np.concatenate([np.asarray(arr["kdoc"]) + np.int32(offs[i])
                                         for i, (_, arr) in enumerate(units)]).astype(np.int32)
        for k in ("kstart", "kvec", "kscale"):
            arrays[k] = np.concatenate([np.asarray(arr[k]) for _, arr in units])
    t_l, d_l, f_l = [], [], []
    for i, (_, arr) in enumerate(units):
        t_l.append(np.repeat(np.asarray(arr["terms"]), np.diff(np.asarray(arr["tptr"]))))
        d_l.append(np.asarray(arr["pdoc"]) + np.int32(offs[i]))
        f_l.append(np.asarray(arr["ptf"]))
    t, d, f = np.concatenate(t_l), np.concatenate(d_l).astype(np.int32), np.concatenate(f_l)
    order = np.argsort(t, kind="stable")  # members in order, each ascending: documents stay ascending per term
    t, d, f = t[order], d[order], f[order]
    change = np.ones(len(t), bool)
    change[1:] = t[1:] != t[:-1]
    start = np.flatnonzero(change)
    arrays.update(terms=t[start], tptr=np.append(start, len(t)).astype(np.int64), pdoc=d, ptf=f)
    if projs and all(p is not None for p in projs):
        bases = [np.asarray(p["basis"]) for p in projs]  # type: ignore[index]
        width = max(len(b) for b in bases)  # members keep as many axes as they hold (project.derive): codes padded
        arrays["codes"] = np.concatenate([np.pad(np.asarray(p["codes"]), ((0, 0), (0, width - len(b))))  # type: ignore[index]
                                          for p, b in zip(projs, bases, strict=True)])
        arrays["cscale"] = np.concatenate([np.asarray(p["cscale"]) for p in projs])  # type: ignore[index]
        arrays["mu"] = np.stack([np.asarray(p["mu"]) for p in projs])  # type: ignore[index]
        arrays["basis"] = np.concatenate(bases)
        arrays["bstart"] = np.cumsum([0] + [len(b) for b in bases]).astype(np.int64)
        arrays["sstart"] = offs.astype(np.int64)
    first = units[0][0]
    rec = {"docs": int(offs[-1]), "dl_sum": sum(int(r.get("dl_sum", 0)) for r, _ in units),
           "files": [f for r, _ in units for f in r["files"]], "chats": [c for r, _ in units for c in r["chats"]],
           "model": first.get("model"), "dim": first.get("dim", 0)}
    return rec, arrays


def build(root: Path, month: str, members: dict[str, str], records: dict[str, dict[str, Any]]) -> bool:
    """Merge and publish the pack of `month` from its member units (False if a member changed meanwhile)."""
    read_at = erased.generation(root)  # before the members are read: store.publish checks it
    units, projs = [], []
    for d in sorted(members):
        rec = records[d]
        if rec["data"] != members[d]:
            return False
        try:
            units.append((rec, store.open_data(store.units_dir(root) / rec["data"])))
        except FileNotFoundError:
            return False
        projs.append(project.load(root, rec) if rec.get("model") else None)
    fields, arrays = merge(units, projs)
    if fields["model"] and "codes" not in arrays:
        return False  # a member lacks its projection: `index` derives it first
    for _, arr in units:
        store.release(arr)
    rec = store.publish(root, month, {**fields, "members": members, "erasure": read_at}, arrays, subdir=PACK_DIR)
    return "dropped" not in rec


def update(root: Path, records: dict[str, dict[str, Any]], months: tuple[str, str] = ("", "9999")) -> list[str]:
    """Rebuild the stale packs (within `months`), drop the packs of months no longer packable; the built months."""
    built = [m for m in stale(root, records, months) if build(root, m, wanted(records)[m], records)]
    want = wanted(records)
    gone = [m for m in load_records(root) if m not in want and months[0] <= m <= months[1]]
    for m in gone:
        store.remove_unit(root, m, subdir=PACK_DIR)
    store.collect_garbage(root, subdir=PACK_DIR)  # every run: a data file no pack names is garbage, built or not
    return built


def purge(root: Path, days: set[str]) -> list[str]:
    """Delete, files and all, every pack holding one of `days` (erased content must not stay in a pack)."""
    out = [m for m, rec in load_records(root).items() if days & set(rec.get("members", {}))]
    for m in out:
        store.remove_unit(root, m, subdir=PACK_DIR)
    if out:
        store.collect_garbage(root, min_age_s=0, subdir=PACK_DIR)
    return sorted(out)


def units_for(root: Path, records: dict[str, dict[str, Any]], days: list[str], packs: bool = True
              ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(record, arrays) for the days in scope: a month's valid pack in place of its packable days, the other days'
    own units (index.iter_units). packs=False: the day units alone (the benchmark's "before packs" baseline)."""
    from .index import iter_units

    found = load_records(root) if packs and os.path.isdir(packs_dir(root)) else {}
    use: dict[str, dict[str, Any]] = {}
    if found:
        for m, members in wanted(records, days).items():
            p = found.get(m)
            if p is not None and p.get("members") == members:
                use[m] = p
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    pdir = packs_dir(root)
    loose = []
    for d in days:
        p = use.get(d[:7])
        if p is not None and d in p["members"]:
            continue
        loose.append(d)
    for _m, p in sorted(use.items()):
        try:
            out.append((p, store.open_cached(pdir / p["data"])))
        except (FileNotFoundError, store.IndexError_):  # replaced or removed meanwhile: its days' own units
            loose.extend(p["members"])
    out.extend(iter_units(root, sorted(loose)))
    return sorted(out, key=lambda u: u[0]["day"])  # in time order, as the day units were


def size_bytes(root: Path) -> int:
    d = packs_dir(root)
    return sum(e.stat().st_size for e in os.scandir(d)) if d.is_dir() else 0

