"""Edit a JSON5 document in place: insert or replace values at key paths and leave every other byte — comments,
trailing commas, unquoted keys, the owner's layout — where it was.

No library does this safely (docs/agent.md, "JSON5"), so this module scans just enough JSON5 to know where each value
starts and ends. It never has the last word: `apply` re-reads its result with the `json5` package, and a result that
does not mean exactly the wanted document is refused (`Json5EditError`), so the caller falls back to the hand edit.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EventlogError


class Json5EditError(EventlogError):
    """This text cannot be edited here with certainty; nothing was changed."""


_SPACE = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.S)
_STRING = re.compile(r"""("(?:[^"\\\n]|\\.|\\\n)*"|'(?:[^'\\\n]|\\.|\\\n)*')""", re.S)
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_SCALAR = re.compile(r"[^\s,\]\}/]+")  # numbers, true/false/null, Infinity, NaN: their meaning is json5's business


@dataclass
class Node:
    start: int
    end: int
    kind: str  # "object" | "array" | "scalar"
    members: list[tuple[str, "Node"]] = field(default_factory=list)  # objects: (key, value); arrays: ("", item)
    trailing_comma: bool = False
    comma_end: int = -1  # just after the trailing comma, when there is one


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def space(self) -> None:
        m = _SPACE.match(self.text, self.pos)
        self.pos = m.end() if m else self.pos

    def fail(self, what: str) -> Json5EditError:
        return Json5EditError(f"unexpected input at offset {self.pos} ({what})")

    def value(self) -> Node:
        self.space()
        start, ch = self.pos, self.text[self.pos:self.pos + 1]
        if ch in "{[":
            return self.container(start, ch)
        m = _STRING.match(self.text, start) if ch in "\"'" else _SCALAR.match(self.text, start)
        if not m:
            raise self.fail("a value")
        self.pos = m.end()
        return Node(start, self.pos, "scalar")

    def key(self) -> str:
        m = _STRING.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            import json5

            return str(json5.loads(m.group(1)))
        m = _IDENT.match(self.text, self.pos)
        if not m:
            raise self.fail("a key")  # \u escapes in identifiers and the like: not for this scanner
        self.pos = m.end()
        return m.group(0)

    def container(self, start: int, open_: str) -> Node:
        close = "}" if open_ == "{" else "]"
        node = Node(start, -1, "object" if open_ == "{" else "array")
        self.pos += 1
        while True:
            self.space()
            if self.text.startswith(close, self.pos):
                self.pos += 1
                node.end = self.pos
                return node
            key = ""
            if node.kind == "object":
                key = self.key()
                self.space()
                if not self.text.startswith(":", self.pos):
                    raise self.fail("':'")
                self.pos += 1
            node.members.append((key, self.value()))
            self.space()
            node.trailing_comma = self.text.startswith(",", self.pos)
            if node.trailing_comma:
                self.pos += 1
                node.comma_end = self.pos
            elif not self.text.startswith(close, self.pos):
                raise self.fail(f"',' or '{close}'")


def parse(text: str) -> Node:
    s = _Scanner(text)
    root = s.value()
    s.space()
    if s.pos != len(text) or root.kind != "object":
        raise Json5EditError("the config is not one JSON5 object")
    return root


def _find(node: Node, path: str) -> Node:
    for part in path.split(".") if path else []:
        found = [v for k, v in node.members if k == part] if node.kind == "object" else []
        if not found:
            raise Json5EditError(f"no `{path}` to edit")
        node = found[-1]  # a repeated key: the last one counts, as in json5
    return node


def _line_indent(text: str, pos: int) -> str:
    line = text[text.rfind("\n", 0, pos) + 1:pos]
    return line[:len(line) - len(line.lstrip())]


def _render(value: Any, indent: str, multiline: bool) -> str:
    if not multiline:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def _insert(text: str, node: Node, items: list[str]) -> str:
    """`items` (rendered members or elements) added at the end of the container `node`, in its own style: one per
    line when it spans lines, else inline; a trailing comma when its last member had one. Nothing that is there
    moves: a missing comma goes right after the last value (before a comment on its line), the items just before
    the line of the closing bracket."""
    close = node.end - 1
    comma_at = node.members[-1][1].end if node.members and not node.trailing_comma else None
    if "\n" in text[node.start:node.end]:
        inner = _line_indent(text, node.members[0][1].start) if node.members else _line_indent(text, close) + "  "
        lines = [inner + it + ("," if i < len(items) - 1 or node.trailing_comma else "") for i, it in enumerate(items)]
        line_start = text.rfind("\n", 0, close) + 1
        if text[line_start:close].strip():  # `… }`: something before the bracket on its line
            at, body = close, "\n" + "\n".join(lines) + "\n" + _line_indent(text, close)
        else:
            at, body = line_start, "".join(ln + "\n" for ln in lines)
    elif node.members:
        at = comma_at if comma_at is not None else node.comma_end
        body = (", " if comma_at is not None else " ") + ", ".join(items) + ("," if node.trailing_comma else "")
        comma_at = None  # the ", " above is that comma
    else:
        at, body = node.start + 1, ", ".join(items)
    if comma_at is None:
        return text[:at] + body + text[at:]
    return text[:comma_at] + "," + text[comma_at:at] + body + text[at:]


def hand_edits(old: Any, new: Any, path: str = "") -> list[dict[str, Any]]:
    """What turns `old` into `new`, as a person makes it in an editor: `{"at": "plugins.load.paths", "append": [...]}`,
    `{"at": "plugins", "add": "entries", "value": {...}}` (a key missing in the object at `at`; "" is the top
    level), `{"at": "plugins.entries.eventlog-recall", "set": {...}}` (a value to replace)."""
    if isinstance(old, dict) and isinstance(new, dict) and old.keys() <= new.keys():  # else the whole object is new
        out: list[dict[str, Any]] = []
        for key, value in new.items():
            if key not in old:
                out.append({"at": path, "add": key, "value": value})
            else:
                out += hand_edits(old[key], value, f"{path}.{key}" if path else key)
        return out
    if isinstance(old, list) and isinstance(new, list) and new[:len(old)] == old:
        return [{"at": path, "append": new[len(old):]}] if len(new) > len(old) else []
    return [] if old == new else [{"at": path, "set": new}]


def describe_edits(edits: list[dict[str, Any]], config: Path) -> str:
    """The hand edits as lines to follow, values in JSON (valid JSON5 too)."""
    lines = [f"In {config}:"]
    for e in edits:
        where = f"`{e['at']}`" if e["at"] else "the top-level object"
        if "append" in e:
            items = ", ".join(json.dumps(v) for v in e["append"])
            lines.append(f"  - in the list {where}, append: {items}")
        elif "add" in e:
            lines.append(f"  - in {where}, add the key {json.dumps(e['add'])} with the value:")
            lines += ["      " + ln for ln in json.dumps(e["value"], indent=2).splitlines()]
        else:
            lines.append(f"  - replace the value of {where} with:")
            lines += ["      " + ln for ln in json.dumps(e["set"], indent=2).splitlines()]
    return "\n".join(lines)


def apply(text: str, edits: list[dict[str, Any]], wanted: dict[str, Any]) -> str:
    """`text` with `edits` (hand_edits) made, each on the text as the previous one left it; refused unless
    the result reads, with the `json5` package, as exactly `wanted`."""
    import json5

    for e in edits:
        root = parse(text)
        node = _find(root, e["at"])
        multiline = "\n" in text[node.start:node.end]
        inner = _line_indent(text, node.members[0][1].start) if node.members and multiline else \
            _line_indent(text, node.end - 1) + "  "
        if "append" in e and node.kind == "array":
            text = _insert(text, node, [_render(v, inner, multiline) for v in e["append"]])
        elif "add" in e and node.kind == "object":
            text = _insert(text, node, [json.dumps(e["add"]) + ": " + _render(e["value"], inner, multiline)])
        elif "set" in e:
            text = text[:node.start] + _render(e["set"], _line_indent(text, node.start), multiline) + \
                text[node.end:]
        else:
            raise Json5EditError(f"cannot make the edit at `{e['at']}`")
    try:
        if json5.loads(text) != wanted:
            raise Json5EditError("the edited text would not mean the wanted config")
    except ValueError as exc:
        raise Json5EditError(f"the edited text would not be JSON5 ({exc})") from None
    return text
