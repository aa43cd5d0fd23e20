#!/usr/bin/env python3
"""Build the external DLP evaluation corpus from public scanner fixtures (material this project did not write).

Sources (read from local mirrors of the public repositories; `git --git-dir=<dir> show <commit>:<path>`):
- gitleaks/gitleaks `cmd/generate/config/rules/*.go`: each rule function's `tps` (true positives) and `fps` (false
  positives), for EVERY rule: a rule of a family this project claims is labelled with that family (GITLEAKS_FAMILY),
  any other with its own gitleaks rule id, so it counts in "all families". Literal strings are taken as written;
  generated ones (`secrets.NewSecret(<regex>)`, `utils.Numeric("8")` …) are drawn from the regex with a fixed seed, the
  way gitleaks' own generator does at test time; `utils.GenerateSampleSecrets(id, s)` becomes the bare secret plus two
  of gitleaks' own config templates.
- Yelp/detect-secrets `tests/plugins/*_test.py`: `@pytest.mark.parametrize` cases with a `should_flag`-style boolean
  (or a test asserting exactly one finding), and the keyword plugin's `*_TEST_CASES` tables (line, secret|None).
  Read with `ast`; only literals, names of module constants and `str.format` are evaluated — never executed.
- trufflesecurity/trufflehog `pkg/detectors/**/<name>_test.go` (not the *_integration_test.go files): the pattern
  tests' cases `{input: …, want: …}`; `want` empty (`[]string{}`, nil) is a negative, anything else a positive. The
  package-level `var`/`const` values (`validPattern`, `invalidPattern`, `keyword` …) and `fmt.Sprintf` are evaluated
  with the same small Go evaluator; a case it cannot read is excluded with the reason. Family: TRUFFLEHOG_FAMILY for
  the detectors of claimed families, else the detector's directory (`discordbottoken`, `azure-storage`).

Every sample becomes two messages: the sample bare, and the sample inside a neutral chat sentence (no credential words,
so the sentence adds no context). Output, always OUTSIDE the repository (data built from other projects' fixtures is
never committed; the evaluation reads it from ../shared/data/dlp-external/ beside the repository):
  <out>/messages.jsonl  {"id", "text", "family", "label": 1|0, "variant", "source": {...}}
  <out>/excluded.jsonl  {"source", "sample", "reason"} — samples left out, each with its reason
The samples are public test fixtures (fake or revoked by their authors); this is a labelled test corpus.

    python tools/dlp_external_corpus.py --out /work/build-dlp-corpus \\
        --gitleaks /work/.mirror/gitleaks+gitleaks/repo --detect-secrets /work/.mirror/Yelp+detect-secrets/repo \\
        --trufflehog /work/.mirror/trufflesecurity+trufflehog/repo
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import random
import re
import subprocess
import sys
from pathlib import Path

try:
    import re._parser as sre  # Python ≥ 3.11
except ImportError:  # pragma: no cover
    import sre_parse as sre  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]

# gitleaks rule id → our family (rules for families we do not claim are excluded with that reason)
GITLEAKS_FAMILY = {
    "telegram-bot-api-token": "telegram-bot-token", "github-pat": "github", "github-oauth": "github",
    "github-app-token": "github", "github-refresh-token": "github", "github-fine-grained-pat": "github",
    "slack-bot-token": "slack", "slack-user-token": "slack", "slack-app-token": "slack",
    "slack-config-access-token": "slack", "slack-config-refresh-token": "slack", "slack-legacy-bot-token": "slack",
    "slack-legacy-workspace-token": "slack", "slack-legacy-token": "slack", "slack-webhook-url": "slack-webhook",
    "openai-api-key": "openai", "anthropic-api-key": "anthropic", "anthropic-admin-api-key": "anthropic",
    "jwt": "jwt", "private-key": "private-key", "aws-access-token": "aws-access-key-id",
    "aws-amazon-bedrock-api-key-long-lived": "aws-bedrock", "aws-amazon-bedrock-api-key-short-lived": "aws-bedrock",
    "gcp-api-key": "google-api-key", "stripe-access-token": "stripe", "curl-auth-header": "auth-header",
    "curl-auth-user": "curl-credentials", "generic-api-key": "credential-assignment",
}
DS_FAMILY = {
    "aws_key_test.py": "aws-access-key-id", "basic_auth_test.py": "url-credentials", "github_token_test.py": "github",
    "jwt_test.py": "jwt", "keyword_test.py": "credential-assignment", "openai_test.py": "openai",
    "private_key_test.py": "private-key", "slack_test.py": "slack", "stripe_key_test.py": "stripe",
    "telegram_token_test.py": "telegram-bot-token",
}
# trufflehog detector directory (under pkg/detectors) → our family, for the families this project claims; any other
# detector is a family of its own, named after its directory ("/" and "_" written "-").
TRUFFLEHOG_FAMILY = {
    "anthropic": "anthropic", "aws/access_keys": "aws-access-key-id", "github/v1": "github", "github/v2": "github",
    "jwt": "jwt", "openai": "openai", "privatekey": "private-key", "slack": "slack", "slackwebhook": "slack-webhook",
    "stripe": "stripe", "telegrambottoken": "telegram-bot-token", "uri": "url-credentials", "groq": "groq",
    "xai": "xai",
}
# Fixture labels that are wrong for a chat filter (or not about the family), excluded with the reason.
# Matched as (source path suffix, substring of the sample).
EXCLUDE = [
    ("telegram_token_test.py", "bot110201543:AAH",
     "labelled not-a-secret because of the `bot` prefix, but `bot<token>` is how a token sits in a Bot API URL: a leak"),
    ("anthropic.go", "sk-ant-admin01-abc123xyz-456def789ghij",
     "fps of the api03 rule because it is an admin key: still an Anthropic key (positive in the admin rule's tps)"),
    ("anthropic.go", "sk-ant-api03-abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-1234fghijklmnopby56aaaogaopaaaabc123xyzAA",
     "fps of the admin rule because it is an api03 key: still an Anthropic key (positive in the api03 rule's tps)"),
    ("curl.go", "Authorization: Basic eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
     "fps of curl-auth-header only because gitleaks' jwt rule reports it: a JWT in an Authorization header is a leak"),
    ("basic_auth_test.py", "https://username:password@yelp.com",
     "the literal word `password` is a documented URL placeholder (docs/dlp.md, issue 25): not a finding by design"),
    ("uri_test.go", "username:password@",
     "the literal word `password` is a documented URL placeholder (docs/dlp.md, issue 25): not a finding by design"),
    ("keyword_test.py", "some_key = \"real_secret\"",
     "labelled negative only because detect-secrets finds `key` too noisy; the value is a placeholder-like word"),
]
TEMPLATES = [
    "Can you check this line for me? {s}",
    "Вот что выдаёт лог:\n{s}\nЧто тут не так?",
    "fyi, this is from the staging box: {s} — see you tomorrow",
    "I copied it from the docs:\n```\n{s}\n```\nand the build still fails.",
    "Скопировал из конфига: {s} (вчерашняя версия)",
]


class Unevaluable(Exception):
    pass


class Wrapped(str):
    """A fixture wrapped by gitleaks' GenerateSampleSecret in an `<id>_api_token = "…"` assignment; `inner` is the
    value. A false positive of one gitleaks rule is scoped to that rule: the assignment around it is a credential
    assignment to any generic rule (gitleaks' own generic-api-key included), so for fps the inner value is used."""
    def __new__(cls, text: str, inner: str):
        o = super().__new__(cls, text)
        o.inner = inner
        return o


def git_show(gitdir: str, commit: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def git_head(gitdir: str) -> str:
    return subprocess.run(["git", "--git-dir", gitdir, "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def git_ls(gitdir: str, commit: str, path: str) -> list[str]:
    out = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "--name-only", f"{commit}:{path}"], check=True,
                         capture_output=True, text=True).stdout
    return [f"{path}/{n}" for n in out.split()]


# --- random strings from a regex (like gitleaks' reggen) ---------------------------------------------------------
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _charset(items: list, rnd: random.Random) -> str:
    chars: list[str] = []
    neg = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            neg = True
        elif name == "LITERAL":
            chars.append(chr(av))
        elif name == "RANGE":
            chars += [chr(c) for c in range(av[0], av[1] + 1)]
        elif name == "CATEGORY":
            cat = str(av)
            chars += list("0123456789") if "DIGIT" in cat else list(_ALNUM + "_") if "WORD" in cat else [" "]
    if neg:
        chars = [c for c in _ALNUM if c not in chars]
    return rnd.choice(chars)


def _gen(parsed, rnd: random.Random) -> str:
    out = []
    for op, av in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append(rnd.choice([c for c in _ALNUM if ord(c) != av]))
        elif name == "ANY":
            out.append(rnd.choice(_ALNUM))
        elif name == "IN":
            out.append(_charset(av, rnd))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            hi = lo + 10 if hi == sre.MAXREPEAT else hi
            out += [_gen(sub, rnd) for _ in range(rnd.randint(lo, hi))]
        elif name == "SUBPATTERN":
            out.append(_gen(av[-1], rnd))
        elif name == "BRANCH":
            out.append(_gen(rnd.choice(av[1]), rnd))
        elif name == "CATEGORY":
            out.append(_charset([(op, av)], rnd))
        elif name in ("AT", "GROUPREF", "ASSERT", "ASSERT_NOT"):
            continue
        else:
            raise Unevaluable(f"regex op {name}")
    return "".join(out)


def from_regex(rx: str, rnd: random.Random) -> str:
    try:
        return _gen(sre.parse(rx), rnd)
    except (re.error, Unevaluable, IndexError) as exc:
        raise Unevaluable(f"cannot draw from regex {rx!r}: {exc}") from None


# --- a tiny Go expression evaluator over tokens -------------------------------------------------------------------
_TOK = re.compile(r"""(?P<ws>[ \t\r]+)|(?P<nl>\n)|(?P<lc>//[^\n]*)|(?P<bc>/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>"(?:[^"\\\n]|\\.)*")
    |(?P<chr>'(?:[^'\\\n]|\\.)+')|(?P<num>[0-9][0-9_.xXa-fA-F]*)|(?P<id>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    |(?P<op>\.\.\.|:=|==|!=|&&|\|\||<-|\+\+|--|[-+*/%&|^<>=!(){}\[\],;:.])""", re.S | re.X)
_GO_ESC = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "/": "/", "a": "\a", "b": "\b",
           "f": "\f", "v": "\v"}


def _go_unquote(s: str) -> str:
    out, i, body = [], 0, s[1:-1]
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        if e in _GO_ESC:
            out.append(_GO_ESC[e])
            i += 2
        elif e == "x":
            out.append(chr(int(body[i + 2:i + 4], 16)))
            i += 4
        elif e == "u":
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
        else:
            raise Unevaluable(f"escape \\{e}")
    return "".join(out)


def go_tokens(src: str) -> list[tuple[str, str, int]]:
    toks: list[tuple[str, str, int]] = []
    line = 1
    pos = 0
    for m in _TOK.finditer(src):
        if m.start() != pos:
            raise Unevaluable(f"lexer stuck at line {line}")
        pos = m.end()
        kind, text = m.lastgroup, m.group()
        if kind == "nl" or (kind in ("bc", "raw") and "\n" in text and kind == "bc"):
            # Go's automatic semicolon insertion
            if toks and (toks[-1][0] in ("id", "str", "raw", "num", "chr") or toks[-1][1] in (")", "]", "}", "++", "--")):
                toks.append(("op", ";", line))
        elif kind not in ("ws", "lc", "bc"):
            toks.append((kind, text, line))
        line += text.count("\n")
    return toks


class GoEval:
    def __init__(self, toks, rnd: random.Random, env: dict):
        self.t, self.i, self.rnd, self.env = toks, 0, rnd, env
        self.errors: list[tuple[int, str]] = []

    def skip_element(self) -> None:
        d = 0
        while self.peek()[0] != "eof":
            tt = self.peek()[1]
            if tt in "([{" and self.peek()[0] == "op":
                d += 1
            elif tt in ")]}" and self.peek()[0] == "op":
                if d == 0:
                    return
                d -= 1
            elif tt == "," and d == 0:
                return
            self.take()

    def peek(self, k: int = 0):
        return self.t[self.i + k] if self.i + k < len(self.t) else ("eof", "", 0)

    def take(self, text: str | None = None):
        tok = self.peek()
        if text is not None and tok[1] != text:
            raise Unevaluable(f"expected {text!r} at line {tok[2]}, got {tok[1]!r}")
        self.i += 1
        return tok

    def expr(self):
        v = self.term()
        while self.peek()[1] == "+":
            self.take()
            w = self.term()
            if not (isinstance(v, str) and isinstance(w, str)):
                raise Unevaluable("+ on non-strings")
            v = v + w
        return v

    def args(self) -> list:
        self.take("(")
        out = []
        while self.peek()[1] != ")":
            line = self.peek()[2]
            v = self.expr()
            if self.peek()[1] == "...":
                self.take()
                out += list(v)
            else:
                out.append((v, line) if isinstance(v, str) else v)
            if self.peek()[1] == ",":
                self.take()
            elif self.peek()[1] == ";":  # a newline after the last argument
                self.take()
        self.take(")")
        return out

    def term(self):
        kind, text, line = self.peek()
        if kind == "str":
            self.take()
            return _go_unquote(text)
        if kind == "raw":
            self.take()
            return text[1:-1].replace("\r", "")
        if kind == "num":
            self.take()
            return text
        if text == "[" and self.peek(1)[1] == "]":
            self.take("[")
            self.take("]")
            self.take()  # element type
            self.take("{")
            items = []
            while self.peek()[1] != "}":
                if self.peek()[1] in (",", ";"):
                    self.take()
                    continue
                ln = self.peek()[2]
                try:
                    items.append((self.expr(), ln))
                except Unevaluable as exc:  # one element is lost (and reported), not the whole list
                    self.errors.append((ln, str(exc)))
                    self.skip_element()
            self.take("}")
            return items
        if kind == "id":
            self.take()
            if self.peek()[1] != "(":
                if text in self.env:
                    return self.env[text]
                raise Unevaluable(f"unknown name {text} at line {line}")
            return self.call(text, line)
        raise Unevaluable(f"unexpected {text!r} at line {line}")

    def call(self, name: str, line: int):
        a = self.args()
        vals = [x[0] if isinstance(x, tuple) else x for x in a]
        sizes = {"utils.Numeric": "[0-9]{%s}", "utils.Hex": "[a-f0-9]{%s}", "utils.AlphaNumeric": "[a-z0-9]{%s}",
                 "utils.AlphaNumericExtendedShort": "[a-z0-9_-]{%s}", "utils.AlphaNumericExtended": "[a-z0-9=_\\-]{%s}",
                 "utils.AlphaNumericExtendedLong": "[a-z0-9\\/=_\\+\\-]{%s}"}
        if name in sizes:
            return sizes[name] % vals[0]
        if name == "utils.Hex8_4_4_4_12":
            return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
        if name in ("secrets.NewSecret", "newPlausibleSecret"):
            return from_regex(vals[0], self.rnd)
        if name == "utils.GenerateSampleSecret":
            return Wrapped(f'{vals[0]}_api_token = "{vals[1]}"', vals[1])
        if name == "utils.GenerateSampleSecrets":
            i, s = vals
            # the bare secret and two of gitleaks' own templates (yaml and Makefile/env style)
            return [(s, line), (f"{i}_token: {s}", line), (f'{i.upper()}_TOKEN = "{s}"', line)]
        if name == "fmt.Sprintf":
            fmt, rest = vals[0], list(vals[1:])
            out = re.sub(r"%[svdq]", lambda m: str(rest.pop(0)) if m.group() != "%q" else json.dumps(rest.pop(0)), fmt)
            return out.replace("%%", "%")
        if name == "strings.Repeat":
            return vals[0] * int(vals[1])
        if name == "append":
            base = a[0]
            items = []
            for x in a[1:]:
                items += x if isinstance(x, list) else [x]
            return list(base) + items
        raise Unevaluable(f"function {name} at line {line}")


def gitleaks_samples(gitdir: str, commit: str, rnd: random.Random):
    """Yield (rule_id, path, line, sample, label) and (path, None, reason) exclusions."""
    for path in git_ls(gitdir, commit, "cmd/generate/config/rules"):
        if not path.endswith(".go"):
            continue
        src = git_show(gitdir, commit, path)
        starts = [m.start() for m in re.finditer(r"^func ", src, re.M)] + [len(src)]
        for a, b in zip(starts, starts[1:], strict=False):
            head = src.index("{", a) + 1
            body = src[head:b]
            rid = re.search(r'RuleID:\s*"([^"]+)"', body)
            if not rid:
                continue
            rule_id = rid.group(1)
            base_line = src[:head].count("\n")
            family = GITLEAKS_FAMILY.get(rule_id, rule_id)  # an unclaimed rule is a family of its own
            try:
                toks = go_tokens(body)
            except Unevaluable as exc:
                yield ("excluded", path, f"rule {rule_id}", f"cannot read: {exc}")
                continue
            env: dict = {}
            lists = {"tps": [], "fps": []}
            # statements at depth 0 (and inside `var ( … )`): NAME := EXPR | NAME = EXPR
            depth = 0
            i = 0
            while i < len(toks):
                kind, text, line = toks[i]
                if text in "([{" and kind == "op":
                    if text == "(" and i > 0 and toks[i - 1][1] == "var":
                        i += 1
                        continue
                    depth += 1
                elif text in ")]}" and kind == "op":
                    depth = max(0, depth - 1)
                at_stmt = depth == 0 and kind == "id" and (i == 0 or toks[i - 1][1] in (";", "(", "var", "{"))
                if at_stmt and i + 1 < len(toks) and toks[i + 1][1] in (":=", "=") and "." not in text:
                    ev = GoEval(toks, rnd, env)
                    ev.i = i + 2
                    try:
                        val = ev.expr()
                        for ln, err in ev.errors:
                            if text in ("tps", "fps"):
                                yield ("excluded", path, f"rule {rule_id} {text} line {base_line + ln}",
                                       f"element not evaluable: {err}")
                        env[text] = val
                        if text in lists:
                            lists[text] = val if isinstance(val, list) else [(val, line)]
                    except Unevaluable as exc:
                        if text in ("tps", "fps"):
                            yield ("excluded", path, f"rule {rule_id} {text} line {base_line + line}",
                                   f"expression not evaluable: {exc}")
                    # skip to the end of the statement
                    d = 0
                    j = i + 2
                    while j < len(toks):
                        tt = toks[j][1]
                        if tt in "([{" and toks[j][0] == "op":
                            d += 1
                        elif tt in ")]}" and toks[j][0] == "op":
                            if d == 0:
                                break
                            d -= 1
                        elif tt == ";" and d == 0:
                            break
                        j += 1
                    i = j
                    continue
                i += 1
            for name, label in (("tps", 1), ("fps", 0)):
                for item in lists[name]:
                    v, ln = item if isinstance(item, tuple) else (item, 0)
                    if isinstance(v, Wrapped) and not label:
                        if "_api_token = " in v.inner:
                            yield ("excluded", path, f"rule {rule_id} fps line {base_line + ln}",
                                   "a credential assignment nested in a credential assignment: not-a-secret only for "
                                   "the one gitleaks rule it tests")
                            continue
                        v = str(v.inner)
                    if isinstance(v, str):
                        yield ("sample", family, path, base_line + ln, str(v), label, rule_id)


# --- trufflehog -----------------------------------------------------------------------------------------------------
def _skip_stmt(toks: list, j: int) -> int:
    """Index of the `;` or closing bracket that ends the statement starting at j (brackets balanced)."""
    d = 0
    while j < len(toks):
        kind, tt, _ = toks[j]
        if kind == "op" and tt in "([{":
            d += 1
        elif kind == "op" and tt in ")]}":
            if d == 0:
                return j
            d -= 1
        elif tt == ";" and d == 0:
            return j
        j += 1
    return j


def _go_decls(toks: list, rnd: random.Random, env: dict) -> None:
    """Evaluate the package-level `var`/`const` values (single or grouped) into env; unreadable ones are skipped."""
    depth = 0
    i = 0
    while i < len(toks):
        kind, text, _ = toks[i]
        if kind == "op" and text in "([{":
            depth += 1
        elif kind == "op" and text in ")]}":
            depth = max(0, depth - 1)
        if depth == 0 and kind == "id" and text in ("var", "const"):
            grouped = i + 1 < len(toks) and toks[i + 1][1] == "("
            j = i + 2 if grouped else i + 1
            while j < len(toks) and toks[j][1] != ")":
                if toks[j][1] == ";":
                    j += 1
                    if not grouped:
                        break
                    continue
                names = []
                while j < len(toks) and toks[j][0] == "id" and toks[j][1] not in ("var", "const"):
                    names.append(toks[j][1])
                    j += 1
                    if toks[j][1] == ",":
                        j += 1
                    else:
                        break
                k = j
                while k < len(toks) and toks[k][1] not in ("=", ";", ")"):
                    k += 1  # an explicit type
                if k < len(toks) and toks[k][1] == "=" and len(names) == 1:
                    ev = GoEval(toks, rnd, env)
                    ev.i = k + 1
                    try:
                        env[names[0]] = ev.expr()
                        j = ev.i
                    except (Unevaluable, IndexError, KeyError, TypeError, ValueError):
                        j = _skip_stmt(toks, k + 1)
                else:
                    j = _skip_stmt(toks, k)
                if not grouped:
                    break
            i = j
            continue
        i += 1


def _want_label(toks: list, j: int) -> int | None:
    """The label of a case from the tokens after `want:`: nil or an empty []string{} is 0, a non-empty list 1."""
    t = [x[1] for x in toks[j:j + 5]]
    if t[:1] == ["nil"]:
        return 0
    if t[:4] == ["[", "]", "string", "{"]:
        return 0 if t[4:5] == ["}"] else 1
    return None


def trufflehog_samples(gitdir: str, commit: str, rnd: random.Random):
    out = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "--name-only", commit, "pkg/detectors"],
                         check=True, capture_output=True, text=True).stdout.split()
    for path in out:
        if not path.endswith("_test.go") or "integration" in path.rsplit("/", 1)[-1]:
            continue
        det = path[len("pkg/detectors/"):].rsplit("/", 1)[0]
        family = TRUFFLEHOG_FAMILY.get(det) or det.replace("/", "-").replace("_", "-")
        src = git_show(gitdir, commit, path)
        try:
            toks = go_tokens(src)
        except Unevaluable as exc:
            yield ("excluded", path, "file", f"cannot read: {exc}")
            continue
        env: dict = {}
        _go_decls(toks, rnd, env)
        found = 0
        for i in range(len(toks) - 1):
            if not (toks[i][0] == "id" and toks[i][1] == "input" and toks[i + 1][1] == ":"):
                continue
            line = toks[i][2]
            ev = GoEval(toks, rnd, env)
            ev.i = i + 2
            try:
                val = ev.expr()
            except (Unevaluable, IndexError, KeyError, TypeError, ValueError) as exc:
                yield ("excluded", path, f"line {line}", f"input not evaluable: {str(exc)[:60]}")
                continue
            label = None
            k = ev.i
            while k < len(toks) - 1 and not (toks[k][1] == "input" and toks[k + 1][1] == ":"):
                if toks[k][0] == "id" and toks[k][1] == "want" and toks[k + 1][1] == ":":
                    label = _want_label(toks, k + 2)
                    break
                k += 1
            if label is None or not isinstance(val, str):
                yield ("excluded", path, f"line {line}", "no literal `want` (or input not a text) in the case")
                continue
            found += 1
            yield ("sample", family, path, line, val, label, "pattern-test")
        if not found:
            yield ("excluded", path, "file", "no {input, want} pattern cases")


# --- detect-secrets -------------------------------------------------------------------------------------------------
def _py_eval(node, env):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise Unevaluable(f"name {node.id}")
    if isinstance(node, (ast.Tuple, ast.List)):
        return [_py_eval(e, env) for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _py_eval(node.left, env) + _py_eval(node.right, env)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and not node.keywords:
        return _py_eval(node.func.value, env).format(*[_py_eval(a, env) for a in node.args])
    raise Unevaluable(ast.dump(node)[:60])


def ds_samples(gitdir: str, commit: str):
    for path in git_ls(gitdir, commit, "tests/plugins"):
        fname = path.rsplit("/", 1)[-1]
        if not fname.endswith("_test.py"):
            continue
        # an unclaimed plugin is a family of its own (azure_storage_key_test.py -> azure-storage-key)
        family = DS_FAMILY.get(fname) or fname[:-len("_test.py")].replace("_", "-")
        tree = ast.parse(git_show(gitdir, commit, path))
        env: dict = {}
        positives: set[str] = set()
        for st in tree.body:  # the secret values of every table (the second element of positive cases)
            if isinstance(st, ast.Assign) and getattr(st.targets[0], "id", "").endswith("_TEST_CASES"):
                for elt in getattr(st.value, "elts", []):
                    if isinstance(elt, ast.Tuple) and len(elt.elts) == 2 and isinstance(elt.elts[1], ast.Name):
                        positives.add(elt.elts[1].id)
        consts = {}
        for st in tree.body:
            if isinstance(st, ast.Assign) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                consts[st.targets[0].id] = st.value.value
        positives = {consts[n] for n in positives if n in consts}
        for st in tree.body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                name = st.targets[0].id
                if name.endswith("_TEST_CASES") and isinstance(st.value, ast.List):
                    env[name] = []
                    for elt in st.value.elts:
                        try:
                            line, secret = _py_eval(elt, env)
                        except (Unevaluable, TypeError, IndexError, KeyError) as exc:
                            yield ("excluded", path, f"line {elt.lineno}", f"not a literal: {str(exc)[:60]}")
                            continue
                        env[name].append((line, secret))
                        if secret is None and any(sv and sv in line for sv in positives):
                            yield ("excluded", path, f"line {elt.lineno}",
                                   "negative only by this table's file-type syntax: the same value is a secret in the "
                                   "other tables (detect-secrets' keyword plugin); a chat message has no file type")
                            continue
                        yield ("sample", family, path, elt.lineno, line, int(secret is not None), name)
                    continue
                try:
                    env[name] = _py_eval(st.value, env)
                except (Unevaluable, TypeError, IndexError, KeyError) as exc:
                    yield ("excluded", path, f"line {st.lineno} {name}", f"not a literal: {str(exc)[:60]}")
                    continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for dec in node.decorator_list:
                if not (isinstance(dec, ast.Call) and getattr(dec.func, "attr", "") == "parametrize"):
                    continue
                names = [n.strip() for n in _py_eval(dec.args[0], env).split(",")]
                bool_idx = next((k for k, n in enumerate(names) if n in ("should_flag", "expected", "is_secret")), None)
                asserts_one = "== 1" in ast.unparse(node) or "== int(should_flag)" in ast.unparse(node)
                cases = dec.args[1]
                if isinstance(cases, ast.Name) and isinstance(env.get(cases.id), list):
                    continue  # a *_TEST_CASES table, taken above
                if not isinstance(cases, (ast.List, ast.Tuple)):
                    yield ("excluded", path, f"line {dec.lineno}", "parameters computed by code, not literal")
                    continue
                for elt in cases.elts:
                    try:
                        val = _py_eval(elt, env)
                    except (Unevaluable, TypeError, IndexError, KeyError) as exc:
                        yield ("excluded", path, f"line {elt.lineno}", f"not a literal: {str(exc)[:60]}")
                        continue
                    if len(names) == 1:
                        val = [val[0] if isinstance(val, list) and len(val) == 1 else val]
                    if not isinstance(val, list) or not isinstance(val[0], str):
                        yield ("excluded", path, f"line {elt.lineno}", "first parameter is not a text")
                        continue
                    if bool_idx is not None and isinstance(val[bool_idx], bool):
                        label = int(val[bool_idx])
                    elif bool_idx is None and asserts_one and len(names) == 1:
                        label = 1
                    else:
                        yield ("excluded", path, f"line {elt.lineno}", "no boolean label in the case")
                        continue
                    yield ("sample", family, path, elt.lineno, val[0], label, node.name)


def build(gitleaks: str, ds: str, seed: int = 16, trufflehog: str | None = None) -> tuple[list[dict], list[dict]]:
    rnd = random.Random(seed)
    messages: list[dict] = []
    excluded: list[dict] = []
    seen: set[tuple[str, int]] = set()
    sources = []
    if gitleaks:
        c = git_head(gitleaks)
        sources.append(("gitleaks/gitleaks", c, gitleaks_samples(gitleaks, c, rnd)))
    if ds:
        c = git_head(ds)
        sources.append(("Yelp/detect-secrets", c, ds_samples(ds, c)))
    if trufflehog:
        c = git_head(trufflehog)
        sources.append(("trufflesecurity/trufflehog", c, trufflehog_samples(trufflehog, c, random.Random(seed + 1))))
    records = [(repo, commit, rec) for repo, commit, it in sources for rec in it]
    labels: dict[str, set[int]] = {}
    for _, _, rec in records:
        if rec[0] == "sample":
            labels.setdefault(rec[4], set()).add(rec[5])
    for repo, commit, rec in records:
        if True:
            if rec[0] == "excluded":
                _, path, where, reason = rec
                excluded.append({"source": {"repo": repo, "commit": commit, "path": path, "where": where},
                                 "reason": reason})
                continue
            _, family, path, line, sample, label, origin = rec
            src = {"repo": repo, "commit": commit, "path": path, "line": line, "case": origin}
            if not sample.strip():
                excluded.append({"source": src, "reason": "empty sample"})
                continue
            reason = next((r for suf, sub, r in EXCLUDE if path.endswith(suf) and sub in sample), None)
            if reason is None and len(labels[sample]) > 1:
                reason = ("the same text is labelled both secret and not-secret by the fixtures (detect-secrets' keyword "
                          "plugin decides by file type; a chat message has none)")
            if reason:
                excluded.append({"source": src, "sample_sha256": hashlib.sha256(sample.encode()).hexdigest()[:16],
                                 "reason": reason})
                continue
            key = (sample, label)
            if key in seen:
                continue
            seen.add(key)
            n = len(messages) // 2
            tpl = TEMPLATES[int(hashlib.sha256(sample.encode()).hexdigest(), 16) % len(TEMPLATES)]
            for variant, text in (("bare", sample), ("chat", tpl.format(s=sample))):
                messages.append({"id": f"x{n:05d}-{variant}", "text": text, "family": family, "label": label,
                                 "variant": variant, "source": src})
    return messages, excluded


def inside_repo(out: Path) -> bool:
    """True when `out` is inside this repository's tree (where fixture data must never be written)."""
    try:
        out.resolve().relative_to(REPO.resolve())
        return True
    except ValueError:
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory, outside the repository (e.g. /work/build-dlp-corpus;"
                    " the evaluation reads ../shared/data/dlp-external/ beside the repository)")
    ap.add_argument("--gitleaks", help="git dir of a gitleaks/gitleaks mirror")
    ap.add_argument("--detect-secrets", dest="ds", help="git dir of a Yelp/detect-secrets mirror")
    ap.add_argument("--trufflehog", help="git dir of a trufflesecurity/trufflehog mirror")
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args(argv)
    if not (args.gitleaks or args.ds or args.trufflehog):
        print("dlp_external: give --gitleaks, --detect-secrets and/or --trufflehog", file=sys.stderr)
        return 2
    out = Path(args.out)
    if inside_repo(out):
        print(f"dlp_external: {out} is inside the repository; data built from other projects' fixtures is never "
              "committed: write it outside (e.g. /work/build-dlp-corpus)", file=sys.stderr)
        return 2
    messages, excluded = build(args.gitleaks, args.ds, args.seed, args.trufflehog)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "messages.jsonl", "w", encoding="utf-8") as f:
        for m in messages:
            f.write(json.dumps(m, ensure_ascii=False) + "\n")
    with open(out / "excluded.jsonl", "w", encoding="utf-8") as f:
        for e in excluded:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")
    pos = sum(m["label"] for m in messages)
    print(f"{len(messages)} messages ({pos} positive, {len(messages) - pos} negative), {len(excluded)} exclusions "
          f"→ {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
