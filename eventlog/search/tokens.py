"""BM25 tokens: lowercase words, `ё`→`е`, each token stemmed by the Snowball stemmer of its script (Cyrillic → Russian,
Latin → English; anything else kept as is). A token's id is a stable 64-bit hash, so index units built at different
times agree on ids without a shared vocabulary."""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import numpy as np

_WORD = re.compile(r"\w+")
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
