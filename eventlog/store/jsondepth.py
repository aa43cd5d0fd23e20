"""How deeply a parsed JSON value nests — counted without recursion, so that a hostile value cannot exhaust the
stack of the code that checks it. Used where input is parsed (the agent protocol, the Telegram Desktop importer)."""
from __future__ import annotations

from typing import Any


def depth(v: Any, limit: int) -> int:
    """Nesting depth of `v` (a scalar is 0, `[]` is 1), counted no further than limit + 1."""
    deepest, stack = 0, [(v, 0)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (dict, list)):
            d += 1
            if d > limit:
                return d
            deepest = max(deepest, d)
            stack.extend((y, d) for y in (x.values() if isinstance(x, dict) else x))
    return deepest
