"""Whole private keys (docs/dlp.md, "Whole private keys"): the wrappings a key is pasted in, and synthetic keys.

Shared by tests/vectors/dlp/make_keys.py (writes keys.json, run by pytest and node --test) and tests/test_dlp_keys.py
(the same wrappings around keys generated at test time by openssl, ssh-keygen and gpg). Each wrapping returns
(before, block, after): the expected finding is exactly `block` (computed here, by construction — never by an
engine), so the redacted text is before + [REDACTED:<rule>] + after.

LABELLED TEST CORPUS: the synthetic keys are random base64 from a fixed seed in the documented layouts (RFC 7468
PEM lines of 64, OpenSSH's 70, PGP armor RFC 4880 §6.2 with its =XXXX checksum line, PuTTY's PPK of Appendix C, age's
bech32). None is a real key.
"""
from __future__ import annotations

import base64
import random
from typing import Callable

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
Wrapped = tuple[str, str, str]


def b64_lines(r: random.Random, nbytes: int, width: int = 64, lead: bytes = b"") -> list[str]:
    data = lead + bytes(r.randrange(256) for _ in range(nbytes - len(lead)))
    s = base64.b64encode(data).decode()
    return [s[i:i + width] for i in range(0, len(s), width)]


def pem(kind: str, body: list[str], armor: list[str] = ()) -> list[str]:
    head = [f"-----BEGIN {kind}-----", *armor]
    return [*head, *body, f"-----END {kind}-----"]


def synthetic_keys(seed: int = 20261201) -> dict[str, tuple[str, list[str]]]:
    """name -> (rule, lines of the key file)."""
    r = random.Random(seed)
    iv = "".join(r.choice("0123456789ABCDEF") for _ in range(32))
    ossh = b64_lines(r, 400, 70, b"openssh-key-v1\x00")
    pgp_body = b64_lines(r, 900)
    pgp = ["-----BEGIN PGP PRIVATE KEY BLOCK-----", "Version: GnuPG v2", "Comment: Alice's key \"home\"", "",
           *pgp_body, "=" + base64.b64encode(bytes(r.randrange(256) for _ in range(3))).decode(),
           "-----END PGP PRIVATE KEY BLOCK-----"]
    return {
        "pkcs8-rsa": ("private-key", pem("PRIVATE KEY", b64_lines(r, 1217, lead=b"\x30\x82\x04\xbd"))),
        "pkcs1-rsa": ("private-key", pem("RSA PRIVATE KEY", b64_lines(r, 1191, lead=b"\x30\x82\x04\xa3"))),
        "pkcs1-rsa-encrypted": ("private-key", pem("RSA PRIVATE KEY", ["", *b64_lines(r, 1200)],
                                                   ["Proc-Type: 4,ENCRYPTED", f"DEK-Info: AES-128-CBC,{iv}"])),
        "sec1-ec": ("private-key", pem("EC PRIVATE KEY", b64_lines(r, 121, lead=b"\x30\x77"))),
        "dsa": ("private-key", pem("DSA PRIVATE KEY", b64_lines(r, 444, lead=b"\x30\x82\x01\xbb"))),
        "pkcs8-encrypted": ("private-key", pem("ENCRYPTED PRIVATE KEY", b64_lines(r, 1298, lead=b"\x30\x82\x05\x0e"))),
        "openssh-ed25519": ("private-key", pem("OPENSSH PRIVATE KEY", ossh)),
        "pgp": ("private-key", pgp),
        "ppk2-rsa": ("putty-private-key", [
            "PuTTY-User-Key-File-2: ssh-rsa", "Encryption: none", "Comment: rsa-key-20261201",
            "Public-Lines: 6", *b64_lines(r, 279, lead=b"\x00\x00\x00\x07ssh-rsa")[:6],
            "Private-Lines: 14", *b64_lines(r, 660)[:14],
            "Private-MAC: " + "".join(r.choice("0123456789abcdef") for _ in range(40))]),
        "ppk3-ed25519-encrypted": ("putty-private-key", [
            "PuTTY-User-Key-File-3: ssh-ed25519", "Encryption: aes256-cbc", "Comment: eddsa-key-20261201",
            "Public-Lines: 2", *b64_lines(r, 51, lead=b"\x00\x00\x00\x0bssh-ed25519"),
            "Key-Derivation: Argon2id", "Argon2-Memory: 8192", "Argon2-Passes: 21", "Argon2-Parallelism: 1",
            "Argon2-Salt: " + "".join(r.choice("0123456789abcdef") for _ in range(32)),
            "Private-Lines: 1", *b64_lines(r, 48),
            "Private-MAC: " + "".join(r.choice("0123456789abcdef") for _ in range(64))]),
        "age": ("age-secret-key", [age_secret_key(bytes(r.randrange(256) for _ in range(32)))]),
    }


# --- bech32 (BIP-173), as age encodes its identities: HRP "AGE-SECRET-KEY-", then upper-cased (FiloSottile/age
# x25519.go and internal/bech32 at 10561a77) -----------------------------------------------------------------------
_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _polymod(values: list[int]) -> int:
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if (top >> i) & 1 else 0
    return chk


def age_secret_key(key: bytes) -> str:
    hrp = "age-secret-key-"
    acc, bits, data = 0, 0, []
    for b in key:  # 8-bit -> 5-bit groups, padded
        acc, bits = (acc << 8) | b, bits + 8
        while bits >= 5:
            bits -= 5
            data.append((acc >> bits) & 31)
    if bits:
        data.append((acc << (5 - bits)) & 31)
    exp = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    pm = _polymod(exp + data + [0] * 6) ^ 1
    chk = [(pm >> 5 * (5 - i)) & 31 for i in range(6)]
    return (hrp + "1" + "".join(_CHARSET[d] for d in data + chk)).upper()


# --- wrappings ------------------------------------------------------------------------------------------------------
def _joined(sep: str, before: str = "", after: str = "") -> Callable[[list[str]], Wrapped]:
    return lambda lines: (before, sep.join(lines), after)


WRAPPINGS: dict[str, Callable[[list[str]], Wrapped]] = {
    "newlines": _joined("\n", "Here is the key file:\n", "\nKeep it safe."),
    "crlf": _joined("\r\n", "key:\r\n", "\r\n"),
    "escaped-n": _joined("\\n", "pasted from the env file: ", "\\n and that is all"),
    "escaped-crlf": _joined("\\r\\n", "value=", "\\r\\n"),
    "json": _joined("\\n", '{"type": "service_account", "private_key_id": "k1", "private_key": "',
                    '\\n", "client_email": "svc@demo.iam.gserviceaccount.com"}'),
    "json-in-string": _joined("\\\\n", 'body = \'{"private_key": "', '\\\\n"}\''),
    "js-concat": _joined('\\n" + "', 'const key = "', '\\n";'),
    "java-concat": _joined('\\n" +\n        "', 'String key = "', '\\n";'),
    "python-concat": _joined('\\n"\n    "', 'KEY = (\n    "', '\\n"\n)'),
    "single-quoted-concat": _joined("\\n' + '", "key = '", "';"),
    "yaml-indented": _joined("\n  ", "tls:\n  private_key: |\n  ", "\n  cert: none"),
    "one-line-spaces": _joined(" ", 'PRIVATE_KEY="', '" ./run.sh'),
    "markdown-fence": _joined("\n", "```\n", "\n```\nthat's it"),
}


def missing_end(lines: list[str]) -> list[str]:
    """The key without its last line (END, Private-MAC): the finding runs to the end of the key-like run."""
    return lines[:-1]


def body_of(lines: list[str]) -> list[str]:
    """The secret lines: base64 and values long enough for a 12-character piece (headers and END excluded)."""
    skip = ("-----", "PuTTY-User-Key-File", "Encryption:", "Comment:", "Public-Lines:", "Private-Lines:",
            "Key-Derivation:", "Argon2-", "Version:", "Proc-Type:", "DEK-Info:")
    return [ln for ln in lines if len(ln) >= 12 and not ln.startswith(skip)]
