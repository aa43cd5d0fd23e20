"""`make demo`: the patched OpenClaw gateway, offline, in a short scripted conversation — then what the log knows.

1. copies the installed pinned openclaw (from `make openclaw`) and applies the patch set to the copy;
2. starts the real gateway against the loopback fake Telegram and fake LLM (preview streaming on);
3. plays a conversation in English and Russian in which the agent, streaming slowly, tries to say an API key;
4. prints the log tree, `eventlog grep`, an `eventlog sql` summary, `eventlog verify` and the DLP alert — and checks
   that no request that reached Telegram carried any 12-character piece of the key.

The key is generated at run time and lives only in memory; the gateway's own state (its session transcript holds what
the model said) is deleted at the end. The log root stays in ./demo-root/eventlog for you to explore.
"""
from __future__ import annotations

import secrets
import shutil
import string
import subprocess
import sys
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from eventlog import toolchain  # noqa: E402
from eventlog.smoke.harness import Gateway, clone_openclaw, default_openclaw_dir  # noqa: E402

WORK = REPO / "demo-root"
ALNUM = string.ascii_letters + string.digits


def say(title: str) -> None:
    print(f"\n\033[1m== {title}\033[0m" if sys.stdout.isatty() else f"\n== {title}", flush=True)


def eventlog(*args: str, root: Path) -> int:
    cmd = [sys.executable, "-m", "eventlog", *args, "--root", str(root)]
    print("$ eventlog " + " ".join(a if " " not in a else repr(a) for a in args), flush=True)
    return subprocess.run(cmd, cwd=REPO).returncode


def _settle(gw: Gateway, chat: int, mark: int, quiet: float = 3.0):
    """Wait until the bot has sent nothing for `quiet` seconds; return its last content request to the chat."""
    seen, since_change = -1, time.monotonic()
    while time.monotonic() - since_change < quiet:
        n = len(gw.telegram.requests)
        if n != seen:
            seen, since_change = n, time.monotonic()
        time.sleep(0.2)
    content = [r for r in gw.telegram.calls(since=mark) if r.method in ("sendMessage", "editMessageText")
               and str((r.body or {}).get("chat_id")) == str(chat)]
    return content[-1]


def main() -> int:
    t0 = time.monotonic()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir()
    say(f"Patching a private copy of openclaw@{toolchain.OPENCLAW_VERSION}")
    pkg = clone_openclaw(WORK / "openclaw", default_openclaw_dir())
    r = subprocess.run([sys.executable, "-m", "eventlog", "patch", "apply", "--openclaw", str(pkg)], cwd=REPO)
    if r.returncode != 0:
        print("patch apply failed", file=sys.stderr)
        return 2
    subprocess.run([sys.executable, "-m", "eventlog", "patch", "audit", "--openclaw", str(pkg)], cwd=REPO)

    key = "sk-ant-api03-" + "".join(secrets.choice(ALNUM) for _ in range(80)) + "-" + \
        "".join(secrets.choice(ALNUM) for _ in range(12)) + "AA"
    gw = Gateway(WORK / "gateway", openclaw_dir=pkg, streaming="partial")
    root = gw.eventlog_root
    say("Starting the patched gateway (offline; ~40 s here)")
    gw.start()
    print(f"gateway up in {gw.start_seconds:.0f} s; log root {root}", flush=True)
    try:
        alice = gw.new_user()
        turns = [
            ("Hi! Where are we with the Acme contract?",
             "We agreed to send the revised contract to Acme on Friday; legal reviews the liability clause first.", {}),
            ("Привет! Что мы решили по договору с поставщиком?",
             "Договор с поставщиком подписываем в понедельник, после проверки юристом. Не забудь приложение №2.", {}),
            ("And what's the staging API key again?",
             f"Sure, the staging key is {key} — keep it out of the repo.", {"chunks": 14, "delay": 0.35}),
        ]
        for text, reply, how in turns:
            gw.llm.script(reply, when=text, **how)
            say(f"user → bot: {text}")
            mark = gw.telegram.mark()
            upd = gw.send_dm(text, alice)
            gw.wait_reply(alice, since=mark, timeout=180)
            last = _settle(gw, alice, mark)
            print(f"bot → user ({last.method}, {len(gw.telegram.calls(since=mark))} Bot API calls): "
                  f"{last.text()[:200]}", flush=True)
        gw.telegram.send_reaction(user_id=alice, chat_id=alice, message_id=upd["message"]["message_id"], emoji="👍")
        time.sleep(2)
        bodies = "\n".join(str(r.body) for r in gw.telegram.requests)
        pieces = {key[i:i + 12] for i in range(len(key) - 11)}
        leaked = [p for p in pieces if p in bodies]
        previews = len(gw.telegram.calls("editMessageText"))
    finally:
        gw.stop()
        shutil.rmtree(gw.workdir / "state", ignore_errors=True)  # OpenClaw's transcript holds what the model said
        shutil.rmtree(gw.workdir / "home", ignore_errors=True)
        shutil.rmtree(gw.workdir / "logs", ignore_errors=True)
        (gw.workdir / "gateway.out").unlink(missing_ok=True)

    say("The log tree (one file per chat per UTC day)")
    for p in sorted(root.rglob("*.jsonl")):
        n = sum(1 for _ in p.open("rb"))
        print(f"  {p.relative_to(root)}  ({n} lines)")
    say("Recall")
    eventlog("grep", "договор", root=root)
    eventlog("grep", "-i", "ACME", "--json", root=root)
    say("SQL")
    eventlog("sql", "SELECT direction, count(*) AS messages, count(DISTINCT chat_id) AS chats FROM messages "
             "GROUP BY ALL ORDER BY ALL", "--format", "table", root=root)
    eventlog("sql", "SELECT method, count(*) AS calls FROM events WHERE direction = 'out' GROUP BY ALL ORDER BY 2 DESC",
             "--format", "table", root=root)
    say("DLP")
    eventlog("dlp", "alerts", root=root)
    first_alert = next((orjson.loads(l)["id"] for l in (root / "dlp" / "alerts.jsonl").read_bytes().splitlines()),
                       None) if (root / "dlp" / "alerts.jsonl").exists() else None
    if first_alert:
        eventlog("dlp", "show", first_alert, root=root)
    say("Integrity")
    eventlog("verify", root=root)
    say("Did the key reach Telegram?")
    print(f"{len(gw.telegram.requests)} requests reached the fake Telegram ({previews} preview edits); "
          f"pieces of the key among them: {len(leaked)}")
    key_on_disk = any(key.encode() in p.read_bytes() for p in WORK.rglob("*") if p.is_file() and not p.is_symlink()
                      and "openclaw" not in p.parts[len(WORK.parts):len(WORK.parts) + 1])
    print(f"the key anywhere under {WORK.relative_to(REPO)}/ (minus the package copy): {'YES' if key_on_disk else 'no'}")
    print(f"\ndemo finished in {time.monotonic() - t0:.0f} s; explore with: .venv/bin/eventlog grep WORD --root {root}")
    return 1 if leaked or key_on_disk else 0


if __name__ == "__main__":
    sys.exit(main())
