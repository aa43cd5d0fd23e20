"""Content commitments (format v2, eventlog/store/commitment.py): what erasure produces and refuses, which lines count as
erased, how a line that is not a live v2 line is hashed, and that no two processes hand out the same salt.

Added for issue 15: mutation testing left these edges of the contract in docs/log-format.md untested (only the
golden vectors of well-formed lines were checked).
"""
from __future__ import annotations

import hashlib
import os

import orjson
import pytest

from eventlog.store import schema
from eventlog.store.commitment import (CONTENT_FIELDS, chain_hash, commit_value, commitment_form, erase_line, is_erased,
                                 new_salt)
from eventlog.errors import BadEvent
from store_support import encode_with_prev

SALT = "00112233445566778899aabbccddeeff"


def live(**kw) -> dict:
    e = {"event": "message:received", "channel": "telegram", "chat_id": "42", "ts": "2026-11-29T10:00:00.000Z",
         "text": "hello", "salt": SALT, "id": "01KB0000000000000000000001"}
    return schema.prepare({**e, **kw})


def line_of(obj: dict) -> bytes:
    return encode_with_prev(dict(obj), "0" * 64)


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def test_a_commitment_is_the_documented_hash_of_salt_key_nul_and_canonical_value() -> None:
    # docs/log-format.md: sha256hex(salt_bytes || utf8(k) || 0x00 || canonical(value))
    v = {"b": 1, "a": [True, None]}
    assert commit_value(bytes.fromhex(SALT), "raw", v) == sha(bytes.fromhex(SALT) + b"raw\x00" + b'{"a":[true,null],"b":1}')


def test_erasing_a_live_line_keeps_its_chain_hash_and_drops_content_and_salt() -> None:
    line = line_of(live(raw={"z": "secret", "a": 1}, title="secret title", note=None))
    erased = erase_line(line)
    obj = orjson.loads(erased)
    assert "salt" not in obj and b"secret" not in erased and b"hello" not in erased
    assert erased == schema.encode(obj)  # canonical bytes: verify accepts the erased line as it is
    assert chain_hash(erased) == chain_hash(line) == sha(erased)
    assert is_erased(obj) and not is_erased(orjson.loads(line))
    assert {k for k in obj if isinstance(obj[k], dict) and "c" in obj[k]} == {"raw", "text", "title", "note"}
    assert erase_line(erased) is None  # already erased: nothing to do


def test_an_erased_line_with_a_nested_field_called_salt_keeps_its_chain_hash() -> None:
    """The bytes hold `"salt":"` (a caller's own field), but the line has no salt of its own: it is its own form.
    (issue 15, mwri: commitment.chain_hash mutant 10 hashed it as if it had one.)"""
    line = line_of(live(meta={"salt": "abc"}))
    erased = erase_line(line)
    assert b'"salt":"abc"' in erased and "salt" not in orjson.loads(erased)
    assert chain_hash(erased) == chain_hash(line) == sha(erased)


def test_erasure_refuses_a_v1_line_with_content_and_skips_one_without() -> None:
    v1 = schema.encode({"event": "message:received", "channel": "telegram", "chat_id": "42", "v": 1, "text": "x"})
    with pytest.raises(BadEvent, match=r"^a v1 line cannot be erased without breaking the chain \(run `eventlog "
                                       r"migrate` first\)$"):
        erase_line(v1)
    assert erase_line(schema.encode({"event": "log:x", "channel": "telegram", "chat_id": "42", "v": 1})) is None
    assert erase_line(line_of({k: v for k, v in live().items() if k not in ("text", "salt")})) is None


@pytest.mark.parametrize("line", [b"[1,2]", b'"text"', b"3"])
def test_erasure_refuses_a_line_that_is_not_an_object(line: bytes) -> None:
    with pytest.raises(BadEvent, match="^not a JSON object$"):
        erase_line(line)


@pytest.mark.parametrize("salt", ["00112233445566778899AABBCCDDEEFF", "0011", 7, SALT + "00"])
def test_a_damaged_salt_is_refused_by_erasure_and_hashes_as_plain_bytes(salt) -> None:
    obj = {**orjson.loads(line_of(live())), "salt": salt}
    line = schema.encode(obj)
    with pytest.raises(BadEvent, match="^salt must be 32 lowercase hex characters$"):
        erase_line(line)
    with pytest.raises(BadEvent, match="^salt must be 32 lowercase hex characters$"):
        commitment_form(obj)
    assert chain_hash(line) == sha(line)  # no longer what the chain expects: verify reports the break


def test_lines_that_are_their_own_commitment_form_hash_as_their_bytes() -> None:
    v1_with_salt = schema.encode({"event": "x:y", "channel": "t", "chat_id": "1", "v": 1, "text": "a", "salt": SALT})
    not_json = b'{"salt":"' + SALT.encode() + b'", broken'
    array = b'["salt":"x"]'.replace(b":", b",")
    no_v = schema.encode({"event": "x:y", "text": "a", "salt": SALT})
    for line in (v1_with_salt, not_json, array, no_v):
        assert chain_hash(line) == sha(line), line
    # a live v2 line does not: its chain hash is that of its commitment form
    line = line_of(live())
    assert chain_hash(line) != sha(line) and chain_hash(line) == sha(erase_line(line))
    # the parsed object, when the caller passes it, gives the same answer
    assert chain_hash(line, orjson.loads(line)) == chain_hash(line)


@pytest.mark.parametrize("value, erased", [
    ({"c": "a" * 64}, True),
    ({"c": "A" * 64}, False),
    ({"c": "a" * 63}, False),
    ({"c": "a" * 64, "x": 1}, False),
    ({"d": "a" * 64}, False),
    ({"c": 5}, False),
    ("a" * 64, False),
])
def test_only_a_line_whose_every_content_field_is_a_commitment_counts_as_erased(value, erased) -> None:
    base = {"event": "message:received", "channel": "telegram", "chat_id": "42", "v": 2}
    assert is_erased({**base, "text": value}) is erased
    assert is_erased({**base, "text": {"c": "b" * 64}, "raw": value}) is erased
    assert not is_erased({**base, "text": {"c": "b" * 64}, "salt": SALT})  # live: it has its salt
    assert not is_erased({**base, "v": 1, "text": {"c": "b" * 64}})  # a v1 line is never erased
    assert not is_erased(base)  # no content at all: nothing was erased


def test_content_fields_are_the_documented_set() -> None:
    assert CONTENT_FIELDS == ("args", "forward", "from", "media", "note", "payload", "raw", "text", "title")


def test_salts_are_fresh_lowercase_hex_across_pool_refills() -> None:
    salts = [new_salt() for _ in range(2500)]  # the pool holds 1024
    assert len(set(salts)) == len(salts)
    assert all(len(s) == 32 and s == s.lower() and int(s, 16) >= 0 for s in salts)


def test_a_forked_child_never_hands_out_its_parents_salts() -> None:
    """A writer forked by a supervisor must not reuse the parent's pooled salts (equal salts would make equal content
    in two lines linkable through their commitments)."""
    new_salt()  # the parent's pool is filled
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write two salts and leave at once
        try:
            os.write(w, (new_salt() + new_salt()).encode())
        finally:
            os._exit(0)
    os.close(w)
    child = b""
    while chunk := os.read(r, 128):
        child += chunk
    os.close(r)
    os.waitpid(pid, 0)
    parent = new_salt() + new_salt()
    assert len(child) == 64 and child.decode()[:32] not in parent and child.decode()[32:] not in parent
