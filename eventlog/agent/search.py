"""Ranked search for a question a model asks, on top of `eventlog.recall` (the one search implementation).

A model asks in words ("what did we decide about the wifi password"), not in grep patterns. The question is cut into
content words (stop words dropped); each word is searched with `recall.search` — `text`: case-insensitive substring
(so "password" also finds "passwords"), `fuzzy`: rapidfuzz word ratio (typos, word forms) — in the allowed chats and
days. A message scores the sum over the words it contains of 1/log2(2 + how many messages contain that word), so rare
words weigh more; ties go to the newest. A word found in more than `COMMON_CAP` messages stops counting (it cannot
tell messages apart, and keeping its hits would cost memory): the result says so.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Callable

from .. import recall

COMMON_CAP = 20_000
MAX_WORDS = 8
_WORD = re.compile(r"\w+")
# Words that say nothing about which message is meant (English and Russian), plus the routing words a model tends to
# carry over from the user's question ("remember", "earlier", "yesterday").
STOP = frozenset("""
a an and are as at be been but by can could did do does for from had has have he her him his how i if in into is it
its me my no not of on or our she so than that the their them then there these they this to us was we were what when
where which who whom why will with would you your yes about again also any all just like said say tell told
remember recall earlier before yesterday today last ago mentioned talked discussed decide decided chat message messages
и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было вот от меня еще нет
о из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас нибудь опять уж вам ведь там потом себя
ничего ей может они тут где есть надо ней для мы тебя их чем была сам чтоб без будто чего раз тоже себе под будет ж
тогда кто этот того потому этого какой совсем ним здесь этом один почти мой тем чтобы нее сейчас были куда зачем всех
никогда можно при наконец два об другой хоть после над больше тот через эти нас про всего них какая много разве три
эту моя впрочем хорошо свою этой перед иногда лучше чуть том нельзя такой им более всегда конечно всю между
помнишь помню вспомни напомни вчера сегодня раньше говорили обсуждали решили сказал сказала писал писала
""".split())


@dataclass
class Found:
    event: dict[str, Any]
    words: set[int] = field(default_factory=set)
    score: float = 0.0


@dataclass
class Ranked:
    hits: list[Found]
    total: int                       # messages that matched at least one counted word
    words: list[str]                 # the words searched
    common: list[str]                # words dropped for being in > COMMON_CAP messages


def query_words(query: str) -> list[str]:
    toks = [t.lower() for t in _WORD.findall(query)]
    words = [t for t in toks if t not in STOP and (len(t) > 1 or t.isdigit())] or [t for t in toks if t]
    out: list[str] = []
    for w in words:
        if w not in out:
            out.append(w)
    return out[:MAX_WORDS]


def rank(root: Path, query: str, *, mode: str = "text", chats: tuple[str, ...] | None = None,
         since: date | None = None, until: date | None = None, direction: str | None = None, limit: int = 10,
         exclude: str | None = None, on_problem: Callable[[str], None] | None = None) -> Ranked:
    """The best `limit` messages for `query`; `exclude`: an event id to leave out (the question being answered)."""
    words = query_words(query)
    if not words:
        return Ranked([], 0, [], [])
    found: dict[str, Found] = {}
    df: dict[int, int] = {}
    common: list[str] = []
    for i, w in enumerate(words):
        q = recall.GrepQuery(w, "fuzzy" if mode == "fuzzy" else "literal", ignore_case=True, chats=chats,
                             since=since, until=until, direction=direction)
        n = 0
        hits = recall.search(root, q, on_problem)
        try:
            for h in hits:
                n += 1
                if n > COMMON_CAP:
                    break
                key = h.event.get("id") or f"{h.relpath}:{h.line}"
                if key == exclude:
                    continue
                f = found.get(key)
                if f is None:
                    f = found[key] = Found(_lite(h.event))
                f.words.add(i)
        finally:
            hits.close()
        if n > COMMON_CAP and len(words) > 1:
            common.append(w)
            for f in found.values():
                f.words.discard(i)
        df[i] = n
    weights = {i: 1.0 / math.log2(2 + df[i]) for i in df if words[i] not in common}
    kept = []
    for f in found.values():
        f.score = sum(weights.get(i, 0.0) for i in f.words)
        if f.score > 0:
            kept.append(f)
    kept.sort(key=lambda f: (-f.score, _neg_ts(f.event.get("ts"))))
    return Ranked(kept[:limit], len(kept), words, common)


def _neg_ts(ts: Any) -> tuple[int, ...]:
    """Sort key putting later RFC 3339 UTC times first (they compare as strings)."""
    return tuple(-ord(c) for c in ts) if isinstance(ts, str) else ()


def _lite(ev: dict[str, Any]) -> dict[str, Any]:
    """What a result line needs; the rest of the event (raw update, payload) is not kept in memory."""
    keep = ("id", "ts", "chat_id", "channel", "direction", "from", "text", "event", "update_type")
    out = {k: ev[k] for k in keep if k in ev}
    payload = ev.get("payload")
    if isinstance(payload, dict) and payload.get("parse_mode"):
        out["parse_mode"] = payload["parse_mode"]
    return out
