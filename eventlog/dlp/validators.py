"""Offline validators: checksums and shape checks that turn a regex candidate into a finding.

Each validator takes the candidate secret (the rule's group text) and returns True to keep it. The JS engine
(eventlog/patches/openclaw/runtime/dlp-validators.mjs) implements the same functions; the shared vectors in tests/vectors/dlp/
keep them identical. Facts (weights, checksums, IBAN lengths) come from the public specifications.
"""
from __future__ import annotations

import base64
import json
import math
import zlib
from collections import Counter
from typing import Callable

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# IBAN length per country (ISO 13616 registry).
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "BY": 28,
    "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15,
    "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31, "SE": 24,
    "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24,
    "XK": 20,
}

PLACEHOLDERS = frozenset("""
password passwd pass pwd secret changeme change_me changeit example test testing dummy placeholder redacted hidden
your_password yourpassword your-password mypassword my_password mypass pa55word p@ssw0rd p@ssword
user username login token apikey api_key secretkey xxx xxxx xxxxx xxxxxx xxxxxxxx
admin guest root anonymous demo default foo bar foobar
""".split())


def _digits(s: str) -> str:
    return "".join(c for c in s if "0" <= c <= "9")


def luhn(num: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(num)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _card_brand_ok(n: str) -> bool:
    """Issuer ranges that exist: Visa 4, Mastercard 51–55 and 2221–2720, Mir 2200–2204, Amex 34/37, Discover 6011/644–649/65,
    JCB 3528–3589, UnionPay 62, Diners 300–305/36/38, Maestro 50/56–58/63/67."""
    p2, p4 = int(n[:2]), int(n[:4])
    ln = len(n)
    if n[0] == "4":
        return ln in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:
        return ln == 16
    if 2200 <= p4 <= 2204:
        return 16 <= ln <= 19
    if p2 in (34, 37):
        return ln == 15
    if p4 == 6011 or p2 == 65 or 644 <= int(n[:3]) <= 649:
        return 16 <= ln <= 19
    if 3528 <= p4 <= 3589:
        return 16 <= ln <= 19
    if p2 == 62:
        return 16 <= ln <= 19
    if 300 <= int(n[:3]) <= 305 or p2 in (36, 38):
        return 14 <= ln <= 19
    if p2 in (50, 56, 57, 58, 63, 67):
        return 12 <= ln <= 19
    return False


def card(s: str) -> bool:
    n = _digits(s)
    return 13 <= len(n) <= 19 and _card_brand_ok(n) and luhn(n)


def iban(s: str) -> bool:
    t = s.replace(" ", "")
    if IBAN_LENGTHS.get(t[:2]) != len(t):
        return False
    moved = t[4:] + t[:4]
    rem = 0
    for ch in moved:
        v = ord(ch) - 48 if ch <= "9" else ord(ch) - 55
        rem = (rem * 100 + v) % 97 if v > 9 else (rem * 10 + v) % 97
    return rem == 1


def _wsum(digits: str, weights: tuple[int, ...]) -> int:
    return sum((ord(d) - 48) * w for d, w in zip(digits, weights, strict=False))


_INN10 = (2, 4, 10, 3, 5, 9, 4, 6, 8)
_INN12A = (7, 2, 4, 10, 3, 5, 9, 4, 6, 8)
_INN12B = (3, 7, 2, 4, 10, 3, 5, 9, 4, 6, 8)


def inn10(s: str) -> bool:
    return len(s) == 10 and _wsum(s, _INN10) % 11 % 10 == ord(s[9]) - 48


def inn12(s: str) -> bool:
    return (len(s) == 12 and _wsum(s, _INN12A) % 11 % 10 == ord(s[10]) - 48
            and _wsum(s, _INN12B) % 11 % 10 == ord(s[11]) - 48)


def snils(s: str) -> bool:
    n = _digits(s)
    if len(n) != 11:
        return False
    total = _wsum(n, (9, 8, 7, 6, 5, 4, 3, 2, 1))
    check = total % 101
    if check == 100:
        check = 0
    return check == int(n[9:])


def ogrn(s: str) -> bool:
    return len(s) == 13 and int(s[:12]) % 11 % 10 == ord(s[12]) - 48


def ogrnip(s: str) -> bool:
    return len(s) == 15 and int(s[:14]) % 13 % 10 == ord(s[14]) - 48


def github_crc32(s: str) -> bool:
    """ghX_ + 30 random base62 + 6 base62 digits of the CRC32 of the random part (GitHub's 2021 token format)."""
    body, tail = s[4:-6], s[-6:]
    crc = zlib.crc32(body.encode()) & 0xFFFFFFFF
    out = ""
    while crc:
        crc, r = divmod(crc, 62)
        out = _B62[r] + out
    return out.rjust(6, "0") == tail


def jwt(s: str) -> bool:
    """The header segment must decode to a JSON object with an `alg` member."""
    head = s.split(".", 1)[0]
    if len(head) % 4 == 1:
        return False
    try:
        raw = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
        obj = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return False
    return isinstance(obj, dict) and "alg" in obj


def _is_placeholder(s: str) -> bool:
    low = s.lower()
    if low in PLACEHOLDERS or len(set(low)) <= 1:
        return True
    # templates and masks: ${VAR}, <password>, {{pw}}, %(pw)s, ***
    if low[0] in "$<{%*[" or low.endswith(("...", "…")):
        return True
    return low.startswith(("your", "my_", "<", "xxx")) or "****" in low


def not_placeholder(s: str) -> bool:
    return not _is_placeholder(s)


def password(s: str) -> bool:
    """A value after `password:` is a password if it is not a placeholder and mixes at least two character classes."""
    if _is_placeholder(s):
        return False
    kinds = {_kind(c) for c in s}
    return len(kinds) >= 2


_QUOTES = "\"'`"
_FAKE = ("fake", "example", "dummy", "placeholder", "changeme", "redacted", "xxxx", "****")
_CODE = ("process.env", "getenv(", "os.environ", "env(", "config.")


def _unquote(s: str) -> str:
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] and s[0] in _QUOTES else s


def _is_ident(s: str) -> bool:
    return all("a" <= c <= "z" or "A" <= c <= "Z" or "0" <= c <= "9" or c == "_" for c in s)


def _templated(v: str) -> bool:
    """A variable, template or mask standing in for a value: $VAR, ${x}, $(cmd), {{x}}, <x>, [X], %(x)s, {x}, ***,
    xxxx, a single repeated character, or code reading the environment."""
    low = v.lower()
    if not v or len(set(low)) <= 1 or any(w in low for w in ("****", "xxxx")):
        return True
    if v[0] == "$" and (_is_ident(v[1:]) or v[1:2] in ("{", "(")):
        return True
    pairs = (("{", "}"), ("<", ">"), ("[", "]"), ("%(", "s"))
    if any(v.startswith(a) and v.endswith(b) for a, b in pairs):
        return True
    return any(w in low for w in _CODE)


def not_template(s: str) -> bool:
    return not _templated(_unquote(s))


# The documented placeholder passwords of a URL (docs/dlp.md, "Passwords and URL credentials"): what docs and templates
# write where the password goes. Not `secret`: `postgres://admin:secret@db` is how people write a real (weak) password.
URL_PLACEHOLDERS = frozenset("""
password passwd pass pwd changeme change_me changeit yourpassword your_password your-password mypassword my_password
xxx xxxx xxxxx xxxxxx xxxxxxxx
""".split())


def _printf(v: str) -> bool:
    """A printf/format directive standing in for a value: %s, %v, %d, %q, %1$s."""
    return len(v) <= 4 and v[0] == "%" and v[-1] in "sdvq"


def url_password(s: str) -> bool:
    """A password in a URL is a finding unless it is a documented placeholder: a template or mask ($VAR, ${x}, <x>,
    {{x}}, %s, ***), or one of the placeholder words (user:password@host)."""
    return not _templated(s) and not _printf(s) and s.lower() not in URL_PLACEHOLDERS


# Words that follow a password cue in prose, labels and type annotations without being a password ("the password is
# incorrect", "Password: Enter", "password: string", "пароль неверный"). Compared lower-cased, whole value.
CUE_STOPWORDS = frozenset("""
required incorrect invalid wrong correct expired empty missing weak strong short long same different valid below above
here there that this these those then than their your mine yours with from into also only still just about always never
being been were will would should must could have has had does done sent stored saved hashed encrypted protected
changed updated reset change update needed mandatory optional string text char varchar bool boolean integer number null
none undefined true false hidden field input label enter confirm show hide forgot forgotten current repeat retype login
logout submit cancel placeholder value values please following case-sensitive case-insensitive !vault
under over behind inside somewhere written printed kept located what which where when probably usually like
literally simply also
неверный неверен неверно неправильный верный правильный обязателен обязательно слишком пустой изменён изменен сброшен
такой такая тот этот здесь нужен нужно должен будет есть ваш мой твой новый старый текущий введите повторите забыли
скрыт который которую такой-же
""".split())
_CRED_PARTS = frozenset("key keys pass password passwd pwd secret secrets token tokens hash salt".split())
# anywhere in the value: a call, an operator of an expression, HTML entities, reading the environment
_CODE_MARKS = ("()", "&lt;", "&gt;", "&quot;", "&amp;", "&#", "||", "&&", "??", "=>", "process.env", "os.environ",
               "getenv", "env(")
# at the start: interpolation (#{x}, ${x}, {{x}}, <%= x %>, @{x}), PHP superglobals, object members
_CODE_STARTS = ("#{", "${", "{{", "<%", "@{", "$_", "$this", "config.", "request.", "req.", "params.", "props.",
                "this.", "self.", "enc[")  # enc[: a SOPS-encrypted value, not the plaintext


_ROUTE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789/_-.:{}")  # a URL path (/api/users/:id); base64 has capitals


def _ident_parts(v: str) -> list[str]:
    """An identifier split at `_`, `-` and lower→upper (camelCase) boundaries, lower-cased."""
    parts, cur = [], ""
    for i, c in enumerate(v):
        if c in "_-":
            parts.append(cur)
            cur = ""
            continue
        if "A" <= c <= "Z" and i > 0 and "a" <= v[i - 1] <= "z":
            parts.append(cur)
            cur = ""
        cur += c
    parts.append(cur)
    return [p.lower() for p in parts if p]


def _code(v: str) -> bool:
    """Code or markup standing where a value would be: a call, a PHP/Ruby/JS expression, HTML entities, a route, a
    variable ($pass, @pass, :pass), a dotted name (user.password) or a name made of credential words (real_key,
    dbPassword, PASSWORD_HASH)."""
    low = v.lower()
    if any(m in low for m in _CODE_MARKS) or low.startswith(_CODE_STARTS) or v[-1] == "(":
        return True
    if v[0] == "/" and all(c in _ROUTE for c in v):
        return True
    if v[0] in "$@:" and _is_ident(v[1:]):
        return True
    parts = v.split(".")  # a dotted name has no digits (user.password, settings.DB_PASS); a random value has some
    if len(parts) > 1 and all(0 < len(p) <= 32 and _is_ident(p) and not any("0" <= c <= "9" for c in p) for p in parts):
        return True
    if _is_ident(v.replace("-", "_")):
        words = _ident_parts(v)
        return len(words) > 1 and any(w in _CRED_PARTS for w in words)
    return False


def password_cue(s: str) -> bool:
    """A value after an explicit password cue (password:, пароль —, my pw is …, PASSWORD=): any non-trivial value —
    4+ characters, 3+ distinct, a letter or digit among them, not a placeholder, template, mask, code or label, not a prose word (CUE_STOPWORDS).
    No strength needed: the cue says it is a password ("the password is 'centipede'", пароль: ромашка)."""
    v = _unquote(s)
    if len(v) < 4 or len(set(v)) < 3 or v[-1] == ":" or not _has_alnum(v):
        return False
    low = v.lower()
    if low in CUE_STOPWORDS or _is_placeholder(v) or _templated(v) or _printf(v) or _code(v):
        return False
    return not any(w in low for w in _FAKE)


def _has_alnum(v: str) -> bool:
    return any(_kind(c) < 3 for c in v)


def credential(s: str) -> bool:
    """A value assigned to a credential name: not a placeholder, template or fake; at least one letter or digit; mixed
    character classes, or a quoted value of 8+ characters (a passphrase with spaces)."""
    quoted = len(s) >= 2 and s[0] == s[-1] and s[0] in _QUOTES
    v = _unquote(s)
    if len(v) < 6 or len(set(v)) < 5 or _is_placeholder(v) or _templated(v) or not _has_alnum(v):
        return False
    if v.lower() in CUE_STOPWORDS:  # a label or prose word ("Password: Forgot your password?")
        return False
    low = v.lower()
    if any(w in low for w in _FAKE) or v.startswith("-----BEGIN"):  # a PEM block is the private-key rule's (the whole block)
        return False
    if _printf(v) or _code(v):
        return False
    return len({_kind(c) for c in v}) >= 2 or (quoted and len(v) >= 8)


def token_value(s: str) -> bool:
    """A header value that looks like a credential: 8+ characters, not a placeholder/template, mixed classes."""
    v = _unquote(s)
    return (len(v) >= 8 and not _is_placeholder(v) and not _templated(v) and not _code(v)
            and not any(w in v.lower() for w in _FAKE) and len({_kind(c) for c in v}) >= 2)


def userpass(s: str) -> bool:
    """`user:password` (shell-quoted pieces joined): a colon, and a non-placeholder, non-template secret part."""
    v = "".join(c for c in s if c not in "\"'")
    i = v.find(":")
    if i < 0:
        return False
    if _templated(v):
        return False
    user, pw = v[:i], v[i + 1:]
    secret = pw or user
    if len(secret) < 4 or any(_templated(x) for x in (user, pw) if x):
        return False
    return not _is_placeholder(secret) and not any(w in secret.lower() for w in _FAKE)


def mixed_alnum(s: str) -> bool:
    """A generic-shaped vendor key (Mistral's 32, Cohere's 40 characters) is random base62: it has an ASCII upper-case
    letter, a lower-case letter and a digit. A hex hash, a UUID without dashes or an identifier in one case does not
    (a random 32-character base62 string lacks one of the three with probability ~3e-8)."""
    return (any("A" <= c <= "Z" for c in s) and any("a" <= c <= "z" for c in s)
            and any("0" <= c <= "9" for c in s))


def discord_bot_token(s: str) -> bool:
    """Discord bot token <id>.<timestamp>.<hmac>: the first part is the unpadded base64 of the bot's user id in ASCII
    decimal — a snowflake of 17 to 20 digits, never starting with 0 (Discord API reference, "Snowflakes")."""
    head = s.split(".", 1)[0]
    if len(head) % 4 == 1:
        return False
    try:
        raw = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except ValueError:
        return False
    return 17 <= len(raw) <= 20 and all(0x30 <= b <= 0x39 for b in raw) and raw[0] != 0x30


def _kind(c: str) -> int:
    """Character class with explicit ranges (not str.islower): both engines must agree on every code point."""
    if "a" <= c <= "z" or "а" <= c <= "я" or c == "ё":
        return 0
    if "A" <= c <= "Z" or "А" <= c <= "Я" or c == "Ё":
        return 1
    if "0" <= c <= "9":
        return 2
    return 3


VALIDATORS: dict[str, Callable[[str], bool]] = {
    "luhn": lambda s: luhn(_digits(s)), "card": card, "iban": iban, "inn10": inn10, "inn12": inn12, "snils": snils,
    "ogrn": ogrn, "ogrnip": ogrnip, "github_crc32": github_crc32, "jwt": jwt, "not_placeholder": not_placeholder,
    "password": password, "not_template": not_template, "credential": credential, "token_value": token_value,
    "userpass": userpass, "url_password": url_password, "password_cue": password_cue,
    "mixed_alnum": mixed_alnum, "discord_bot_token": discord_bot_token,
}


def entropy(s: str) -> float:
    """Shannon entropy in bits per code point. Summed in first-occurrence order, like the JS engine."""
    counts = Counter(s)  # counted in C; a dict, so its order is first occurrence too
    n = len(s)
    h = 0.0
    for c in counts.values():
        p = c / n
        h -= p * math.log2(p)
    return h
