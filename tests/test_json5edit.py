"""json5edit (issue 24, item 5): the recall plugin's entries inserted into a JSON5 config without moving a byte of
what was there; the result re-read by the `json5` package (and, marked `openclaw`, by OpenClaw's own CLI)."""
from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import json5
import pytest

from eventlog.agent import install as ins
from eventlog.agent.json5edit import Json5EditError, apply, hand_edits

PDIR = Path("/home/me/.local/share/openclaw-eventlog/openclaw-plugin/eventlog-recall")
ENTRY = ins.plugin_entry(["/usr/bin/python3", "-P", "-m", "eventlog"], {"helper": True, "timeoutMs": 30000})

SHAPES = {
    "empty object": "{}",
    "comment before, inline object": "// the gateway\n{ gateway: { mode: 'local' } }",
    "multi-line, no trailing comma, comment after the last value": "{\n  a: 1 // one\n}\n",
    "multi-line, trailing comma": "{\n  a: 1, // one\n}\n",
    "plugins with a list, trailing commas": "{\n  plugins: {\n    load: { paths: ['/opt/x',], },\n  },\n}\n",
    "an exclusive allowlist in both places": "{\n  plugins: { allow: ['x'], entries: { other: { enabled: false } } },"
                                             "\n  tools: { allow: ['a',], },\n}",
    "our entry there but disabled": "{\n  plugins: {\n    entries: {\n      'eventlog-recall': { enabled: false },"
                                    " // off for now\n    },\n  },\n}\n",
    "block comment before the bracket": "{ a: [1, 2 /* two */ ] /* end */ }",
    "strings with brackets and comment markers": '{\n  s: "} // not a comment ]",\n  t: \'/* nor */\',\n}\n',
    "closing bracket after content on its line": "{\n  a: {\n    b: 1 }, c: 2 }",
}


def _subsequence(small: str, big: str) -> bool:
    it = iter(big)
    return all(ch in it for ch in small)


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_the_entries_go_in_and_nothing_else_moves(text: str) -> None:
    doc = json5.loads(text)
    wanted = ins.add_entries(copy.deepcopy(doc), PDIR, ENTRY)
    out = apply(text, hand_edits(doc, wanted), wanted)
    assert json5.loads(out) == wanted
    if "'eventlog-recall'" not in text:  # a replaced value is not an insertion
        assert _subsequence(text, out)  # only insertions: every byte of the original, in order
    for marker in ("// the gateway", "// one", "// off for now", "/* two */", "/* end */", "/* nor */"):
        assert (marker in out) == (marker in text)
    again = apply(out, hand_edits(json5.loads(out), wanted), wanted)
    assert again == out  # nothing left to do


def test_a_disabled_entry_is_switched_on_in_place() -> None:
    text = SHAPES["our entry there but disabled"]
    doc = json5.loads(text)
    wanted = ins.add_entries(copy.deepcopy(doc), PDIR, ENTRY)
    out = apply(text, hand_edits(doc, wanted), wanted)
    assert "'eventlog-recall': { enabled: true," in out and "// off for now" in out


def test_an_old_entry_with_keys_ours_lacks_is_replaced_whole() -> None:
    text = "{\n  plugins: {\n    entries: {\n      'eventlog-recall': { enabled: false, stale: 1 }, // old\n    },\n  },\n}\n"
    doc = json5.loads(text)
    wanted = ins.add_entries(copy.deepcopy(doc), PDIR, ENTRY)
    edits = hand_edits(doc, wanted)
    assert {"at": "plugins.entries.eventlog-recall", "set": ENTRY} in edits
    out = apply(text, edits, wanted)
    assert json5.loads(out) == wanted and "stale" not in out and "// old" in out


@pytest.mark.parametrize("text", [
    "{ \\u0070lugins: {} }",        # an escaped identifier: json5 reads `plugins`, the scanner does not
    "{ a: NaN }",                    # NaN never equals itself: the re-read cannot confirm the result
    "{ a: 1 } trailing",             # not one JSON5 object
], ids=["escaped key", "NaN", "text after the object"])
def test_what_cannot_be_confirmed_is_refused(text: str) -> None:
    doc: dict = {} if text.endswith("trailing") else json5.loads(text)
    wanted = ins.add_entries(copy.deepcopy(doc), PDIR, ENTRY)
    with pytest.raises(Json5EditError):
        apply(text, hand_edits(doc, wanted), wanted)


@pytest.mark.openclaw
def test_openclaw_reads_the_edited_config(tmp_path: Path) -> None:
    """OpenClaw's own `openclaw config get` (the pinned release, offline) on a commented config after install."""
    from eventlog.toolchain import find_node, pinned_openclaw_dir

    cfg = tmp_path / "openclaw.json"
    cfg.write_text("// mine\n{\n  gateway: { mode: 'local', }, // loopback\n  plugins: { load: { paths: [], }, },\n}\n")
    env = {"EVENTLOG_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path / "home")}
    res = ins.install(cfg, env=env)
    assert res["config_changed"] and res["config_format"] == "json5" and "// loopback" in cfg.read_text()
    p = subprocess.run([str(find_node()), str(pinned_openclaw_dir() / "openclaw.mjs"), "config", "get",
                        "plugins.entries.eventlog-recall"], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": os.environ["PATH"], "HOME": env["HOME"], "OPENCLAW_CONFIG_PATH": str(cfg),
                            "OPENCLAW_STATE_DIR": str(tmp_path / "state")})
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == res["entry"]
