"""`eventlog_search {context: N}`: each hit with the N messages before and after it in its chat (issue 27 item 4).

An answer often spans turns: "yes, that one" means what the turn before it asked, a plan and its date sit two turns
apart. One call then returns what would otherwise take an `eventlog_context` call per hit. The neighbours come from
`context.around_event`: the hit's own chat of the hit's own account, message events with a text only (erased lines
are commitments without one), and every line goes through the same redaction as a hit (`tool.line_for`).

The size cap is the tool's (TEXT_CAP): the hits are laid out first exactly as without context — a hit is never
dropped to make room for a neighbour — then the neighbours fill what is left, nearest first, over every hit in rank
order (each hit's first turn before and after, then the second, …), so a tight cap keeps the closest turns of every
hit rather than all turns of the first one. A neighbour already on the page (another hit, or a neighbour of a better
hit) is a short reference, not its text twice.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .context import Listings, around_event

MAX_CONTEXT = 5  # turns each side in a search; eventlog_context reads up to 20 around one event
SEPARATOR = "--"  # between hits' groups, as `grep -C` prints it


@dataclass
class Group:
    hit: dict[str, Any]
    before: list[dict[str, Any]] = field(default_factory=list)  # oldest first
    after: list[dict[str, Any]] = field(default_factory=list)


def gather(root: Path, hits: list[dict[str, Any]], n: int, skip: str | None = None) -> list[Group]:
    """Each hit with up to n messages before and after it; `skip`: the question being answered, never shown."""
    out = []
    listings: Listings = {}
    for ev in hits:
        got = around_event(root, ev, before=n, after=n, listings=listings) if n > 0 else None
        g = Group(ev)
        if got is not None:
            g.before = [e for e in got.before if e.get("id") != skip]
            g.after = [e for e in got.after if e.get("id") != skip]
        out.append(g)
    return out


def layout(groups: list[Group], render: Callable[[dict[str, Any]], str], room: int
           ) -> tuple[list[str], int, list[str]]:
    """(the lines, how many hits they show, the ids of the neighbours shown) within `room` characters (each line
    counted with its newline). Hits first, as many as fit, in rank order; then the neighbours, nearest first; a side
    that runs out of room stops there (no gap between a hit and the turns shown beside it)."""
    hit_ids = {g.hit.get("id") for g in groups}
    hit_lines: list[str] = []
    size = 0
    for i, g in enumerate(groups):
        ln = "> " + render(g.hit)
        cost = len(ln) + 1 + (len(SEPARATOR) + 1 if i else 0)
        if size + cost > room:
            break
        hit_lines.append(ln)
        size += cost
    shown = groups[:len(hit_lines)]
    near: dict[tuple[int, str], list[str]] = {}  # (group, "b"/"a") → lines, nearest first
    stopped: set[tuple[int, str]] = set()
    printed: set[Any] = set()
    ctx_ids: list[str] = []
    depth = max((max(len(g.before), len(g.after)) for g in shown), default=0)
    for d in range(depth):
        for i, g in enumerate(shown):
            for side, evs in (("b", g.before[::-1]), ("a", g.after)):
                if d >= len(evs) or (i, side) in stopped:
                    continue
                eid = evs[d].get("id")
                if eid in hit_ids:
                    ln = f"  [{eid}] (a hit, shown with its own turns)"
                elif eid in printed:
                    ln = f"  [{eid}] (shown above)"
                else:
                    ln = "  " + render(evs[d])
                if size + len(ln) + 1 > room:
                    stopped.add((i, side))
                    continue
                near.setdefault((i, side), []).append(ln)
                size += len(ln) + 1
                if eid not in hit_ids and eid not in printed:
                    printed.add(eid)
                    ctx_ids.append(str(eid))
    lines: list[str] = []
    for i, ln in enumerate(hit_lines):
        if i:
            lines.append(SEPARATOR)
        lines += near.get((i, "b"), [])[::-1] + [ln] + near.get((i, "a"), [])
    return lines, len(hit_lines), ctx_ids
