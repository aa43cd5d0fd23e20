"""Golden vectors for format v2 (content commitments), computed independently of both writers.

Uses only the standard library (hashlib, json) and none of the project's code or orjson: a ~30-line canonical encoder
written from docs/log-format.md (sorted keys, no whitespace, raw UTF-8, control characters escaped, shortest floats),
checked first against the v1 vectors in encoding.json (which were themselves computed by hand). Run it to regenerate
tests/vectors/store/v2.json:  python3 tests/vectors/store/make_v2_vectors.py
"""
import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONTENT = ["args", "forward", "from", "media", "note", "payload", "raw", "text", "title"]
GENESIS_PREFIX = "openclaw-eventlog:v1:genesis:"


def canon(v) -> str:
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canon(v[k]) for k in sorted(v)) + "}"
    if isinstance(v, list):
        return "[" + ",".join(canon(x) for x in v) + "]"
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, float):
        r = repr(v)  # shortest round trip; the format writes exponents without padding or '+': 1e-7, 1e+16 → 1e16
        if "e" in r:
            mant, exp = r.split("e")
            r = mant + "e" + str(int(exp))
        return r
    return json.dumps(v, ensure_ascii=False)


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def genesis(rel: str) -> str:
    return sha((GENESIS_PREFIX + rel).encode())


def commitment_form(obj: dict) -> dict:
    salt = bytes.fromhex(obj["salt"])
    out = {k: v for k, v in obj.items() if k != "salt"}
    for k in CONTENT:
        if k in out:
            out[k] = {"c": sha(salt + k.encode() + b"\x00" + canon(out[k]).encode())}
    return out


def chain(obj: dict) -> tuple[str, str, str]:
    """(line, commitment-form line, chain hash) of a stored object (prev already set)."""
    line = canon(obj)
    form = canon(commitment_form(obj)) if "salt" in obj else line
    return line, form, sha(form.encode())


def main() -> None:
    enc = json.loads((HERE / "encoding.json").read_text())
    # 1. the encoder reproduces the v1 vectors byte for byte (so it is fit to compute the v2 ones)
    for c in enc["lines"]:
        obj = dict(c["event"], prev=c["prev"])
        assert canon(obj) == c["line"], c["name"]
        assert sha(canon(obj).encode()) == c["hash"], c["name"]
    rel = enc["relpath"]
    salts = ["00112233445566778899aabbccddeeff", "ffeeddccbbaa99887766554433221100", "0123456789abcdef0123456789abcdef",
             "deadbeefdeadbeefdeadbeefdeadbeef", "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5", "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"]
    extra_events = [
        {"channel": "telegram", "chat_id": "-1001234567890", "event": "recall:query", "ts": "2026-11-30T23:59:59.999Z",
         "id": "01KB0000000000000000000007", "args": {"query": "кто прислал ключ?", "limit": 5},
         "title": "t", "note": "n", "media": [{"kind": "photo", "file_id": "AgAD"}],
         "forward": {"from": "channel", "title": "News"}},
        {"channel": "telegram", "chat_id": "-1001234567890", "event": "tap:start", "ts": "2026-11-30T23:59:59.999Z",
         "id": "01KB0000000000000000000008", "version": "2026.9.6"},  # no content: no salt, its own commitment form
    ]
    events = []
    for i, c in enumerate(enc["lines"]):
        ev = dict(c["event"], v=2)
        if any(k in ev for k in CONTENT):
            ev["salt"] = salts[i]
        events.append((c["name"], ev))
    events.append(("all_content_fields", dict(extra_events[0], v=2, salt="c0ffeec0ffeec0ffeec0ffeec0ffeec0")))
    events.append(("no_content", dict(extra_events[1], v=2)))

    def build(start_prev: str, evs: list) -> tuple[list, str]:
        prev = start_prev
        out = []
        for name, ev in evs:
            obj = dict(ev, prev=prev)
            line, form, h = chain(obj)
            out.append({"name": name, "event": ev, "prev": prev, "line": line, "form": form, "hash": h,
                        "erased": form})  # erasing a line writes its commitment form
            prev = h
        return out, prev

    lines, _ = build(genesis(rel), events)
    v1_lines = [c["line"] for c in enc["lines"][:3]]
    mixed, _ = build(enc["lines"][2]["hash"], events[3:])
    erase_idx = [1, 3, 6]  # cyrillic_emoji, key_order, all_content_fields
    out = {
        "_about": "computed by make_v2_vectors.py (stdlib only: hashlib + json), independent of both writers",
        "relpath": rel, "genesis": genesis(rel), "content_fields": CONTENT,
        "commitment": "sha256(salt_bytes || utf8(field) || 0x00 || canonical(value)), as {\"c\": hex}",
        "lines": lines,
        "file": "".join(x["line"] + "\n" for x in lines),
        "erase": erase_idx,
        "erased_file": "".join((x["erased"] if i in erase_idx else x["line"]) + "\n" for i, x in enumerate(lines)),
        "mixed": {"v1_lines": v1_lines, "v2": mixed,
                  "file": "".join(x + "\n" for x in v1_lines) + "".join(x["line"] + "\n" for x in mixed)},
    }
    (HERE / "v2.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
