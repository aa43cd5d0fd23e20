"""BM25 tokens: lowercase words, `ё`→`е`, each token stemmed by the Snowball stemmer of its script (Cyrillic → Russian,
Latin → English; anything else kept as is). A token's id is a stable 64-bit hash, so index units built at different
times agree on ids without a shared vocabulary."""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import numpy as np

_WORD = re.compile(r"\w+")
# Words that say nothing about which message is meant (English and Russian), plus the routing words a model tends to
# carry over from the user's question ("remember", "earlier", "yesterday").
STOP = frozenset("""
a an and are as at be been but by can could did do does for from had has have he her him his how i if in into is it
its me my no not of on or our she so than that the their them then there these they this to us was we were what when
where which who whom why will with would you your yes about again also any all just like said say tell told
remember recall earlier before yesterday today last ago mentioned talked discussed decide decided chat message messages
am being having doing because until while against between through during after above below up down out off over under
further once here both each few more most other some such nor only own same too very s t don should now whose ours
yours hers itself himself herself myself themselves what's i'm
и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было вот от меня еще нет
о из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас нибудь опять уж вам ведь там потом себя
ничего ей может они тут где есть надо ней для мы тебя их чем была сам чтоб без будто чего раз тоже себе под будет ж
тогда кто этот того потому этого какой совсем ним здесь этом один почти мой тем чтобы нее сейчас были куда зачем всех
никогда можно при наконец два об другой хоть после над больше тот через эти нас про всего них какая много разве три
эту моя впрочем хорошо свою этой перед иногда лучше чуть том нельзя такой им более всегда конечно всю между
помнишь помню вспомни напомни вчера сегодня раньше говорили обсуждали решили сказал сказала писал писала
""".split())

_CYR = re.compile(r"[а-я]")
_LAT = re.compile(r"[a-z]")


@lru_cache(maxsize=1)
def _stemmers() -> tuple[object, object]:
    import Stemmer  # PyStemmer

    return Stemmer.Stemmer("russian"), Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    ru, en = _stemmers()
    if _CYR.search(word):
        return ru.stemWord(word)  # type: ignore[attr-defined]
    if _LAT.search(word):
        return en.stemWord(word)  # type: ignore[attr-defined]
    return word


def tokens(text: str) -> list[str]:
    return [stem(w) for w in _WORD.findall(text.lower().replace("ё", "е"))]


@lru_cache(maxsize=200_000)
def token_id(tok: str) -> int:
    return int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little", signed=True)


def token_ids(text: str) -> np.ndarray:
    return np.array([token_id(t) for t in tokens(text)], np.int64)


META = "\x1f"  # the meta field's term space (derive.py): a meta term's id is the id of META + its token


def meta_token_ids(text: str) -> np.ndarray:
    return np.array([token_id(META + t) for t in tokens(text)], np.int64)


def query_terms(text: str, b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(term ids, weight, BM25 b) of a query: each distinct token once in the body field (weight 1, length-normalised
    with b) and once in the meta field (derive.META_WEIGHT, b = 0: a message's sender or date is one fact whatever
    the text's length)."""
    from .derive import META_WEIGHT

    toks = list(dict.fromkeys(query_tokens(text)))
    body = [token_id(t) for t in toks]
    meta = [token_id(META + t) for t in toks]
    n = len(toks)
    return (np.array(body + meta, np.int64), np.array([1.0] * n + [META_WEIGHT] * n),
            np.array([b] * n + [0.0] * n))


def query_tokens(text: str) -> list[str]:
    """The stemmed tokens of a question without its stop and question words ("what did Caroline say about…" →
    caroline, say… minus say); all of them when nothing else is left (a query of stop words still searches)."""
    words = _WORD.findall(text.lower().replace("ё", "е"))
    kept = [w for w in words if w not in STOP] or words
    return [stem(w) for w in kept]
