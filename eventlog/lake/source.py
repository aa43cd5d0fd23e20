"""What a root has to ship: its gateway name, its sealed day files (as their seals say) and their sealed bytes.

Only the sealed part of a day file ships: the first `lines` lines, `bytes` bytes, ending in the line whose chain hash
the seal records. Lines after the seal (a closed day extended) wait for the next seal; the open day waits for its
seal. The seal is also what lets a push see a file unchanged without reading it (docs/lake.md, "Pushing").
"""
from __future__ import annotations

import hashlib
import os
import re
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..store import fsutil
from ..store.commitment import chain_hash
from ..store.layout import parse_relpath, seal_streams
from ..store.reader import Problem
from ..store.seal import read_seal_records
from ..store.verify import against_seal, verify_chain
from .extensions import LakeError

GATEWAY_FILE = "state/lake-gateway"  # store/layout.locations(): this root's gateway name and id in every lake
GATEWAY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


@dataclass(frozen=True)
class Gateway:
    name: str
    root_id: str  # random, made on the first push: a lake refuses another root under the same name


@dataclass(frozen=True)
class SealedFile:
    rel: str
    channel: str
    account: str
    chat: str
    lines: int
    bytes: int
    last: str


def check_gateway_name(name: str) -> str:
    if not GATEWAY_RE.fullmatch(name):
        raise LakeError(f"bad gateway name {name[:80]!r}: 1-63 letters, digits, '.', '_' or '-', not starting with "
                        "a punctuation mark")
    return name


def stored_gateway(root: Path) -> Gateway | None:
    try:
        obj = orjson.loads((root / GATEWAY_FILE).read_bytes())
    except FileNotFoundError:
        return None
    except orjson.JSONDecodeError:
        raise LakeError(f"{root / GATEWAY_FILE} is not JSON (it names this root's gateway in the lake)") from None
    if not (isinstance(obj, dict) and isinstance(obj.get("gateway"), str) and isinstance(obj.get("id"), str)):
        raise LakeError(f"{root / GATEWAY_FILE} does not name a gateway")
    return Gateway(check_gateway_name(obj["gateway"]), obj["id"])


def resolve_gateway(root: Path, asked: str | None) -> Gateway:
    """The root's gateway: the one stored in it; on the first push `asked`, else the host name (stored then). A
    different `asked` for a root that already pushes under another name is refused: its rows would be split. Nothing
    is written here (push stores it: store_gateway)."""
    have = stored_gateway(root)
    if have is not None:
        if asked is not None and asked != have.name:
            raise LakeError(f"this root pushes as gateway {have.name!r} ({GATEWAY_FILE}); --gateway {asked!r} differs")
        return have
    return Gateway(check_gateway_name(asked if asked is not None else _host_name()), uuid.uuid4().hex)


def store_gateway(root: Path, gw: Gateway) -> None:
    """Write the root's gateway name and id (the first push), unless it has them already."""
    if stored_gateway(root) is None:
        (root / "state").mkdir(mode=0o700, exist_ok=True)
        fsutil.replace_file(root / GATEWAY_FILE, orjson.dumps({"gateway": gw.name, "id": gw.root_id}) + b"\n")


def _host_name() -> str:
    host = socket.gethostname().split(".")[0]
    name = re.sub(r"[^A-Za-z0-9._-]", "-", host).lstrip("._-")[:63]
    return name or "gateway"


def sealed_files(root: Path) -> dict[str, SealedFile]:
    """relpath → the latest seal of every sealed day file (seal streams only: no day file is opened)."""
    out: dict[str, SealedFile] = {}
    for stream in seal_streams(root):
        for rec in read_seal_records(root / stream):
            parsed = parse_relpath(rec["file"])
            if parsed is not None:
                out[rec["file"]] = SealedFile(rec["file"], parsed.channel, parsed.account, parsed.chat_id,
                                              rec["lines"], rec["bytes"], rec["last"])
    return out


def damage_of(root: Path, rel: str, sf: SealedFile | None) -> list[Problem]:
    """The store's verify of one chained file (a day file against its seal when `sf` is given): its damage."""
    found: list[Problem] = []
    path = root / rel
    if not path.is_file():
        return [Problem(rel, 0, f"sealed file is missing ({sf.lines} lines sealed)")] if sf else []
    hashes, ends = verify_chain(path, rel, lambda p, is_damage: found.append(p) if is_damage else None,
                                parse_relpath(rel) if sf else None)
    if sf is not None:
        # lines after the seal are not shipped; a sealed part of another size is not the sealed bytes
        state = set(against_seal(hashes, ends, sf.lines, sf.last, sf.bytes)) - {"extended"}
        if "truncated" in state:
            found.append(Problem(rel, len(hashes), f"truncated: {len(hashes)} lines, sealed with {sf.lines}"))
        elif state:
            found.append(Problem(rel, sf.lines, "sealed part modified (no longer matches the seal: run "
                                                "`eventlog verify`)"))
    return found


def sealed_bytes(root: Path, sf: SealedFile) -> bytes:
    """The sealed part of a day file, checked against its seal (line count and the last line's chain hash)."""
    with open(root / sf.rel, "rb") as f:
        data = f.read(sf.bytes)
    if len(data) != sf.bytes or not data.endswith(b"\n") or data.count(b"\n") != sf.lines:
        raise LakeError(f"{sf.rel}: changed while it was pushed (does not match its seal): push again")
    if chain_hash(data[data.rfind(b"\n", 0, len(data) - 1) + 1:-1]) != sf.last:
        raise LakeError(f"{sf.rel}: changed while it was pushed (does not match its seal): push again")
    return data


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stat_key(root: Path, rel: str) -> tuple[int, int] | None:
    """(size, mtime in ns) of a day file, None when it is gone: what lets a push skip a file it shipped."""
    try:
        st = os.stat(root / rel)
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns
