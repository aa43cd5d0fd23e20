"""Issue 13 without a gateway: `eventlog agent install|uninstall|status`, the tool backend (scope, redaction, caps,
soft failures, recall:query events), context, and the plugin's JavaScript under real Node with a fake plugin API."""
from __future__ import annotations

import json
import os
import secrets
import string
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from eventlog.agent import install as ins
from eventlog.agent.tool import TEXT_CAP, handle
from eventlog.cli.main import cli
from eventlog.store.writer import EventLog

ALNUM = string.ascii_letters + string.digits
REPO = Path(__file__).resolve().parents[1]


def planted_key() -> str:
    return "sk-ant-api03-" + "".join(secrets.choice(ALNUM) for _ in range(80)) + "-" + \
        "".join(secrets.choice(ALNUM) for _ in range(12)) + "AA"


def msg(chat: str, ts: str, text: str, direction: str = "in", **kw: Any) -> dict[str, Any]:
    ev = {"event": "message:received" if direction == "in" else "message:sent", "channel": "telegram",
          "chat_id": chat, "ts": ts, "direction": direction, "text": text}
    if direction == "in":
        ev["from"] = {"id": int(chat) if chat.lstrip("-").isdigit() else 1, "username": f"u{chat}"}
    ev.update(kw)
    return ev


@pytest.fixture
def log(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp_path / "root"
    w = EventLog(root)
    key = planted_key()
    evs = [msg("111", "2026-11-28T10:00:00Z", "The wifi password is hunter-blue-42"),
           msg("111", "2026-11-28T10:00:05Z", "<b>Noted</b> the wifi &amp; router", "out",
               payload={"parse_mode": "HTML"}),
           msg("111", "2026-11-29T09:00:00Z", f"my anthropic key is {key} keep it"),
           msg("111", "2026-11-29T09:01:00Z", "unrelated chatter about lunch"),
           msg("222", "2026-11-29T11:00:00Z", "Bob's locker code is tangerine 7731")]
    ids = [w.append(e)["id"] for e in evs]
    return root, {"ids": ids, "key": key}


def system_events(root: Path) -> list[dict[str, Any]]:
    out = []
    for p in sorted((root / "raw" / "system").rglob("*.jsonl")):
        out += [orjson.loads(ln) for ln in p.read_bytes().splitlines()]
    return out


# -- the tool backend ---------------------------------------------------------------------------------------------------

def test_search_ranks_redacts_and_records(log: tuple[Path, dict[str, Any]]) -> None:
    root, d = log
    out = handle({"tool": "search", "args": {"query": "what was the wifi password?", "mode": "text"}, "chat": "111",
                  "requester": "111", "t0_ms": 0, "origin": {"chat_from": "nativeChannelId"}}, root)
    assert out["ok"] and out["scope"] == "chat" and out["hits"] == 2
    lines = out["text"].splitlines()
    assert "2 message(s) match [wifi, password] in this chat (telegram 111)" in lines[0]
    # both words beat one word; the line format; HTML of sent messages shown as text
    # a password stated in prose is a secret to the DLP rules (issue 16): it comes back redacted
    assert lines[1] == f"[{d['ids'][0]}] 2026-11-28 10:00Z in @u111: The wifi password is [REDACTED:password-prose]"
    assert lines[2] == f"[{d['ids'][1]}] 2026-11-28 10:00Z out bot: Noted the wifi & router"
    out = handle({"tool": "search", "args": {"query": "anthropic key"}, "chat": "111"}, root)
    assert "[REDACTED:anthropic-api-key]" in out["text"] and d["key"][:20] not in out["text"]
    recs = system_events(root)
    assert [r["event"] for r in recs] == ["recall:query", "recall:query"]
    r = recs[0]
    assert r["channel"] == "system" and r["chat_id"] == "eventlog" and r["tool"] == "eventlog_search"
    assert r["args"] == {"query": "what was the wifi password?", "mode": "text"} and r["from"] == {"id": "111"}
    assert r["hits"] == 2 and r["payload"] == {"ids": d["ids"][:2]} and r["scope"] == "chat" and r["scope_chat"] == "111"
    assert r["latency_ms"] > 10**9  # t0_ms = 0: latency counts from when the plugin got the call
    assert r["origin"] == {"chat_from": "nativeChannelId"}
    assert d["key"][:20] not in json.dumps(recs)


def test_scope_comes_from_the_request_not_the_model(log: tuple[Path, dict[str, Any]]) -> None:
    root, _ = log
    out = handle({"tool": "search", "args": {"query": "locker", "scope": "all", "mode": "text"}, "chat": "111"}, root)
    assert out["ok"] and out["hits"] == 0 and "only for the owner" in out["text"] and "tangerine" not in out["text"]
    out = handle({"tool": "search", "args": {"query": "locker", "scope": "all", "mode": "text"}, "chat": "111",
                  "all_allowed": True}, root)
    assert out["hits"] == 1 and "tangerine" in out["text"] and "in all chats" in out["text"]
    # no chat from the gateway: nothing is searched
    out = handle({"tool": "search", "args": {"query": "wifi", "chat": "111"}, "chat": None}, root)
    assert not out["ok"] and "no chat id" in out["text"]


def test_context_is_scoped_and_ordered(log: tuple[Path, dict[str, Any]]) -> None:
    root, d = log
    out = handle({"tool": "context", "args": {"id": d["ids"][2], "before": 5, "after": 5}, "chat": "111"}, root)
    lines = out["text"].splitlines()[1:]
    assert [ln.lstrip("> ").split("]")[0][1:] for ln in lines] == d["ids"][:4]  # across day files, in order
    assert lines[2].startswith("> ") and "[REDACTED:" in lines[2]
    out = handle({"tool": "context", "args": {"id": d["ids"][4]}, "chat": "111"}, root)
    assert out["hits"] == 0 and "tangerine" not in out["text"]
    out = handle({"tool": "context", "args": {"id": "not-an-id"}, "chat": "111"}, root)
    assert not out["ok"] and "not an event id" in out["text"]


def test_bad_arguments_and_missing_log_fail_soft(log: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, _ = log
    for args, words in (({}, "query is required"), ({"query": "x", "limit": 0}, "limit"),
                        ({"query": "x", "mode": "magic"}, "mode"), ({"query": "x", "since": "someday"}, "since"),
                        ({"query": "x", "direction": "sideways"}, "direction")):
        out = handle({"tool": "search", "args": args, "chat": "111"}, root)
        assert not out["ok"] and words in out["text"], out
    out = handle({"tool": "search", "args": {"query": "x"}, "chat": "111"}, tmp_path / "nothing")
    assert not out["ok"] and "no event log" in out["text"]
    # failures are on the record too, without the model's text in metadata
    assert any(not r["ok"] and r["error_kind"] == "bad_arguments" for r in system_events(root))


def test_hybrid_runs_eventlog_search_within_the_chat(log: tuple[Path, dict[str, Any]]) -> None:
    root, d = log
    out = handle({"tool": "search", "args": {"query": "router and wireless network", "mode": "hybrid"},
                  "chat": "111"}, root)
    assert out["ok"] and out["mode_used"] == "hybrid" and "not available" not in out["text"], out["text"]
    assert d["ids"][1] in out["ids"]  # "Noted the wifi & router": found by meaning and words
    assert d["ids"][4] not in out["ids"]  # chat 222 is out of scope, whatever the command returns
    assert d["key"][:20] not in out["text"]  # redacted like every other mode


def test_hybrid_falls_back_to_text_and_says_so(log: tuple[Path, dict[str, Any]]) -> None:
    root, _ = log
    (root / "index").write_bytes(b"not a directory")  # a damaged root: the search index cannot be read or built
    out = handle({"tool": "search", "args": {"query": "wifi", "mode": "hybrid"}, "chat": "111"}, root)
    assert out["mode_used"] == "text" and "hybrid search is not available" in out["text"] and out["hits"] == 2
    assert "the hybrid search failed: " in out["text"], out["text"]


def test_hybrid_hits_carry_the_whole_event(log: tuple[Path, dict[str, Any]]) -> None:
    """In process: the hit line is built from the logged event (sender, HTML), not from a search result's fields."""
    root, d = log
    out = handle({"tool": "search", "args": {"query": "wifi password", "mode": "hybrid"}, "chat": "111"}, root)
    line = next(ln for ln in out["text"].splitlines() if ln.startswith(f"[{d['ids'][0]}]"))
    assert " in @u111: " in line, line  # the sender; the search hit alone has no `from`
    line = next(ln for ln in out["text"].splitlines() if ln.startswith(f"[{d['ids'][1]}]"))
    assert "<b>" not in line and "Noted the wifi & router" in line, line


def test_hybrid_leaves_out_the_question_and_still_fills_the_limit(log: tuple[Path, dict[str, Any]]) -> None:
    root, d = log
    req = {"tool": "search", "args": {"query": "unrelated chatter about lunch", "mode": "hybrid", "limit": 1},
           "chat": "111"}
    assert handle(req, root)["ids"] == [d["ids"][3]]  # the best hit is the asker's newest message...
    out = handle({**req, "requester": "111"}, root)  # ...which is the question being answered: left out
    assert out["hits"] == 1 and out["ids"] != [d["ids"][3]] and out["ids"][0] in d["ids"][:3], out


def test_hybrid_without_the_model_ranks_by_bm25_and_says_so(log: tuple[Path, dict[str, Any]], monkeypatch) -> None:
    from eventlog.search import embed

    monkeypatch.setattr(embed, "available", lambda name=None: "embedding model not installed (test)")
    root, d = log
    out = handle({"tool": "search", "args": {"query": "wifi router", "mode": "hybrid"}, "chat": "111"}, root)
    assert out["ok"] and out["mode_used"] == "bm25" and "fell back to bm25" in out["text"], out["text"]
    assert d["ids"][1] in out["ids"]


def test_fuzzy_mode_tolerates_typos(log: tuple[Path, dict[str, Any]]) -> None:
    root, d = log
    out = handle({"tool": "search", "args": {"query": "pasword", "mode": "fuzzy"}, "chat": "111"}, root)
    assert out["hits"] == 1 and out["ids"] == [d["ids"][0]]
    out = handle({"tool": "search", "args": {"query": "pasword", "mode": "text"}, "chat": "111"}, root)
    assert out["hits"] == 0


def test_output_is_capped(tmp_path: Path) -> None:
    root = tmp_path / "root"
    w = EventLog(root)
    w.append_many([msg("5", f"2026-11-2{i % 9}T10:00:{i % 60:02d}Z", "needle " + "x" * 3000) for i in range(60)])
    out = handle({"tool": "search", "args": {"query": "needle", "limit": 50, "mode": "text"}, "chat": "5"}, root)
    assert out["hits"] == 60 and len(out["text"]) <= TEXT_CAP + 200
    assert "more not shown" in out["text"] and len(out["ids"]) < 50


def test_cli_search_exit_codes(log: tuple[Path, dict[str, Any]]) -> None:
    root, _ = log
    run = CliRunner().invoke
    r = run(cli, ["agent", "search", "wifi", "--chat", "111", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 0 and "wifi" in r.output
    r = run(cli, ["agent", "search", "zebra", "--chat", "111", "--mode", "text", "--root", str(root)],
            catch_exceptions=False)
    assert r.exit_code == 1
    r = run(cli, ["agent", "search", "wifi", "--root", str(root)], catch_exceptions=False)
    assert r.exit_code == 2
    assert not (root / "raw" / "system").exists()  # --no-record is the CLI's default


# -- install / uninstall / status --------------------------------------------------------------------------------------

def _env(tmp_path: Path) -> dict[str, str]:
    return {"EVENTLOG_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path / "home")}


def test_install_is_idempotent_and_reversible_byte_for_byte(tmp_path: Path) -> None:
    env = _env(tmp_path)
    cfg = tmp_path / "openclaw.json"
    original = b'{\n    "gateway": {"mode": "local"},\n    "name": "caf\xc3\xa9",\n    "plugins": {"allow": ["x"]}\n}\n'
    cfg.write_bytes(original)
    r1 = ins.install(cfg, env=env)
    after = cfg.read_bytes()
    doc = json.loads(after)
    pdir = ins.plugin_dir(env)
    assert r1["config_changed"] and doc["plugins"]["load"]["paths"] == [str(pdir)]
    assert doc["plugins"]["entries"]["eventlog-recall"]["config"]["command"][1:] == ["-P", "-m", "eventlog"]
    assert doc["plugins"]["allow"] == ["x", "eventlog-recall"] and doc["name"] == "café"
    assert after.endswith(b"}\n") and b'\n    "gateway"' in after  # the file's own indent and newline
    assert sorted(p.name for p in pdir.iterdir()) == sorted(ins.PLUGIN_FILES)
    r2 = ins.install(cfg, env=env)
    assert not r2["config_changed"] and not r2["plugin_changed"] and cfg.read_bytes() == after
    st = ins.agent_status(cfg, env=env)
    assert st["ok"] and st["plugin_files"] == "ok" and st["registered"]["entry"], st
    from eventlog.doctor import check_agent
    assert check_agent(cfg, env=env)["ok"]
    (pdir / ins.PLUGIN_FILES[0]).unlink()  # doctor names a broken install
    bad = check_agent(cfg, env=env)
    assert not bad["ok"] and "eventlog agent install" in bad["detail"], bad
    ins.install(cfg, env=env)
    res = ins.uninstall(cfg, env=env)
    assert "byte for byte" in res["action"] and cfg.read_bytes() == original
    assert not pdir.exists() and not list((tmp_path / "data" / "agent").iterdir())
    assert not ins.agent_status(cfg, env=env)["ok"]
    assert check_agent(cfg, env=env)["ok"] and "not installed" in check_agent(cfg, env=env)["detail"]


def test_uninstall_after_someone_else_edited_removes_only_ours(tmp_path: Path) -> None:
    env = _env(tmp_path)
    cfg = tmp_path / "openclaw.json"
    cfg.write_text('{"a": 1}')
    ins.install(cfg, env=env)
    doc = json.loads(cfg.read_text())
    doc["b"] = 2
    cfg.write_text(json.dumps(doc))
    res = ins.uninstall(cfg, env=env)
    assert "removed only this plugin's entries" in res["action"]
    assert json.loads(cfg.read_text()) == {"a": 1, "b": 2}


def test_install_creates_a_missing_config_and_uninstall_removes_it(tmp_path: Path) -> None:
    env = _env(tmp_path)
    cfg = tmp_path / "state" / "openclaw.json"
    ins.install(cfg, env=env)
    assert json.loads(cfg.read_text())["plugins"]["entries"]["eventlog-recall"]["enabled"] is True
    ins.uninstall(cfg, env=env)
    assert not cfg.exists()


def test_config_resolution_order(tmp_path: Path) -> None:
    env = {"OPENCLAW_CONFIG_PATH": str(tmp_path / "a.json"), "OPENCLAW_STATE_DIR": str(tmp_path / "s")}
    assert ins.resolve_config("x.json", env)[1] == "--config"
    assert ins.resolve_config(None, env) == (tmp_path / "a.json", "$OPENCLAW_CONFIG_PATH")
    assert ins.resolve_config(None, {"OPENCLAW_STATE_DIR": str(tmp_path / "s")})[0] == tmp_path / "s" / "openclaw.json"
    assert ins.resolve_config(None, {})[0] == Path.home() / ".openclaw" / "openclaw.json"


# A config as a person writes it for OpenClaw (JSON5: comments, unquoted keys, trailing commas, single quotes).
JSON5_CONFIG = """// my gateway
{
  gateway: { mode: 'local', port: 18789, }, // loopback only
  /* the bot */
  channels: { telegram: { enabled: true, botToken: "123:abc", }, },
  plugins: {
    load: { paths: ["/opt/other-plugin",], },
  },
}
"""


COMMENTS = ("// my gateway", "// loopback only", "/* the bot */")


def test_json5_config_is_edited_in_place_keeping_every_comment(tmp_path: Path) -> None:
    import json5

    env = _env(tmp_path)
    cfg = tmp_path / "openclaw.json"
    cfg.write_text(JSON5_CONFIG)
    r = CliRunner().invoke(cli, ["agent", "install", "--config", str(cfg)], env=env, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "JSON5: comments and layout kept" in r.stdout
    after = cfg.read_text()
    pdir = ins.plugin_dir(env)
    # only insertions: every line of the original is still there, in order, comments and trailing commas included
    kept = iter(after.splitlines())
    for line in JSON5_CONFIG.splitlines():
        if "paths:" in line:
            assert line.replace('"/opt/other-plugin",', f'"/opt/other-plugin", {json.dumps(str(pdir))},') in after
            continue
        assert any(line == got for got in kept), line
    assert all(c in after for c in COMMENTS)
    doc = json5.loads(after)
    assert doc["plugins"]["load"]["paths"] == ["/opt/other-plugin", str(pdir)]
    assert doc["plugins"]["entries"]["eventlog-recall"]["enabled"] is True
    assert doc["channels"]["telegram"]["botToken"] == "123:abc"  # the rest means what it meant
    st = CliRunner().invoke(cli, ["agent", "status", "--config", str(cfg), "--json"], env=env, catch_exceptions=False)
    assert st.exit_code == 0 and json.loads(st.stdout)["config_format"] == "json5"
    again = CliRunner().invoke(cli, ["agent", "install", "--config", str(cfg)], env=env, catch_exceptions=False)
    assert again.exit_code == 0 and "already registered, unchanged" in again.stdout and cfg.read_text() == after
    un = CliRunner().invoke(cli, ["agent", "uninstall", "--config", str(cfg)], env=env, catch_exceptions=False)
    assert un.exit_code == 0 and "byte for byte" in un.stdout and cfg.read_text() == JSON5_CONFIG


# `\u0070lugins` is `plugins` to JSON5, and a key spelled with an escape is past what json5edit scans: the case
# where the edit cannot be made with certainty (so are NaN values, which no re-read can compare).
UNSURE_CONFIG = JSON5_CONFIG.replace("  plugins: {", "  \\u0070lugins: {")


def _hand_edit(text: str, pdir: Path, entry: dict) -> str:
    """What the printed instructions ask for, done the way a person does it in an editor: two insertions, every
    comment and trailing comma left where it was."""
    text = text.replace('paths: ["/opt/other-plugin",],', f'paths: ["/opt/other-plugin", {json.dumps(str(pdir))},],')
    return text.replace("  },\n}\n", f"    entries: {{ 'eventlog-recall': {json.dumps(entry)}, }}, // recall\n  }},\n}}\n")


def test_json5_config_that_cannot_be_edited_surely_gets_the_hand_edit(tmp_path: Path) -> None:
    import json5

    env = _env(tmp_path)
    cfg = tmp_path / "openclaw.json"
    cfg.write_text(UNSURE_CONFIG)
    assert "plugins" in json5.loads(UNSURE_CONFIG)
    r = CliRunner().invoke(cli, ["agent", "install", "--config", str(cfg)], env=env, catch_exceptions=False)
    assert r.exit_code == 1, r.output
    assert cfg.read_text() == UNSURE_CONFIG  # untouched
    pdir = ins.plugin_dir(env)
    assert sorted(p.name for p in pdir.iterdir()) == sorted(ins.PLUGIN_FILES)  # the plugin files are there
    assert f'in the list `plugins.load.paths`, append: "{pdir}"' in r.stdout
    assert 'in `plugins`, add the key "entries"' in r.stdout and '"eventlog-recall": {' in r.stdout
    j = CliRunner().invoke(cli, ["agent", "install", "--config", str(cfg), "--json"], env=env, catch_exceptions=False)
    res = json.loads(j.stdout)
    assert j.exit_code == 1 and res["config_format"] == "json5" and not res["config_changed"] and res["edit_refused"]
    assert res["hand_edits"] == [{"at": "plugins.load.paths", "append": [str(pdir)]},
                                 {"at": "plugins", "add": "entries", "value": {"eventlog-recall": res["entry"]}}]
    st = CliRunner().invoke(cli, ["agent", "status", "--config", str(cfg)], env=env, catch_exceptions=False)
    assert st.exit_code == 1 and "not registered" in st.stdout


def test_agent_status_ok_after_a_hand_edit_of_a_json5_config(tmp_path: Path) -> None:
    env = _env(tmp_path)
    cfg = tmp_path / "openclaw.json"
    cfg.write_text(UNSURE_CONFIG)
    res = json.loads(CliRunner().invoke(cli, ["agent", "install", "--config", str(cfg), "--json"], env=env,
                                        catch_exceptions=False).stdout)
    edited = _hand_edit(UNSURE_CONFIG, ins.plugin_dir(env), res["entry"])
    assert "// loopback only" in edited and "// recall" in edited and edited != UNSURE_CONFIG
    with pytest.raises(json.JSONDecodeError):
        json.loads(edited)  # still JSON5, not JSON
    cfg.write_text(edited)
    st = CliRunner().invoke(cli, ["agent", "status", "--config", str(cfg), "--json"], env=env, catch_exceptions=False)
    assert st.exit_code == 0, st.stdout
    got = json.loads(st.stdout)
    assert got["ok"] and got["config_format"] == "json5" and got["registered"]["entry"] and not got["problems"]
    doc = CliRunner().invoke(cli, ["doctor", "--json", "--root", str(tmp_path / "log")],
                             env={**env, "OPENCLAW_CONFIG_PATH": str(cfg)}, catch_exceptions=False)
    agent = [c for c in map(json.loads, doc.stdout.splitlines()) if c["check"] == "agent"]
    assert agent == [{"check": "agent", "ok": True, "detail": agent[0]["detail"]}]
    assert "registered" in agent[0]["detail"]
    again = CliRunner().invoke(cli, ["agent", "install", "--config", str(cfg)], env=env, catch_exceptions=False)
    assert again.exit_code == 0 and "already registered, unchanged" in again.stdout
    assert cfg.read_text() == edited
    un = CliRunner().invoke(cli, ["agent", "uninstall", "--config", str(cfg)], env=env, catch_exceptions=False)
    assert un.exit_code == 2 and "remove by hand" in un.stderr and cfg.read_text() == edited


def test_a_config_that_is_not_even_json5_is_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "openclaw.json"
    cfg.write_text("{ gateway: ")
    r = CliRunner().invoke(cli, ["agent", "install", "--config", str(cfg)], env=_env(tmp_path), catch_exceptions=False)
    assert r.exit_code == 2 and "not valid JSON5" in r.stderr and r.stderr.count("\n") == 1
    st = ins.agent_status(cfg, env=_env(tmp_path))
    assert not st["ok"] and "not valid JSON5" in st["config_error"]


def test_print_lists_the_entries(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["agent", "install", "--print"], env=_env(tmp_path), catch_exceptions=False)
    assert r.exit_code == 0 and json.loads(r.output)["plugins"]["entries"]["eventlog-recall"]["enabled"]
    assert not (tmp_path / "data" / "openclaw-plugin").exists()  # --print changes nothing


def test_plugin_files_ship_as_package_data() -> None:
    files = ins.packaged_plugin()
    manifest = json.loads(files["openclaw.plugin.json"])
    assert manifest["id"] == ins.PLUGIN_ID and manifest["contracts"]["tools"] == list(ins.TOOL_NAMES)
    assert json.loads(files["package.json"])["openclaw"]["extensions"] == ["./index.mjs"]
    import tomllib
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["eventlog"]
    assert {"agent/plugin/*.mjs", "agent/plugin/*.json"} <= set(data)


# -- the plugin's JavaScript, under real Node --------------------------------------------------------------------------

DRIVER = r"""
import plugin, { scopeFromContext } from %(index)s;
const cfg = JSON.parse(process.argv[2]);
const ctxs = JSON.parse(process.argv[3]);
const tools = [];
plugin.register({ pluginConfig: cfg, registerTool: (factory, opts) => tools.push({ factory, opts }) });
const out = [];
for (const [toolName, ctx, params] of ctxs) {
  const t = tools.find((x) => x.opts.name === toolName).factory(ctx);
  const r = await t.execute("call-1", params);
  out.push({ name: t.name, catalogMode: t.catalogMode, hide: t.hideFromChannelProgress,
             required: t.parameters.required, desc: t.description, text: r.content[0].text, details: r.details,
             scope: scopeFromContext(ctx, cfg) });
}
console.log(JSON.stringify(out));
process.exit(0);
"""


def run_plugin(node: Path, tmp_path: Path, cfg: dict[str, Any], calls: list[Any], env: dict[str, str]) -> Any:
    index = REPO / "eventlog" / "agent" / "plugin" / "index.mjs"
    drv = tmp_path / "driver.mjs"
    drv.write_text(DRIVER % {"index": json.dumps(index.as_uri())})
    # The gateway's working directory may hold the log root `eventlog/` (~/.openclaw): it must not shadow the package.
    (tmp_path / "eventlog").mkdir(exist_ok=True)
    p = subprocess.run([str(node), str(drv), json.dumps(cfg), json.dumps(calls)], capture_output=True, text=True,
                       env=dict(os.environ, **env), timeout=180, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("helper", [True, False])
def test_plugin_under_node(helper: bool, log: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    from eventlog.smoke.harness import HarnessError, check_install

    try:
        node, _ = check_install()
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)
    root, d = log
    cfg = {"command": ins.default_command(), "helper": helper, "allowAll": ["999"]}
    dm = {"nativeChannelId": "111", "requesterSenderId": "111", "senderIsOwner": False,
          "deliveryContext": {"channel": "telegram", "to": "telegram:111", "accountId": "default"}}
    by_target = {"requesterSenderId": "999", "deliveryContext": {"channel": "telegram", "to": "telegram:222"}}
    other_channel = {"nativeChannelId": "111", "deliveryContext": {"channel": "discord", "to": "111"}}
    out = run_plugin(node, tmp_path, cfg, [
        ["eventlog_search", dm, {"query": "wifi password", "scope": "all", "chat": "222", "mode": "text"}],
        ["eventlog_search", by_target, {"query": "locker", "scope": "all", "mode": "text"}],
        ["eventlog_context", dm, {"id": d["ids"][0], "before": 0, "after": 1}],
        ["eventlog_search", other_channel, {"query": "wifi"}],
    ], {"EVENTLOG_ROOT": str(root)})
    s, allowed, c, other = out
    assert s["name"] == "eventlog_search" and s["catalogMode"] == "direct-only" and s["hide"] is True
    assert s["required"] == ["query"] and "remember" in s["desc"] and "cannot see" in s["desc"].lower()
    assert s["details"]["ok"] and s["details"]["hits"] == 2 and s["scope"]["chat"] == "111"
    assert "only for the owner" in s["text"] and "tangerine" not in s["text"]
    assert allowed["scope"]["allAllowed"] and allowed["scope"]["chat"] == "222" and "tangerine" in allowed["text"]
    assert c["text"].splitlines()[1].startswith(f"> [{d['ids'][0]}]") and len(c["text"].splitlines()) == 3
    assert not other["details"]["ok"] and "no chat id" in other["text"]
    recs = [r for r in system_events(root) if r["event"] == "recall:query"]
    assert len(recs) == 4 and recs[0]["origin"]["chat_from"] == "nativeChannelId"
    assert recs[1]["origin"]["chat_from"] == "deliveryContext.to" and recs[1]["origin"]["allow_listed"] is True


def test_plugin_fails_soft(log: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    from eventlog.smoke.harness import check_install

    node, _ = check_install()
    root, _ = log
    dm = {"nativeChannelId": "111", "deliveryContext": {"channel": "telegram", "to": "111"}}
    slow = tmp_path / "slow.sh"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    for cfg, words in (({"command": [str(tmp_path / "missing")], "helper": False}, "ENOENT"),
                       ({"command": [str(tmp_path / "missing")], "helper": True}, "ENOENT"),
                       ({"command": [str(slow)], "helper": False, "timeoutMs": 1000}, "no answer within 1s"),
                       ({"command": [str(slow)], "helper": True, "timeoutMs": 1000}, "no answer within 1s")):
        (out,) = run_plugin(node, tmp_path, cfg, [["eventlog_search", dm, {"query": "wifi"}]],
                            {"EVENTLOG_ROOT": str(root)})
        assert not out["details"]["ok"] and words in out["text"] and "could not check the history" in out["text"]


def test_the_question_being_answered_is_left_out(log: tuple[Path, dict[str, Any]]) -> None:
    root, d = log
    # "unrelated chatter about lunch" is the newest message 111 sent: the one the agent is answering
    out = handle({"tool": "search", "args": {"query": "lunch", "mode": "text"}, "chat": "111", "requester": "111"}, root)
    assert out["ok"] and out["hits"] == 0
    out = handle({"tool": "search", "args": {"query": "lunch", "mode": "text"}, "chat": "111", "requester": "5"}, root)
    assert out["ids"] == [d["ids"][3]]


@pytest.mark.parametrize("sub", ["install", "uninstall", "status", "call", "serve", "search", "context"])
def test_every_agent_command_has_help_with_an_example(sub: str) -> None:
    r = CliRunner().invoke(cli, ["agent", sub, "--help"], catch_exceptions=False)
    assert r.exit_code == 0 and "Example" in r.output and "eventlog agent" in r.output


def test_call_and_serve_speak_json(log: tuple[Path, dict[str, Any]]) -> None:
    root, d = log
    run = CliRunner().invoke
    r = run(cli, ["agent", "call", "--root", str(root)], input="not json", catch_exceptions=False)
    assert r.exit_code == 2 and "not JSON" in r.output
    req = {"tool": "search", "args": {"query": "wifi", "mode": "text"}, "chat": "111"}
    r = run(cli, ["agent", "serve", "--root", str(root)],
            input=json.dumps({**req, "seq": 7}) + "\n\nnope\n" + json.dumps(req) + "\n", catch_exceptions=False)
    lines = [json.loads(ln) for ln in r.output.splitlines()]
    assert r.exit_code == 0 and len(lines) == 3 and lines[2]["ok"]
    assert lines[0]["seq"] == 7 and lines[0]["ids"] == [d["ids"][1], d["ids"][0]]  # equal scores: newest first
    assert not lines[1]["ok"] and "seq" not in lines[1]


def test_status_cli_exit_codes(tmp_path: Path) -> None:
    env = _env(tmp_path)
    cfg = tmp_path / "openclaw.json"
    run = CliRunner().invoke
    r = run(cli, ["agent", "status", "--config", str(cfg)], env=env, catch_exceptions=False)
    assert r.exit_code == 1 and "not registered" in r.output
    assert run(cli, ["agent", "install", "--config", str(cfg)], env=env, catch_exceptions=False).exit_code == 0
    r = run(cli, ["agent", "status", "--config", str(cfg), "--json"], env=env, catch_exceptions=False)
    assert r.exit_code == 0 and json.loads(r.output)["ok"] is True


def test_search_reads_recent_windows_first(tmp_path: Path) -> None:
    from datetime import date, datetime, timezone

    from eventlog.agent.search import rank, windows

    def day(y: int, m: int, d: int) -> datetime:  # windows are exact instants: UTC day starts
        return datetime(y, m, d, tzinfo=timezone.utc)

    today = date(2026, 11, 30)
    assert windows(None, None, today) == [(day(2026, 11, 24), None), (day(2026, 10, 31), None),
                                          (day(2026, 8, 31), None), (None, None)]
    assert windows(day(2026, 11, 1), None, today) == [(day(2026, 11, 24), None), (day(2026, 11, 1), None)]
    root = tmp_path / "root"
    w = EventLog(root)
    old = w.append(msg("9", "2026-01-05T10:00:00Z", "deploy plan alpha"))["id"]
    new = [w.append(msg("9", f"2026-11-2{d}T10:00:00Z", f"deploy plan beta {d}"))["id"] for d in (5, 8)]
    only_old = w.append(msg("9", "2026-02-01T10:00:00Z", "the vintage word"))["id"]
    r = rank(root, "deploy plan", chats=("9",), limit=2, today=today)
    assert [f.event["id"] for f in r.hits] == new[::-1] and r.searched_since == day(2026, 11, 24)
    r = rank(root, "deploy plan", chats=("9",), limit=3, today=today)
    assert [f.event["id"] for f in r.hits] == [new[1], new[0], old] and r.searched_since is None
    r = rank(root, "vintage", chats=("9",), today=today)
    assert [f.event["id"] for f in r.hits] == [only_old] and r.total == 1
