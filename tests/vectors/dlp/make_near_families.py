"""Near-format vectors for the vendor-family rules (issue 25, the 47 folded near proposals, age, jwt, clojars): one
planted fake key per rule whose body is off the exact format (length, charset or a missing segment) but fits the
rule's `near` pattern. The expectation is written from the plant, not from an engine: one near_format finding of the
rule on the planted span, severity one step below the rule's, the filter text with the span replaced by the marker.
Appends to (or refreshes in) tests/vectors/dlp/near.json the cases named `family-near/<rule>`.

    python tests/vectors/dlp/make_near_families.py
"""
from __future__ import annotations

import json
import random
import string
from pathlib import Path

HERE = Path(__file__).parent
OUT = HERE / "near.json"
RULES = HERE.parent.parent.parent / "eventlog" / "dlp" / "rules.json"
R = random.Random(2547)
A62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B32 = "abcdefghijklmnopqrstuvwxyz234567"
STEP = {"critical": "high", "high": "medium", "medium": "medium", "low": "low"}


def mixed(n: int) -> str:
    """n base62 characters with an upper-case letter, a lower-case letter and a digit (what a random key has)."""
    while True:
        s = "".join(R.choice(A62) for _ in range(n))
        if any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s):
            return s


def of(alphabet: str, n: int) -> str:
    return "".join(R.choice(alphabet) for _ in range(n))


def upper(n: int) -> str:
    return of(string.ascii_uppercase + string.digits, n)


# rule -> (text before, the planted key); each key is off its exact pattern as the comment says
PLANTS = {
    "tavily-api-key": "tvly-" + mixed(70),                       # exact: 24-64
    "jina-api-key": "jina_" + mixed(30),                          # exact: 40-100
    "perplexity-api-key": "pplx-" + mixed(40),                    # exact: 48
    "openrouter-api-key": "sk-or-v1-" + mixed(64),                # exact: 64 hex
    "replicate-api-token": "r8_" + mixed(30),                     # exact: 37
    "huggingface-token": "hf_" + mixed(30),                       # exact: 34
    "elevenlabs-api-key": "sk_" + of(HEX, 40),                    # exact: 48 hex
    "discord-webhook-url": "discord.com/api/webhooks/" + of("0123456789", 12) + "/" + mixed(40),  # exact: 17-20 / 60-80
    "microsoft-teams-webhook": "webhook.office.com/webhookb2/" + mixed(50),  # exact: guid@guid/IncomingWebhook/…
    "azure-devops-pat": mixed(45) + "JQQJ99" + mixed(14) + "AZDO" + mixed(4),  # exact: 52 before the signature
    "azure-annotated-key": mixed(45) + "JQQJ99" + mixed(24),     # exact: 52 before the signature
    "azure-ad-client-secret": mixed(3) + "8Q~" + mixed(28),      # exact: 8Q~ + 34
    "vault-token": "hvs." + mixed(40),                            # exact: 90+
    "digitalocean-token": "dop_v1_" + mixed(40),                  # exact: 64 hex
    "doppler-token": "dp.pt." + mixed(30),                        # exact: 40-44
    "docker-hub-token": "dckr_pat_" + mixed(20),                  # exact: 27
    "npm-token": "npm_" + mixed(24),                              # exact: 36
    "nuget-api-key": "oy2" + of(B32, 35),                         # exact: 43
    "sendgrid-api-key": "SG." + mixed(20) + "." + mixed(40),     # exact: 22 . 43
    "stripe-webhook-secret": "whsec_" + mixed(20),                # exact: 32-100
    "gitlab-token": "glpat-" + mixed(18),                         # exact: 20+
    "shopify-token": "shpat_" + mixed(32),                        # exact: 32 hex
    "atlassian-api-token": "ATATT3" + mixed(100),                 # exact: 186
    "linear-api-key": "lin_api_" + mixed(30),                     # exact: 40
    "notion-token": "ntn_" + mixed(30),                           # exact: 11 digits + 35
    "postman-api-key": "PMAK-" + mixed(40),                       # exact: 24 hex - 34 hex
    "pypi-token": "pypi-AgEIcHlwaS5vcmc" + mixed(30),             # exact: 50+ after the location
    "sentry-token": "sntryu_" + mixed(40),                        # exact: 64 hex
    "supabase-token": "sbp_" + mixed(30),                         # exact: 40 hex
    "cloudflare-api-token": "cfut_" + mixed(30),                  # exact: 40 + 8 hex
    "heroku-api-key": "HRKU-" + mixed(40),                        # exact: AA + 58
    "grafana-token": "glsa_" + mixed(30),                         # exact: 32 _ 8 hex
    "new-relic-key": "NRAK-" + mixed(24),                         # exact: 27 upper-case/digits
    "mapbox-secret-token": "sk.eyJ" + mixed(50),                  # exact: a second dot segment
    "firebase-fcm-server-key": "AAAA" + mixed(7) + ":APA91b" + mixed(60),  # exact: 100-200
    "square-token": "sq0atp-" + mixed(30),                        # exact: 22
    "yandex-cloud-api-key": "AQVN" + mixed(30),                   # exact: 35-38
    "langsmith-api-key": "lsv2_pt_" + mixed(40),                  # exact: 32 hex _ 10 hex
    "tailscale-key": "tskey-auth-" + mixed(30),                   # exact: a second hyphen segment
    "pulumi-access-token": "pul-" + of(HEX, 30),                  # exact: 40 hex
    "rubygems-api-key": "rubygems_" + mixed(40),                  # exact: 48 hex
    "databricks-token": "dapi" + of(HEX, 28),                     # exact: 32 hex
    "planetscale-token": "pscale_tkn_" + mixed(20),               # exact: 32-64
    "figma-token": "figd_" + mixed(30),                           # exact: 40-54
    "braintree-access-token": "access_token$production$" + mixed(40),  # exact: 16 $ 32 hex
    "age-secret-key": "AGE-SECRET-KEY-1" + upper(40),             # exact: 58 bech32
    "clojars-api-token": "CLOJARS_" + mixed(40),                  # exact: 60 lower-case/digits
    "jwt": "eyJ" + mixed(30) + ".eyJ" + mixed(60) + "." + mixed(43),  # a header that decodes to no JSON object
}


def main() -> None:
    rules = {r["id"]: r for r in json.loads(RULES.read_text("utf-8"))["rules"]}
    doc = json.loads(OUT.read_text("utf-8"))
    cases = [c for c in doc["cases"] if not c["name"].startswith("family-near/")]
    for rid, key in PLANTS.items():
        before = "pasted from the dashboard: "
        text = before + key + " (rotate it)"
        s, e = len(before), len(before) + len(key)
        cases.append({"name": f"family-near/{rid}", "why": "a planted key off the exact format, inside the near pattern",
                      "text": text, "preview": False,
                      "findings": [{"rule": rid, "start": s, "end": e, "tier": "near_format",
                                    "severity": STEP[rules[rid]["severity"]], "action": "redact"}],
                      "filter": {"text": before + f"[REDACTED:{rid}]" + " (rotate it)", "held": 0}})
    doc["cases"] = cases
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", "utf-8")


if __name__ == "__main__":
    main()


# Positives of the rules added with the near fold (issue 25, external evaluation): appended to families.json as
# `family-pos/<rule>/<n>` (make_families.py keeps them: it is rerun before this script). Spans are the planted value.
POS = {
    "secret-assignment-camel": [("const ", "mySecretString", "=", mixed(30)), ("", "dbPassword", ": ", '"' + mixed(14) + '"')],
    "secret-call-argument": [("utils.GetEnvOrDefault(", '"api_token", ', "", '"' + mixed(24) + '"'),
                             ("std::string ", "secret(", "", '"' + mixed(20) + '"')],
    "azure-storage-key": [("", 'AZURE_STORAGE_ACCOUNT_KEY = "', "", of(A62 + "+/", 86) + '=='),
                          ("blob ", "storage key: ", "", of(A62 + "+/", 86) + "==")],
    "clojars-api-token": [("deploy with ", "", "", "CLOJARS_" + of(HEX + "ghijklmnopqrstuvwxyz", 60)),
                          ("CLOJARS_PASSWORD is ", "", "", "CLOJARS_" + of(HEX + "ghijklmnopqrstuvwxyz", 60))],
}


def positives() -> None:
    path = HERE / "families.json"
    doc = json.loads(path.read_text("utf-8"))
    cases = [c for c in doc["cases"] if not c["name"].startswith("family-pos/")]
    for rid, plants in POS.items():
        for n, (a, name, op, value) in enumerate(plants):
            head = a + name + op
            text = head + value + " ;"
            cases.append({"name": f"family-pos/{rid}/{n}", "family": rid, "text": text, "preview": False,
                          "expect": [{"rule": rid, "start": len(head), "end": len(head) + len(value)}]})
    doc["cases"] = cases
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", "utf-8")


if __name__ == "__main__":
    positives()
