#!/usr/bin/env python3
"""Regenerate tests/vectors/dlp/keys.json — whole private keys, shared by pytest (tests/test_dlp_keys.py) and node
(eventlog/patches/openclaw/runtime/test/dlp-keys.test.mjs).

The expectations are NOT taken from an engine: every text is built as before + block + after (tests/vectors/dlp/
pemwrap.py), and the one finding expected is the block itself — BEGIN line to END line (or to the end of the key-like
run when END is missing; the whole PPK file; the age identity) — so the redacted text is before + marker + after.
Both suites also check that no 12-character base64 piece of a block survives. Growth cases are checked preview by preview in both test suites: once the key's first line is complete, the filtered
preview shows nothing of the block (it is redacted or held) and every finding on it is of the key's own rule (one alert
per leak, docs/dlp.md "Whole private keys").

    .venv/bin/python tests/vectors/dlp/make_keys.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import pemwrap as w  # noqa: E402

SINGLE_LINE = {"newlines", "crlf", "escaped-n", "markdown-fence"}  # wrappings that mean something for a one-line key
EVERY_WRAPPING = {"pkcs8-rsa", "sec1-ec", "pgp", "ppk3-ed25519-encrypted"}  # the others: a few, to keep the file small
FEW = {"newlines", "escaped-n", "json", "java-concat"}


def main() -> None:
    keys = w.synthetic_keys()
    cases: list[dict] = []
    growth: list[dict] = []

    def add(name: str, before: str, block: str, after: str, rule: str | None, html: bool = False) -> None:
        text = before + block + after
        c = {"name": name, "text": text, "html": html, "expect": [], "redacted": text}
        if rule is not None:
            c["expect"] = [{"rule": rule, "start": len(before), "end": len(before) + len(block)}]
            c["redacted"] = before + f"[REDACTED:{rule}]" + after
        cases.append(c)

    for kname, (rule, lines) in keys.items():
        for wname, wrap in w.WRAPPINGS.items():
            if (len(lines) == 1 and wname not in SINGLE_LINE) or (kname not in EVERY_WRAPPING and wname not in FEW):
                continue
            b, blk, a = wrap(lines)
            add(f"{kname}/{wname}", b, blk, a, rule)
            if len(lines) > 1 and wname in ("newlines", "escaped-n", "json", "js-concat"):
                b, blk, a = wrap(w.missing_end(lines))
                add(f"{kname}/{wname}/no-end", b, blk, a, rule)
                # the text ends inside the key (a truncated paste): redacted to the end
                add(f"{kname}/{wname}/truncated", b, blk[:len(blk) * 2 // 3], "", rule)
    # HTML (parse_mode HTML): the block inside <pre>, offsets in the payload
    rule, lines = keys["pkcs8-rsa"]
    add("pkcs8-rsa/html-pre", "<b>key</b>:\n<pre>", "\n".join(lines), "</pre>", rule, html=True)
    # a header followed by prose: the header alone (private-key-header), as before
    hdr = "-----BEGIN RSA PRIVATE KEY-----"
    add("header-in-prose", "the file starts with ", hdr, " and then the base64 body follows", "private-key-header")
    add("header-at-end", "the file starts with ", hdr, "", "private-key")
    # negatives: examples closed right away, public keys, placeholders
    for name, text in [
        ("example-word", "-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----"),
        ("example-escaped-dots", '"-----BEGIN PRIVATE KEY-----\\n...\\n-----END PRIVATE KEY-----\\n"'),
        ("example-empty", "-----BEGIN OPENSSH PRIVATE KEY-----\n-----END OPENSSH PRIVATE KEY-----"),
        ("public-key-pem", "\n".join(["-----BEGIN PUBLIC KEY-----", *keys["sec1-ec"][1][1:-1],
                                      "-----END PUBLIC KEY-----"])),
        ("pgp-public-block", "\n".join(["-----BEGIN PGP PUBLIC KEY BLOCK-----", "", *keys["dsa"][1][1:-1], "=AbCd",
                                        "-----END PGP PUBLIC KEY BLOCK-----"])),
        ("ssh-public-key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@host"),
        ("age-public-key", "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"),
        ("age-placeholder", "identities:\n  - AGE-SECRET-KEY-1xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
        ("age-no-separator", "AGE-SECRET-KEY-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"),
    ]:
        add(name, text, "", "", None)
    # previews: every growing prefix of these
    for kname, wname in [("pkcs8-rsa", "escaped-n"), ("pkcs1-rsa-encrypted", "newlines"), ("pgp", "json"),
                         ("openssh-ed25519", "java-concat"), ("sec1-ec", "escaped-crlf"),
                         ("pkcs8-encrypted", "python-concat"), ("dsa", "one-line-spaces"),
                         ("ppk3-ed25519-encrypted", "newlines"), ("age", "escaped-n")]:
        rule, lines = keys[kname]
        b, blk, a = w.WRAPPINGS[wname](lines)
        first = lines[0] if rule != "putty-private-key" else "PuTTY-User-Key-File-3: s"
        growth.append({"name": f"{kname}/{wname}", "before": b, "block": blk, "after": a, "rule": rule,
                       "from": len(b) + len(first)})
    doc = {"comment": "Whole private keys; built by make_keys.py from pemwrap.py (expectations by construction). "
                      "Synthetic keys, never real ones.", "cases": cases, "growth": growth}
    (HERE / "keys.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(cases)} cases, {len(growth)} growth texts")


if __name__ == "__main__":
    main()
