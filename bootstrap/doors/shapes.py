"""Credential shapes: the tokens, private-key blocks and authorization headers that any text is masked for. Pure.

The shapes follow gitleaks' default rules (``config/gitleaks.toml`` of github.com/gitleaks/gitleaks, read at
commit 009e025ad4106ab333aa0b9dc4f2a884390d134c; the rule ids are named beside each pattern). gitleaks finds
secrets to report them, so it trades recall for precision with entropy thresholds, stop words and exact
lengths; a mask costs little when it is wrong and much when it misses, so here every pattern is taken
without those filters and with a lower bound on length where gitleaks gives an exact one. Rules that need a
service's name beside the value (``twitter ... = x``) are left to the assignment rule of
:mod:`bootstrap.doors.masking` (a credential-looking name), as gitleaks' ``generic-api-key`` would find them.

Three kinds:

- :data:`TOKEN`: a token that announces itself by its prefix (``ghp_``, ``hf_``, ``AKIA``, ``eyJ...``);
- :data:`PRIVATE_KEY`: a whole PEM private-key block, ``-----BEGIN ... PRIVATE KEY-----`` to its ``END`` line,
  body lines included; a block cut before its end is masked to the end of the text;
- :data:`HEADER`: an ``Authorization:`` header's credentials (``Bearer``, ``Basic``, ``Token``, any scheme),
  and a ``Bearer`` token anywhere.
"""

from __future__ import annotations

import re

# One alternation of every prefixed token; a word character is ASCII's, as in gitleaks' Go patterns (Python's \w
# would take a dotless i). The lookahead (each token's first character) only skips positions
# fast: most text holds none of them.
TOKEN = re.compile(
    r"(?=[ghsxnpAaedrS])\b(?:"
    r"gh[pousr]_[A-Za-z0-9]{20,}"  # github-pat, github-oauth, github-app-token, github-refresh-token
    r"|github_pat_[A-Za-z0-9_]{20,}"  # github-fine-grained-pat
    r"|gl(?:pat|dt|ft|rt|soat|ffct|imt|agent|oas|ptt)-[A-Za-z0-9_-]{20,}"  # gitlab-*
    r"|glcbt-[A-Za-z0-9_]{1,5}_[A-Za-z0-9_-]{20,}"
    r"|hf_[A-Za-z0-9]{20,}|api_org_[A-Za-z0-9]{20,}"  # huggingface-access-token, -organization-api-token
    r"|sk-[A-Za-z0-9_-]{20,}"  # openai-api-key, anthropic-api-key, anthropic-admin-api-key
    r"|(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,}"  # stripe-access-token
    r"|xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}"  # slack-*-token, slack-app-token
    r"|npm_[A-Za-z0-9]{30,}"  # npm-access-token
    r"|pypi-[A-Za-z0-9_-]{30,}"  # pypi-upload-token
    r"|(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"  # aws-access-token
    r"|AIza[A-Za-z0-9_-]{35}"  # gcp-api-key
    # jwt: its first part, as gitleaks' rule, has no "-" or "_", so that a run of "ey-ey-..." is not read again
    # from each "ey" (the only pattern here with a required end after a run)
    r"|ey[A-Za-z0-9]{10,}+\.ey[A-Za-z0-9/\\_-]{10,}+\.[A-Za-z0-9/\\_=-]*+"
    r"|do[opr]_v1_[a-f0-9]{64}|dapi[a-f0-9]{32}"  # digitalocean-*, databricks-api-token
    r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|SG\.[A-Za-z0-9_=.-]{66}"  # shopify-*, sendgrid-api-token
    r"|hv[sb]\.[A-Za-z0-9_-]{90,}"  # vault-service-token, vault-batch-token
    r")")
# A URL that is itself a credential (slack-webhook-url): the path is the secret.
WEBHOOK = re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}")

# private-key: the whole block, header to footer (gitleaks matches the same span). Without a footer (the text
# was cut) the rest of the text goes: a body line must never be shown.
PRIVATE_KEY = re.compile(r"(?P<begin>-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)"
                         r"(?:.*?(?P<end>-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)|.*)", re.DOTALL)
PRIVATE_KEY_CUE = "-----BEGIN"

# curl-auth-header: an Authorization header's scheme stays, its credentials go (``Authorization: Bearer ***``,
# ``Authorization: Basic ***``); also as JSON or a dict prints it ("Authorization": "Bearer x"), and a
# ``Bearer`` token on its own.
HEADER = re.compile(r"(?i)(?P<head>\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
                    r"(?:(?:bearer|basic|token|bot|digest|negotiate|apikey)\s+)?)(?P<value>[^\s\"',;]+)"
                    r"|(?P<bearer>\bbearer\s+)(?P<token>[A-Za-z0-9._~+/=-]{8,})")
HEADER_CUES = ("auth", "bearer")  # lower-case words without which HEADER cannot match
