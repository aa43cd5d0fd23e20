#!/usr/bin/env python3
"""The patterns of the whole-private-key rules in eventlog/dlp/rules.json (docs/dlp.md, "Whole private keys"), written
out of named parts so they can be read and changed; rules.json holds the result (tests/test_dlp_keys.py checks that
the two agree). Every part is in the portable subset (`eventlog dlp rules --check`), matches no NUL (the log re-scan
joins texts with "\\n\\0\\n"), and each repetition starts on a character its neighbours cannot take, so a failing
match backtracks a bounded distance (tools/bench/dlp_keys_adversarial.py measures it).

    .venv/bin/python tools/dlp_key_patterns.py            # print the patterns
    .venv/bin/python tools/dlp_key_patterns.py --write    # put them into eventlog/dlp/rules.json (format kept)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

RULES = Path(__file__).resolve().parents[1] / "eventlog" / "dlp" / "rules.json"

HDR = r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"   # RFC 7468 labels, OpenSSH, PGP armor
END = r"-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
Q = "[\"'`]"
# between two string literals: "…" + "…", "…"\n    "…" (Python, C), "…" +\n "…" (Java, JS)
CAT = Q + r"[ \t\r\n]*(?:\+[ \t\r\n]*)?" + Q
CATP = Q + r"[ \t\r\n]*(?:\+[ \t\r\n]*)?"            # the start of one, cut by the end of a preview
ESC = r"\\{1,3}[nr]"                                  # \n, \r, \\n (JSON inside a string), \\\n
SEPS = r"(?:[ \t\r\n]|" + ESC + "|" + CAT + ")+"      # what may stand between two lines of a key
B64 = r"[A-Za-z0-9+/=]"
# the end of the text: nothing follows but an astral character (both engines' `[\x01-\uffff]` stops at U+FFFF) or NUL
# (the batch separator, where a superset of candidates is all the log re-scan needs)
EOI = r"(?![\x01-\uffff])"
# a short line (the last of a base64 body, PGP's =XXXX checksum) must end where a line ends
FOLLOW = r"(?=[ \t]*(?:[\r\n]|\\|" + Q + r"|-----END)|[ \t]*" + EOI + ")"
ARMOR = r"[A-Za-z][A-Za-z0-9-]{0,40}: [^\x00\r\n\\]{0,200}"   # Proc-Type:, DEK-Info:, Version:, Comment:
UNIT = r"(?:" + SEPS + B64 + "{16,}|" + SEPS + B64 + "{1,15}" + FOLLOW + ")"
TAIL_END = r"(?:" + SEPS + B64 + "{1,15})?" + SEPS + END
# a preview (or a truncated paste) ends inside the key: a partial line, armor name, END line, escape or concatenation
PTOK = r"(?:" + B64 + r"+(?:-[A-Za-z0-9-]*)?(?:: ?)?|-[A-Z -]{0,40})"
PSEP = r"(?:\\{1,3}|" + CATP + ")"
TAIL_EOI = r"(?:" + SEPS + PTOK + "?)?" + PSEP + "?" + EOI
# an example closed right away by its END line (nothing, one word or an ellipsis between) is no finding
CLOSE = r"(?!(?:" + SEPS + r")?(?:(?:[A-Za-z]{1,20}" + SEPS + r")|(?:\.{2,3}|…)(?:" + SEPS + r")?)?-----END)"
# material (lines, END, or the end of the text) after the header; a header followed by prose is private-key-header's
PRIVATE_KEY = (HDR + CLOSE + r"(?:" + SEPS + ARMOR + ")*(?:" + UNIT + "+(?:" + TAIL_END + "|" + TAIL_EOI + ")?|"
               + TAIL_END + "|" + TAIL_EOI + ")")
PRIVATE_KEY_HEADER = HDR + CLOSE

# PuTTY .ppk (PuTTY manual, Appendix C): header lines, Public-Lines/Private-Lines + base64 lines, Private-MAC last.
# A value runs to the end of its line, or is one word when the file was pasted on one line.
VAL = r"(?:[^\x00\r\n\\]{0,200}(?=[ \t]*(?:[\r\n]|\\|" + EOI + r"))|[^\x00\r\n\\ \t]{0,100})"
PPK_HDR = (r"(?:(?:Encryption|Comment|Key-Derivation|Argon2-[A-Za-z]{1,20}): " + VAL
           + r"|(?:Public-Lines|Private-Lines): [0-9]{1,4}|Private-Hash: [0-9a-fA-F]{0,128})")
PFOLLOW = r"(?=[ \t]*(?:[\r\n]|\\|" + Q + "|" + EOI + r")|[ \t]+(?:Private-|Key-Derivation: |Argon2-))"
PUTTY = (r"(?:PuTTY-User-Key-File-[1-9]: [A-Za-z0-9@.-]{1,64}|Private-Lines: [0-9]{1,4})(?:" + SEPS + "(?:" + PPK_HDR
         + "|" + B64 + "{16,128}|" + B64 + "{1,15}" + PFOLLOW + "))*(?:" + SEPS + "Private-MAC: [0-9a-fA-F]{1,128}|(?:"
         + SEPS + r"(?:[A-Za-z0-9+/=-]{1,40}(?:: ?)?)?)?" + PSEP + "?" + EOI + ")?")

# age (C2SP age.md; FiloSottile/age x25519.go @10561a77): bech32 of 32 bytes + 6 checksum characters, upper-case
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
AGE = "AGE-SECRET-KEY-1[" + BECH32 + "]{58}"

PATTERNS = {"private-key": PRIVATE_KEY, "private-key-header": PRIVATE_KEY_HEADER, "putty-private-key": PUTTY,
            "age-secret-key": AGE}


def main(argv: list[str]) -> int:
    if "--write" not in argv:
        for rid, p in PATTERNS.items():
            print(f"{rid} ({len(p)} characters)\n{p}\n")
        return 0
    doc = json.loads(RULES.read_text(encoding="utf-8"))
    for r in doc["rules"]:
        if r["id"] in PATTERNS:
            r["pattern"] = PATTERNS[r["id"]]
    RULES.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
