"""Whole private keys (docs/dlp.md, "Whole private keys"; issue 25 item 3).

tests/vectors/dlp/keys.json (built by make_keys.py; expectations by construction, not from an engine) is run here
against the Python engine and in runtime/test/dlp-keys.test.mjs against the JS engine. Keys GENERATED at test time
(openssl, ssh-keygen, gpg, an age identity from random bytes) go through the same wrappings in both engines.
LABELLED TEST CORPUS: every key here is synthetic or generated for the run and thrown away."""
from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dlp_support import REPO, run_driver

from eventlog.dlp.engine import Scanner
from eventlog.dlp.rules import load_rules

VEC = REPO / "tests" / "vectors" / "dlp"
sys.path.insert(0, str(VEC))
import pemwrap  # noqa: E402

DOC = json.loads((VEC / "keys.json").read_text(encoding="utf-8"))
KEY = "4b" * 32
# a one-line key in a JSON "private_key" member is secret-assignment's (it starts at the opening quote)
SINGLE_LINE = {"newlines", "crlf", "escaped-n", "markdown-fence"}
SEP_TAIL = re.compile(r"(?:[ \t\r\n\"'`+]|\\[rn]?)+$")
B64_RUN = re.compile(r"[A-Za-z0-9+/=]{12,}")


@pytest.fixture(scope="module")
def sc() -> Scanner:
    return Scanner(load_rules(), bytes.fromhex(KEY))


def pieces_of(block: str) -> set[str]:
    """Every 12-character piece of the base64 runs of a key block (the material; headers are not secret)."""
    return {m[i:i + 12] for m in B64_RUN.findall(block) for i in range(len(m) - 11)
            if not m.startswith("-")}


def survivors(out: str, block: str) -> list[str]:
    return sorted(p for p in pieces_of(block) if p in out)


@pytest.mark.parametrize("case", DOC["cases"], ids=[c["name"] for c in DOC["cases"]])
def test_key_vector(sc: Scanner, case: dict) -> None:
    res = sc.scan(case["text"], html=case["html"])
    assert [{"rule": f.rule, "start": f.start, "end": f.end} for f in res.findings] == case["expect"]
    out = sc.filter(case["text"], html=case["html"])
    assert out["text"] == case["redacted"]
    assert out["action"] == ("redact" if case["expect"] else "pass")
    for e in case["expect"]:
        assert survivors(out["text"], case["text"][e["start"]:e["end"]]) == []


def test_vectors_cover_the_forms() -> None:
    names = {c["name"] for c in DOC["cases"]}
    for form in ("escaped-n", "escaped-crlf", "crlf", "json", "json-in-string", "js-concat", "java-concat",
                 "python-concat", "no-end", "truncated", "html-pre"):
        assert any(f"/{form}" in n for n in names), form
    rules = {e["rule"] for c in DOC["cases"] for e in c["expect"]}
    assert rules == {"private-key", "private-key-header", "putty-private-key", "age-secret-key"}
    assert sum(1 for c in DOC["cases"] if not c["expect"]) >= 8


@pytest.mark.parametrize("g", DOC["growth"], ids=[g["name"] for g in DOC["growth"]])
def test_growing_previews_never_show_the_key(sc: Scanner, g: dict) -> None:
    """Every prefix, as a preview: once the key's first line is complete, nothing of the block shows (it is redacted
    or held), and every finding on the block is of the key's rule (one alert per leak)."""
    text = g["before"] + g["block"] + g["after"]
    start = len(g["before"])
    marker = f"[REDACTED:{g['rule']}]"
    for n in range(1, len(text) + 1):
        p = text[:n]
        out = sc.filter(p, preview=True)
        assert survivors(out["text"], g["block"]) == [], n
        if n >= g["from"]:
            # (a separator after the marker may show: it is no key material)
            shown = SEP_TAIL.sub("", out["text"].replace(marker, ""))
            assert (g["before"] + g["after"]).startswith(shown), (n, out["text"][-80:])
            on_block = [f.rule for f in out["findings"] if f.start < start + len(g["block"]) and f.end > start]
            assert on_block == [g["rule"]], (n, on_block)


def test_batch_scan_equals_per_text_scan(sc: Scanner) -> None:
    """The log re-scan joins texts with "\\n\\0\\n": a key's pattern must not run across it."""
    texts = [c["text"] for c in DOC["cases"]]
    html = [c["html"] for c in DOC["cases"]]
    assert sc.scan_batch(texts, html) == [sc.scan(t, html=h).findings for t, h in zip(texts, html, strict=True)]
    # a key at the end of one text and another text after it: same findings as alone
    a, b = DOC["cases"][0]["text"], "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC and more"
    assert sc.scan_batch([a + "\n-----BEGIN PRIVATE KEY-----", b]) == [
        sc.scan(a + "\n-----BEGIN PRIVATE KEY-----").findings, sc.scan(b).findings]


# --- keys generated now ---------------------------------------------------------------------------------------------
def _run(*cmd: str, cwd: Path | None = None, inp: bytes | None = None) -> bytes:
    return subprocess.run(cmd, check=True, capture_output=True, cwd=cwd, input=inp).stdout


def generated_keys(tmp: Path) -> dict[str, tuple[str, list[str]]]:
    """name -> (rule, lines), from the tools on this machine (openssl, ssh-keygen, gpg are required)."""
    for tool in ("openssl", "ssh-keygen", "gpg"):
        assert shutil.which(tool), f"{tool} is needed for this test (apt-get install openssl openssh-client gnupg)"
    out: dict[str, bytes] = {}
    out["openssl-rsa-pkcs8"] = _run("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048")
    out["openssl-rsa-pkcs1"] = _run("openssl", "rsa", "-traditional", inp=out["openssl-rsa-pkcs8"])
    out["openssl-rsa-pkcs1-des3"] = _run("openssl", "rsa", "-traditional", "-aes128", "-passout", "pass:pw",
                                         inp=out["openssl-rsa-pkcs8"])
    out["openssl-ec-sec1"] = _run("openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout")
    out["openssl-ed25519"] = _run("openssl", "genpkey", "-algorithm", "ED25519")
    out["openssl-pkcs8-encrypted"] = _run("openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                                          "ec_paramgen_curve:P-384", "-aes-256-cbc", "-pass", "pass:pw")
    out["openssl-dsa"] = _run("openssl", "genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:1024")
    params = tmp / "dsa.params"
    params.write_bytes(out.pop("openssl-dsa"))
    out["openssl-dsa"] = _run("openssl", "genpkey", "-paramfile", str(params))
    for kind in ("ed25519", "rsa"):
        f = tmp / f"id_{kind}"
        _run("ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "test@example.invalid", "-f", str(f))
        out[f"ssh-keygen-{kind}"] = f.read_bytes()
    home = tmp / "gnupg"
    home.mkdir(mode=0o700)
    _run("gpg", "--homedir", str(home), "--batch", "--passphrase", "", "--quick-gen-key", "Test <t@example.invalid>",
         "ed25519", "default", "never")
    out["gpg-ed25519"] = _run("gpg", "--homedir", str(home), "--batch", "--armor", "--export-secret-keys")
    keys = {n: ("private-key", b.decode().strip("\n").splitlines()) for n, b in out.items()}
    keys["age"] = ("age-secret-key", [pemwrap.age_secret_key(secrets.token_bytes(32))])
    return keys


def test_generated_keys_in_every_wrapping_both_engines(sc: Scanner, tmp_path: Path) -> None:
    keys = generated_keys(tmp_path)
    items, want = [], {}
    for kname, (rule, lines) in keys.items():
        assert lines[0].startswith(("-----BEGIN", "AGE-SECRET-KEY-1")), (kname, lines[0])
        variants = {"": lines} if len(lines) == 1 else {"": lines, "/no-end": pemwrap.missing_end(lines)}
        for wname, wrap in pemwrap.WRAPPINGS.items():
            if len(lines) == 1 and wname not in SINGLE_LINE:
                continue
            for vname, ls in variants.items():
                b, blk, a = wrap(ls)
                if vname and re.fullmatch(r"(?:[ \t\r\n]|\\[rn])*", a):
                    blk, a = blk + a, ""  # no END and nothing but separators after it: the run reaches the end
                name = f"{kname}/{wname}{vname}"
                items.append({"id": name, "text": b + blk + a})
                want[name] = (rule, len(b), len(b) + len(blk), b + f"[REDACTED:{rule}]" + a, blk)
    js = {o["id"]: o for o in run_driver(items, KEY)}
    bad = []
    for it in items:
        rule, s, e, red, blk = want[it["id"]]
        res = sc.scan(it["text"])
        py_out = sc.filter(it["text"])["text"]
        j = js[it["id"]]
        got_py = [(f.rule, f.start, f.end) for f in res.findings]
        got_js = [(f["rule"], f["start"], f["end"]) for f in j["findings"]]
        if got_py != [(rule, s, e)] or got_js != got_py or py_out != red or j["filter"]["text"] != red \
                or survivors(py_out, blk) or survivors(j["filter"]["text"], blk):
            bad.append((it["id"], got_py, got_js))
    assert not bad, f"{len(bad)} of {len(items)} wrong, first: {bad[:3]}"
    assert len(items) >= 150


def test_generated_public_keys_are_no_finding(sc: Scanner, tmp_path: Path) -> None:
    priv = _run("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048")
    pub = _run("openssl", "pkey", "-pubout", inp=priv).decode()
    f = tmp_path / "id"
    _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "me@host", "-f", str(f))
    ssh_pub = (tmp_path / "id.pub").read_text()
    for text in (pub, pub.replace("\n", "\\n"), ssh_pub, f"authorized_keys:\n{ssh_pub}"):
        assert sc.scan(text).findings == []
        assert [o["findings"] for o in run_driver([{"id": "x", "text": text}], KEY)] == [[]]


def test_rules_json_holds_the_documented_patterns() -> None:
    """tools/dlp_key_patterns.py writes these patterns out of named parts; rules.json must hold exactly them."""
    sys.path.insert(0, str(REPO / "tools"))
    import dlp_key_patterns

    by_id = {r.id: r for r in load_rules().rules}
    for rid, pattern in dlp_key_patterns.PATTERNS.items():
        assert by_id[rid].pattern == pattern, rid
    assert "\x00" not in "".join(dlp_key_patterns.PATTERNS.values()).replace("\\x00", "")
    ids = [r.id for r in load_rules().rules]
    assert ids[ids.index("private-key-header") + 1:][:2] == ["putty-private-key", "age-secret-key"]
