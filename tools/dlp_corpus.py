#!/usr/bin/env python3
"""Labelled chat-style DLP corpus: planted fake-format secrets (valid checksums where the format has one) in English and
Russian messages, emoji, code and Telegram HTML, plus hard negatives (UUIDs, git SHAs, hashes, base64 images, phone and
order numbers, placeholders, truncated keys, checksum look-alikes).

Every secret is generated at run time from a seed; nothing here is a real credential. Output: JSON Lines
`{"id", "text", "html", "labels": [{"rule", "start", "end"}], "kind": "positive"|"negative"|"clean"}` with label spans in
code points of `text` (for HTML: of the payload, covering any tags/entities inside the secret).

    python tools/dlp_corpus.py --count 5000 --seed 1 > corpus.jsonl
"""
from __future__ import annotations

import base64
import json
import random
import string
import sys
import zlib
from typing import Callable

ALNUM = string.ascii_letters + string.digits
TOK = ALNUM + "_-"
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
IBAN_LEN = {"DE": 22, "GB": 22, "FR": 27, "ES": 24, "IT": 27, "NL": 18, "CH": 21, "PL": 28, "KZ": 20, "TR": 26, "UA": 29}


def rs(r: random.Random, alphabet: str, n: int) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def luhn_complete(r: random.Random, prefix: str, length: int) -> str:
    body = prefix + rs(r, string.digits, length - len(prefix) - 1)
    for d in string.digits:
        n = body + d
        total = 0
        for i, ch in enumerate(reversed(n)):
            v = int(ch) * (2 if i % 2 else 1)
            total += v - 9 if v > 9 else v
        if total % 10 == 0:
            return n
    raise AssertionError("unreachable")


def _wsum(d: str, w: tuple[int, ...]) -> int:
    return sum(int(a) * b for a, b in zip(d, w, strict=False))


def inn10(r: random.Random) -> str:
    b = rs(r, string.digits, 9)
    return b + str(_wsum(b, (2, 4, 10, 3, 5, 9, 4, 6, 8)) % 11 % 10)


def inn12(r: random.Random) -> str:
    b = rs(r, string.digits, 10)
    b += str(_wsum(b, (7, 2, 4, 10, 3, 5, 9, 4, 6, 8)) % 11 % 10)
    return b + str(_wsum(b, (3, 7, 2, 4, 10, 3, 5, 9, 4, 6, 8)) % 11 % 10)


def snils(r: random.Random) -> str:
    b = rs(r, string.digits, 9)
    c = _wsum(b, (9, 8, 7, 6, 5, 4, 3, 2, 1)) % 101
    c = 0 if c == 100 else c
    d = b + f"{c:02d}"
    return r.choice([f"{d[:3]}-{d[3:6]}-{d[6:9]} {d[9:]}", d, f"{d[:3]}-{d[3:6]}-{d[6:9]}-{d[9:]}"])


def ogrn(r: random.Random) -> str:
    b = r.choice("15") + rs(r, string.digits, 11)
    return b + str(int(b) % 11 % 10)


def ogrnip(r: random.Random) -> str:
    b = "3" + rs(r, string.digits, 13)
    return b + str(int(b) % 13 % 10)


def iban(r: random.Random) -> str:
    cc = r.choice(sorted(IBAN_LEN))
    bban = rs(r, string.digits, IBAN_LEN[cc] - 4)
    num = "".join(str(int(c, 36)) for c in bban + cc + "00")
    check = 98 - int(num) % 97
    s = f"{cc}{check:02d}{bban}"
    return " ".join(s[i:i + 4] for i in range(0, len(s), 4)) if r.random() < 0.6 else s


def github(r: random.Random, valid: bool = True) -> str:
    body = rs(r, ALNUM, 30)
    crc = zlib.crc32(body.encode())
    tail = ""
    while crc:
        crc, m = divmod(crc, 62)
        tail = B62[m] + tail
    tail = tail.rjust(6, "0")
    if not valid:
        tail = tail[:-1] + ("A" if tail[-1] != "A" else "B")
    return r.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) + body + tail


def b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).rstrip(b"=").decode()


def jwt(r: random.Random) -> str:
    head = b64url({"alg": r.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"})
    body = b64url({"sub": str(r.randint(1, 10 ** 9)), "name": rs(r, string.ascii_letters, 8), "iat": r.randint(1_600_000_000, 1_800_000_000)})
    return f"{head}.{body}.{rs(r, TOK, 43)}"


def card(r: random.Random) -> str:
    prefix, length = r.choice([("4", 16), ("51", 16), ("55", 16), ("2221", 16), ("2720", 16), ("2200", 16), ("2202", 16),
                               ("2204", 16), ("34", 15), ("37", 15), ("6011", 16), ("62", 16)])
    n = luhn_complete(r, prefix, length)
    sep = r.choice([" ", "-", "", " "])
    if length == 15:
        return f"{n[:4]}{sep}{n[4:10]}{sep}{n[10:]}"
    return sep.join(n[i:i + 4] for i in range(0, 16, 4))


def openai(r: random.Random) -> str:
    if r.random() < 0.3:
        return "sk-" + rs(r, ALNUM, 20) + "T3BlbkFJ" + rs(r, ALNUM, 20)
    return "sk-" + r.choice(["proj-", "svcacct-", "admin-", ""]) + rs(r, TOK, 74) + "T3BlbkFJ" + rs(r, TOK, 74)


def openai_project(r: random.Random) -> str:
    while True:
        s = "sk-" + r.choice(["proj-", "svcacct-", "admin-"]) + rs(r, TOK, r.randint(56, 160))
        if "T3BlbkFJ" not in s:
            return s


def openai_legacy(r: random.Random) -> str:
    while True:
        s = "sk-" + rs(r, ALNUM, 48)
        if "T3BlbkFJ" not in s:
            return s


def password(r: random.Random) -> str:
    while True:
        p = rs(r, string.ascii_letters, 4) + rs(r, string.digits, 2) + r.choice("!%^&*$") + rs(r, ALNUM, r.randint(3, 9))
        p = "".join(r.sample(p, len(p)))
        if p[0] not in "$<{%*[" and not p.lower().startswith(("your", "my_", "xxx")):
            return p


# rule id → (generator of the secret, English frames, Russian frames); "{s}" marks the secret
SECRETS: dict[str, tuple[Callable[[random.Random], str], list[str], list[str]]] = {
    "anthropic-api-key": (lambda r: f"sk-ant-{r.choice(['api03', 'api03', 'oat01'])}-{rs(r, TOK, 93)}AA",
                          ["here is the key: {s}", "export ANTHROPIC_API_KEY={s}", "use {s} for the staging bot"],
                          ["вот ключ: {s}", "ключ от антропика {s} не свети"]),
    "openai-api-key": (openai, ["OPENAI_API_KEY={s}", "the openai key is {s}"], ["ключ openai: {s}"]),
    "openai-project-key": (openai_project, ["project key {s}"], ["проектный ключ {s}"]),
    "openai-legacy-key": (openai_legacy, ["OPENAI_API_KEY={s}", "old openai key {s}"], ["старый ключ openai {s}"]),
    "telegram-bot-token": (lambda r: f"{r.randint(10 ** 7, 10 ** 10 - 1)}:AA{rs(r, TOK, 33)}",
                           ["bot token {s}", "BOT_TOKEN={s}"], ["токен бота: {s}", "вот токен {s}"]),
    "google-api-key": (lambda r: "AIza" + rs(r, TOK, 35), ["maps key {s}", "GOOGLE_API_KEY={s}"], ["ключ гугла {s}"]),
    "groq-api-key": (lambda r: "gsk_" + rs(r, ALNUM, 52), ["groq: {s}"], ["ключ groq {s}"]),
    "xai-api-key": (lambda r: "xai-" + rs(r, ALNUM, 80), ["XAI_API_KEY={s}"], ["ключ xai {s}"]),
    "aws-access-key-id": (lambda r: r.choice(["AKIA", "ASIA"]) + rs(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
                          ["aws_access_key_id = {s}", "access key {s}"], ["ключ доступа AWS {s}"]),
    "aws-secret-access-key": (lambda r: rs(r, ALNUM + "/+", 40), ["aws_secret_access_key = {s}", "AWS secret: {s}"],
                              ["секрет aws: {s}"]),
    "github-token": (github, ["GH_TOKEN={s}", "use my github token {s}"], ["токен гитхаба {s}"]),
    "github-fine-grained-pat": (lambda r: f"github_pat_{rs(r, ALNUM, 22)}_{rs(r, ALNUM, 59)}", ["pat: {s}"],
                                ["токен {s}"]),
    "slack-token": (lambda r: f"xoxb-{rs(r, string.digits, 12)}-{rs(r, string.digits, 13)}-{rs(r, ALNUM, 24)}",
                    ["SLACK_BOT_TOKEN={s}"], ["слак токен {s}"]),
    "stripe-secret-key": (lambda r: r.choice(["sk_live_", "rk_live_"]) + rs(r, ALNUM, r.randint(24, 99)),
                          ["stripe key {s}"], ["ключ страйпа {s}"]),
    "jwt": (jwt, ["Authorization: Bearer {s}", "session token {s}"], ["токен сессии {s}"]),
    "private-key": (lambda r: f"-----BEGIN {r.choice(['RSA ', 'EC ', 'OPENSSH ', ''])}PRIVATE KEY-----\n"
                              f"MII{rs(r, ALNUM + '+/', 60)}", ["key file:\n{s}"], ["вот ключ:\n{s}"]),
    "url-credentials": (None, [], []),  # special-cased: the secret is the password inside a URL
    "password-assignment": (password, ["password: {s}", "the db password = {s}"], ["пароль: {s}", "пароль от wifi: {s}"]),
    "payment-card": (card, ["my card is {s}", "card number {s}, exp 12/29", "Visa {s}"],
                     ["номер карты {s}", "карта мир {s}", "скинь на карту {s}"]),
    "iban": (iban, ["IBAN {s}", "wire it to {s} please"], ["реквизиты: IBAN {s}"]),
    "ru-inn-10": (inn10, ["company INN {s}"], ["ИНН организации {s}", "ИНН: {s}"]),
    "ru-inn-12": (inn12, ["my INN is {s}"], ["мой ИНН {s}", "ИНН физлица: {s}"]),
    "ru-snils": (snils, ["SNILS {s}"], ["СНИЛС {s}", "номер СНИЛС: {s}"]),
    "ru-ogrn": (ogrn, ["OGRN {s}"], ["ОГРН {s}", "ОГРН: {s}"]),
    "ru-ogrnip": (ogrnip, ["OGRNIP {s}"], ["ОГРНИП {s}"]),
    "ru-passport": (lambda r: f"{r.randint(10, 99)}{r.randint(0, 99):02d} {r.randint(0, 999999):06d}",
                    ["passport {s}"], ["паспорт серия и номер {s}", "паспорт {s}"]),
}

FILLER_EN = ["Sure, here is what I found.", "Let me know if that works for you 👍", "The meeting moved to 15:30 UTC.",
             "I've updated the README and pushed the branch.", "Can you check the logs from yesterday?",
             "The invoice total is 1,250.00 EUR, due 2026-12-01.", "Thanks! 🙏", "Deploy finished in 4m 12s."]
FILLER_RU = ["Конечно, вот что я нашёл.", "Созвон перенесли на 15:30 по Москве.", "Спасибо большое! 😊",
             "Длинное сообщение про договор поставки, подпишем завтра.", "Проверь, пожалуйста, вчерашние логи.",
             "Счёт на 12 500 руб. оплачен.", "Готово, выкатил на прод 🚀"]
CODE = ["```python\nimport os\nkey = os.environ['API_KEY']\nprint(len(key))\n```", "```bash\ncurl -s https://api.example.com/v1/items\n```",
        "```js\nconst x = await fetch(url);\n```"]


def negatives(r: random.Random) -> str:
    """One hard negative: looks like a secret, is not one."""
    uid = "%08x-%04x-%04x-%04x-%012x" % tuple(r.getrandbits(b) for b in (32, 16, 16, 16, 48))
    bad_card = luhn_complete(r, "4", 16)
    bad_card = bad_card[:-1] + str((int(bad_card[-1]) + 1) % 10)
    bad_inn = inn10(r)
    bad_inn = bad_inn[:-1] + str((int(bad_inn[-1]) + 1) % 10)
    png = base64.b64encode(bytes(r.getrandbits(8) for _ in range(300))).decode()
    choices = [
        f"request id {uid}", f"commit {rs(r, '0123456789abcdef', 40)} fixed it", f"sha256: {rs(r, '0123456789abcdef', 64)}",
        f"<img src=\"data:image/png;base64,{png}\">", f"call me at +7 916 {r.randint(100, 999)}-{r.randint(10, 99)}-{r.randint(10, 99)}",
        f"мой телефон 89{rs(r, string.digits, 9)}", f"order #{rs(r, string.digits, 10)} shipped", f"заказ № {rs(r, string.digits, 12)}",
        "set OPENAI_API_KEY=sk-... in your env", "replace YOUR_API_KEY with your key", "the key looks like sk-ant-api03-…",
        f"the old key started with sk-ant-api03-{rs(r, TOK, 6)}… and is revoked", "AKIAIOSFODNN7EXAMPLE is the docs example",
        "AKIAXXXXXXXXXXXXXXXX", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", f"cut-off {github(r)[:24]}",
        "postgres://user:password@localhost:5432/app", "redis://:${REDIS_PASSWORD}@cache:6379", "https://user:****@example.com",
        f"card ending {rs(r, string.digits, 4)}", f"card {bad_card} (test number, Luhn fails)", f"ИНН {bad_inn}",
        f"в длинное поле впиши {inn10(r)}", f"version {r.randint(1, 9)}.{r.randint(0, 20)}.{r.randint(0, 99)}",
        "they said the key was fine", "password: <your password here>", "пароль: ********", f"token {rs(r, string.digits, 8)}:short",
        "bearer eyJhbGciOi… (truncated)", f"SKU {rs(r, string.ascii_uppercase, 2)}{rs(r, string.digits, 20)}",
        f"tracking 1Z{rs(r, string.ascii_uppercase + string.digits, 16)}", "sk-ant-api03-XXXXXXXX (placeholder)",
    ]
    return r.choice(choices)


class Builder:
    """Concatenates pieces and tracks the payload span of each planted secret."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.n = 0
        self.labels: list[dict] = []

    def add(self, s: str) -> None:
        self.parts.append(s)
        self.n += len(s)

    def secret(self, rule: str, s: str, html: bool, r: random.Random) -> None:
        start = self.n
        if html and r.random() < 0.3 and len(s) > 12 and "\n" not in s:
            k = r.randint(3, 8)  # Markdown → HTML can put tags or entities inside a token
            form = r.choice(["tag", "entity"])
            if form == "tag":
                self.add(s[:k] + "<i>" + s[k:k + 4] + "</i>" + s[k + 4:])
            else:
                self.add(f"&#{ord(s[0])};" + s[1:])
        else:
            self.add(s)
        self.labels.append({"rule": rule, "start": start, "end": self.n})

    def text(self) -> str:
        return "".join(self.parts)


def _plant(b: Builder, r: random.Random, rule: str, html: bool, ru: bool) -> None:
    if rule == "url-credentials":
        pw = password(r)
        scheme, host = r.choice([("postgres", "db.internal:5432/prod"), ("https", "git.example.org/repo.git"),
                                 ("mysql", "10.0.0.5/app"), ("amqp", "mq.local:5672")])
        b.add(("строка подключения " if ru else "connection string ") + f"{scheme}://{rs(r, string.ascii_lowercase, 5)}:")
        b.secret(rule, pw, False, r)
        b.add(f"@{host}")
        return
    gen, en, rus = SECRETS[rule]
    frame = r.choice(rus if ru and rus else en)
    pre, post = frame.split("{s}")
    if html:
        pre, post = pre.replace("&", "&amp;"), post.replace("&", "&amp;")
    b.add(pre)
    b.secret(rule, gen(r), html, r)
    b.add(post)


def message(r: random.Random, i: int, pad_to: int = 0) -> dict:
    html = r.random() < 0.3
    ru = r.random() < 0.45
    filler = FILLER_RU if ru else FILLER_EN
    b = Builder()
    kind = r.choices(["positive", "negative", "clean"], [0.45, 0.4, 0.15])[0]
    if html and r.random() < 0.5:
        b.add("<b>" + r.choice(filler) + "</b> ")
    else:
        b.add(r.choice(filler) + " ")
    if r.random() < 0.15:
        b.add(r.choice(CODE) + "\n")
    if kind == "positive":
        for _ in range(1 if r.random() < 0.85 else 2):
            _plant(b, r, r.choice(sorted(SECRETS)), html, ru)
            b.add(" " + r.choice(filler) + " ")
    elif kind == "negative":
        neg = negatives(r)
        if html:
            neg = neg.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        b.add(neg + " ")
    size = len(b.text().encode())
    while size < pad_to:  # pad to a size in UTF-8 bytes (a Russian message has twice the bytes per character)
        piece = r.choice(filler) + (" " if r.random() < 0.8 else "\n")
        b.add(piece)
        size += len(piece.encode())
    if html and r.random() < 0.5:
        b.add("<i>" + r.choice(filler).replace("&", "&amp;") + "</i>")
    return {"id": f"m{i:06d}", "text": b.text(), "html": html, "labels": b.labels, "kind": kind}


def corpus(count: int, seed: int = 1, pad_to: int = 0) -> list[dict]:
    r = random.Random(seed)
    return [message(r, i, pad_to) for i in range(count)]


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pad-to", type=int, default=0, help="pad each message with filler to at least N UTF-8 bytes")
    a = ap.parse_args(argv)
    out = sys.stdout
    for m in corpus(a.count, a.seed, a.pad_to):
        out.write(json.dumps(m, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
