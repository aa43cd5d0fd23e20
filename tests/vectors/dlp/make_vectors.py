#!/usr/bin/env python3
"""Regenerate tests/vectors/dlp/cases.json — the shared vectors both engines must pass.

LABELLED TEST CORPUS: every secret in the output is a fake-format value generated from a fixed seed here.
Each case states its intent by hand (`expect_rules`: the rule ids that must be found, in order); the exact offsets,
fingerprints, masks, hold-back and filtered text are then filled in by the Python engine, and this script refuses to
write if the engine's rules differ from the intent. pytest (tests/test_dlp_vectors.py) and node
(eventlog/patches/openclaw/runtime/test/dlp.test.mjs) then both compare themselves with the file.

    .venv/bin/python tests/vectors/dlp/make_vectors.py
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]

import dlp_corpus as g  # noqa: E402
from eventlog.dlp.engine import Scanner  # noqa: E402
from eventlog.dlp.rules import load_rules  # noqa: E402

KEY_HEX = "2a" * 32  # the vectors' HMAC key (a test value, not a secret)


def cases() -> list[dict]:
    r = random.Random(20261130)
    ant = f"sk-ant-api03-{g.rs(r, g.TOK, 93)}AA"
    gh = g.github(r)
    c: list[dict] = []

    def add(name: str, text: str, expect: list[str], html: bool = False, preview: bool = False,
            held: str | None = None) -> None:
        c.append({"name": name, "text": text, "html": html, "preview": preview, "expect_rules": expect})
        if held is not None:  # the hand-written held-back tail (a preview): the engine must agree
            c[-1]["expect_held"] = held

    # one positive per rule, English and Russian frames
    for rule, (gen, en, ru) in sorted(g.SECRETS.items()):
        if gen is None:
            continue
        s = gen(r)
        add(f"{rule}/en", en[0].replace("{s}", s), [rule])
        add(f"{rule}/ru", (ru or en)[-1].replace("{s}", s) + " 🙂", [rule])
    pw = g.password(r)
    add("url-credentials/en", f"connect with postgres://app:{pw}@db.internal:5432/prod", ["url-credentials"])
    # offsets after astral characters (JS counts UTF-16 units: the engine must report code points)
    add("emoji-before-key", f"😀👍🏽 ключ: {ant} 🚀", ["anthropic-api-key"])
    add("emoji-before-card", f"🎉🎉 карта 🎉 {g.card(r)}", ["payment-card"])
    add("two-secrets", f"token {gh} and GOOGLE {('AIza' + g.rs(r, g.TOK, 35))} 💥", ["github-token", "google-api-key"])
    # overlap: an OpenAI project key with the marker matches two rules; the earlier rule in the file wins
    add("overlap-openai", "k=sk-proj-" + g.rs(r, g.ALNUM, 40) + "T3BlbkFJ" + g.rs(r, g.ALNUM, 40),
        ["openai-api-key"])
    # issue 25: a PEM key is redacted (no longer blocked), so both findings are replaced in place
    add("pem-and-token", f"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU and {ant}", ["private-key", "anthropic-api-key"])
    # negatives: context boundaries, placeholders, look-alikes, bad checksums
    add("inn-inside-word", f"длинное число {g.inn10(r)}", [])
    add("inn-with-context", f"ИНН/КПП {g.inn10(r)}/770701001", ["ru-inn-10"])
    # issue 16: a default password in a URL is still a password (mongodb://root:root@… leaks access); only templates
    # and masks pass
    add("placeholder-url", "postgres://user:password@localhost:5432/app, redis://:${REDIS_PASSWORD}@cache, ftp://u:****@h", [])
    add("default-creds-url", "https://deploy:admin@localhost:8080", ["url-credentials"])
    add("placeholder-keys", "set OPENAI_API_KEY=sk-... or YOUR_API_KEY; AKIAIOSFODNN7EXAMPLE; ghp_" + "x" * 36, [])
    # issue 16: the CRC32 tail is no longer required (gitleaks' fixtures carry none); a look-alike is redacted too
    add("github-lookalike", f"look-alike {g.github(r, valid=False)}", ["github-token"])
    add("bad-luhn", "card 4111 1111 1111 1112", [])
    add("no-card-context", f"order {g.luhn_complete(r, '4', 16)} shipped", [])
    add("jwt-not-json", "eyJub3RqdXN0.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlc2lnbmF0dXJl", [])
    add("truncated-key", "the old key started with sk-ant-api03-AbCdEf… and is revoked", [])
    add("uuid-sha", "id 123e4567-e89b-12d3-a456-426614174000 commit 9fceb02d0ae598e95dc970b74767f19372d61af8", [])
    add("they-key", "they say the key is fine", [])
    # issue 16: what a chat operator leaks. Expectations by hand; tokens marked (d-s) are detect-secrets' own fixture
    # values (Yelp/detect-secrets@5e141933 tests/plugins/telegram_token_test.py), labelled secret there.
    bot = "7213808860:AAH1bjqpKKW3maRSPAxzIU-0v6xNuq2-NjM"  # (d-s)
    add("bot-api-url", f"curl https://api.telegram.org/bot{bot}/sendMessage?chat_id=42", ["telegram-bot-token"])
    add("bot-token-env", f"TELEGRAM_BOT_TOKEN={bot}", ["telegram-bot-token"])
    add("bot-token-json", '{"webhook": "https://api.telegram.org/bot' + bot + '/getMe", "chat": 1}',
        ["telegram-bot-token"])
    add("bot-doc-example", "the docs use 110201543:AAHdqTcvCH1vGWJxfSe1ofSAs0K5PALDsaw as the example", [])
    add("password-prose-en", "ok, my password is Tr0ub4dor&3x! don't share it", ["password-prose"])
    add("password-prose-en-for", "the password for nas01 is Hunter-2024x", ["password-prose"])
    add("password-prose-ru", "мой пароль Xk9#mQ2vL7 — не забудь", ["password-prose"])
    add("password-prose-ru-ot", "пароль от почты Zebra-42-Lamp, логин ivan", ["password-prose"])
    add("password-prose-ru-colon", "Пароль: Zebra-42-Lamp, логин ivan", ["password-assignment"])
    add("password-prose-negative", "the password is correct; пароль такой же как вчера; password reset link", [])
    add("secret-assignment-env", "DB_PASS=s3cr3t-Value-77", ["secret-assignment"])
    # a quoted value after a password cue is taken whole by password-prose (earlier in the file, same span)
    add("secret-assignment-quoted", 'password = "value with quotes and spaces"', ["password-prose"])
    add("secret-assignment-json", '{"client_secret": "6da89121079f83b2eb6acccf8219ea98"}', ["secret-assignment"])
    add("secret-assignment-templates", "password: ${DB_PASSWORD}, api_key = \"\", token: <your token>", [])
    add("secret-comparison", 'if ("m0nkey-Bus1ness" == admin_password) {', ["secret-comparison"])
    add("authorization-bearer", 'curl -H "Authorization: Bearer cfcabd11c7ed9a41b1a3e063c32d5114" https://x',
        ["authorization-header"])
    add("authorization-placeholder", 'curl -H "Authorization: Bearer XXXXXXXXXXXX" -H "Authorization: Bearer $TOKEN"',
        [])
    add("header-api-key", "curl -H 'X-ApiToken: 3a16750d-d363-41a4-8ebd-035408f7730f' https://x",
        ["http-header-credential"])
    add("curl-user", "curl --user kevin:'pRf7vG2h1L8nQkW9' -X PATCH https://x", ["curl-user-credentials"])
    add("curl-user-template", 'curl -u "$USER:$PASS" https://x; curl --user user:pass https://y', [])
    add("slack-webhook", "post to https://hooks.slack.com/services/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 now",
        ["slack-webhook-url"])
    add("bedrock-key", "the bedrock key ABSKQmVkcm9ja0FQSUtleS1" + g.rs(r, g.ALNUM, 60) + " expires",
        ["aws-bedrock-api-key"])
    add("jdbc-password", "jdbc:sqlserver://db:1433;databaseName=app;user=sa;password=Qw3rty-9981;",
        ["password-assignment"])
    # PWD= is an explicit password cue (issue 25): password-assignment takes 4+ characters now, and wins on the same span
    add("odbc-short-password", "Driver={ODBC Driver 18};Server=db;UID=sa;PWD=x9y8;", ["password-assignment"])
    add("unsigned-jwt", "token eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0LXVzZXIifQ. here", ["jwt"])
    add("key-header-only", "the file starts with -----BEGIN RSA PRIVATE KEY----- and then it was cut", ["private-key-header"])
    add("key-header-example", "-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----", [])
    add("firebase-example-key", "sample config apiKey AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs from the SDK", [])
    add("root-root-url", "mongodb://app:root@mongo:27017/admin", ["url-credentials"])
    # a GCP service-account file pasted as JSON: the key material is JSON-escaped (\\n), still a block
    add("gcp-service-account-json", '{"type": "service_account", "private_key_id": "abc", "private_key": '
        '"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----\\n"}',
        ["private-key"])
    add("bot-token-in-path", f"cat /srv/bots/{bot}/config.yaml", ["telegram-bot-token"])
    # case mapping edges: the prefilter and context words see lower-cased text (U+212A KELVIN SIGN lowers to k,
    # U+0130 lowers to i + combining dot, which is no longer "inn")
    inn = g.inn10(r)
    add("kelvin-sign-context", "AWS secret \u212aey: " + g.rs(r, g.ALNUM + "/+", 40), ["aws-secret-access-key"])
    add("dotted-capital-i", f"\u0130NN {inn}", [])
    add("upper-inn", f"INN {inn}", ["ru-inn-10"])
    # HTML as OpenClaw sends it
    add("html-tag-inside", f"<b>Key:</b> {ant[:7]}<i>{ant[7:12]}</i>{ant[12:]}", ["anthropic-api-key"], html=True)
    add("html-entity", f"key &#115;{ant[1:]} &amp; more", ["anthropic-api-key"], html=True)
    add("html-hex-entity-astral", f"&#x1F600; <code>{gh}</code>", ["github-token"], html=True)
    add("html-href", f'<a href="https://bob:{pw}@git.example.org/r.git">repo</a>', ["url-credentials"], html=True)
    add("html-plain", "<b>hello</b> &lt;b&gt; not a tag &amp; fine", [], html=True)
    add("html-block", "<pre>-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98rLx</pre>", ["private-key"], html=True)
    # previews: hold-back
    add("hold-s", "your key is s", [], preview=True)
    add("hold-sk", "your key is sk-", [], preview=True)
    add("hold-partial-ant", f"your key is {ant[:30]}", [], preview=True)
    add("hold-complete-then-text", f"key {ant} done", ["anthropic-api-key"], preview=True)
    add("hold-complete-at-end", f"key {ant}", ["anthropic-api-key"], preview=True)
    add("hold-pem", "here:\n-----BEGIN RS", [], preview=True)
    add("hold-akia", "id AKIA2OGY", [], preview=True)
    add("hold-ghp", f"token {gh[:20]}", [], preview=True)
    add("hold-bot", "bot 123456789:AAF", [], preview=True)
    add("hold-nothing", "all done, nothing secret here.", [], preview=True)
    card = g.card(r)
    add("hold-card-digits", f"my card is {card[:9]}", [], preview=True)
    add("hold-card-complete", f"карта {card}", ["payment-card"], preview=True)
    add("hold-emoji", f"🔑🔑 {ant[:25]}", [], preview=True)
    add("hold-html", f"<b>key {ant[:9]}<i>{ant[9:14]}</i>", [], html=True, preview=True)
    add("hold-html-entity-tail", "<b>key</b> &#11", [], html=True, preview=True)
    add("hold-html-open-tag", '<b>see</b> <a href="https://x', [], html=True, preview=True)
    # hold-back only where a secret could begin (the rule's left boundary before the fragment)
    add("hold-none-word-end", "you can find it in the notes from the old release", [], preview=True, held="")
    add("hold-sk-word", "my key is sk", [], preview=True, held="sk")
    add("hold-none-task-dash", "see task-", [], preview=True, held="")
    add("hold-jwt-start", "token eyJ", [], preview=True, held="eyJ")
    add("hold-bot-colon", "bot123456:A", [], preview=True, held=":A")
    add("hold-card-run", "order 4111 1111", [], preview=True, held="4111 1111")
    add("hold-none-version", "upgrade to v2", [], preview=True, held="")
    add("hold-page-number", "see page 12", [], preview=True, held="12")
    add("hold-none-tails", "Plans: bugs, sizes, pkg, box, user, tag, x86_64", [], preview=True, held="")
    add("hold-pem-line-start", "key:\n-", [], preview=True, held="-")
    add("hold-html-complete", f"<i>key</i> <code>{gh}</code> ok", ["github-token"], html=True, preview=True)
    # issue 25, whole private keys (many more in keys.json): PuTTY .ppk and age identities
    ppk = ["PuTTY-User-Key-File-3: ssh-ed25519", "Encryption: none", "Comment: eddsa-key-20261201", "Public-Lines: 2",
           "AAAAC3NzaC1lZDI1NTE5AAAAI" + g.rs(r, g.ALNUM, 39), g.rs(r, g.ALNUM, 4), "Private-Lines: 1",
           "AAAAI" + g.rs(r, g.ALNUM, 43), "Private-MAC: " + g.rs(r, "0123456789abcdef", 64)]
    add("putty-ppk", "my key.ppk:\n" + "\n".join(ppk) + "\nthanks", ["putty-private-key"])
    age = "AGE-SECRET-KEY-1" + g.rs(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
    add("age-identity", f"# public key: age1{g.rs(r, 'qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}\n{age}", ["age-secret-key"])
    add("hold-age", f"key: {age[:30]}", [], preview=True, held=age[:30])
    add("pem-escaped-preview", "k=-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSj\\nAgEA",
        ["private-key"], preview=True)
    c += password_cases()
    return c


def password_cases() -> list[dict]:
    """Issue 25 items 4-5: passwords after explicit cues, URL credentials, and OpenClaw's internal-context block.
    Each expectation follows from the documented rule (docs/dlp.md, "Passwords and URL credentials", "OpenClaw's
    internal-context block"): an explicit cue accepts any non-trivial value; code, templates, labels and the
    documented placeholders are not findings; the block is one span from BEGIN to END or to the end of the text."""
    out: list[dict] = []

    def add(name: str, text: str, expect: list[str], preview: bool = False, held: str | None = None) -> None:
        out.append({"name": name, "text": text, "html": False, "preview": preview, "expect_rules": expect})
        if held is not None:
            out[-1]["expect_held"] = held

    # explicit cues, one character class is enough
    add("pw-cue-en-quoted", "the password is 'centipede'", ["password-prose"])
    add("pw-cue-ru-colon", "пароль: ромашка", ["password-assignment"])
    add("pw-cue-env", "REACT_APP_AUTH_PASSWORD=centipede", ["password-assignment"])
    add("pw-cue-pw", "my pw is hunter2", ["password-prose"])
    add("pw-cue-ru-ot-dash", "пароль от wifi — qwerty123", ["password-prose"])
    add("pw-cue-for-the", "the password for the router is hunter22", ["password-prose"])
    add("pw-cue-ru-eto", "Пароль это ромашка, не забудь", ["password-prose"])
    add("pw-cue-json", '{"password": "centipede"}', ["secret-assignment"])
    add("pw-cue-connection", "Server=db;Database=app;User Id=sa;Password=ромашка;", ["password-assignment"])
    # a comma and brackets end the other rules' values; the connection-string rule takes the value up to ";"
    add("pw-connection-brackets", "Server=db;Database=app;User Id=sa;Password=Xy,(7)zQ;", ["connection-string-password"])
    # no verb or separator: the value needs a digit or symbol
    add("pw-adjacent-strong", "мой пароль Xk9#mQ2vL7 — не забудь", ["password-prose"])
    add("pw-adjacent-word", "password manager and password hashing; пароль ромашка", [])
    # prose words, labels and type annotations after a cue
    add("pw-prose-words", "the password is incorrect, password is required, пароль неверный, password: string", [])
    add("pw-ui-label", "Password: Enter your password", [])
    add("pw-fields", "passwordHash: abc123def, password_min_length: 12, PASSWORD_REGEX=abc.def", [])
    add("pw-prose-more-words", "Password is case-sensitive. The password is under the keyboard. Password: Forgot your "
        "password?", [])
    add("pw-quoted-passphrase", 'passphrase is "correct horse battery staple"', ["password-prose"])
    add("pw-quoted-ru", "пароль: «ромашка лесная»", ["password-prose"])
    add("pw-call-vault-sops", "password = getpass.getpass()\npassword: !vault |\npassword: ENC[AES256,data:abc]", [])
    # code and templates as values
    add("pw-code-ruby", "password: #{password}", [])
    add("pw-code-php", "password = $_POST['password'];", [])
    add("pw-code-env-fallback", 'const password = process.env.PASSWORD || "fallback";', [])
    add("pw-code-entities", "password: &lt;your password&gt;", [])
    add("pw-code-route", "password: /api/users/password", [])
    add("pw-code-dotted", "user.password = user.password_confirmation", [])
    add("pw-code-ident", "password: real_key", [])
    add("pw-templates", "password: ${DB_PASSWORD}; password: %s; password: {{ .Password }}; password: <password>", [])
    add("pw-masks", "password: ***; password: changeme; пароль: ********", [])
    # URL credentials: every password but the documented placeholders
    add("url-secret-word", "postgresql://admin:secret@10.0.0.1:5433/production", ["url-credentials"])
    add("url-smtp-email-user", "smtp://me@example.com:pa55@smtp.example.com:587", ["url-credentials"])
    add("url-at-in-password", "postgres://app:p@ss-w0rd@db.internal:5432/app", ["url-credentials"])
    add("url-two-on-a-line", "see http://u1:s3cret@a.example and smtp://me@example.com:pa55@smtp.example.com:587",
        ["url-credentials", "url-credentials"])
    add("url-smtp-encoded-user", "smtp://me%40example.com:pa55@smtp.example.com:587", ["url-credentials"])
    add("url-placeholders", "postgres://user:password@db/app mysql://u:changeme@h redis://:${REDIS_PASSWORD}@cache "
        "ftp://u:***@h http://u:%s@h http://u:<pass>@h amqp://guest:{{ .Pass }}@mq", [])
    # OpenClaw's internal-context block (markers from openclaw/openclaw src/agents/internal-runtime-context.ts)
    b, e = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>", "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
    block = f'{b}\nConversation info: (openclaw:ctx)\n{{"chat_id":"telegram:100200300","sender":{{"name":"Ann"}}}}\n{e}'
    add("openclaw-context-block", f"Sure!\n{block}\n\nHere is the answer.", ["openclaw-internal-context"])
    add("openclaw-context-no-end", f"Answer first.\n{b}\nConversation info: (openclaw:ctx)\n#session:1 User: hi",
        ["openclaw-internal-context"])
    add("openclaw-context-two", f"{block} a {block} b", ["openclaw-internal-context", "openclaw-internal-context"])
    add("openclaw-context-hold", "Here it comes <<<BEGIN_OPENCL", [], preview=True, held="<<<BEGIN_OPENCL")
    add("openclaw-context-hold-lt", "a < b", [], preview=True, held="")
    add("openclaw-context-preview-open", f"Answer.\n{b}\nConversation", ["openclaw-internal-context"], preview=True,
        held="")
    return out


def main() -> int:
    sc = Scanner(load_rules(), bytes.fromhex(KEY_HEX))
    out = []
    bad = []
    for case in cases():
        res = sc.scan(case["text"], html=case["html"], preview=case["preview"])
        got = [f.rule for f in res.findings]
        if got != case["expect_rules"]:
            bad.append(f"{case['name']}: expected {case['expect_rules']}, engine found {got}")
        want = case.get("expect_held")
        if want is not None and res.hold_back != len(want) or want and not case["text"].endswith(want):
            bad.append(f"{case['name']}: expected to hold {want!r}, engine holds {res.hold_back} characters")
        filt = sc.filter(case["text"], html=case["html"], preview=case["preview"])
        red_text, red_action = sc.redact(case["text"], res.findings, html=case["html"])
        case.update({
            "findings": [f.to_dict() for f in res.findings], "holdBack": res.hold_back,
            "redact": {"text": red_text, "action": red_action},
            "filter": {"text": filt["text"], "action": filt["action"], "held": filt["held"]},
        })
        out.append(case)
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    doc = {"comment": "LABELLED TEST CORPUS: fake-format secrets generated by make_vectors.py; not real credentials.",
           "key_hex": KEY_HEX, "cases": out}
    (HERE / "cases.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n")
    print(f"{len(out)} cases", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
