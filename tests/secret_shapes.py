"""One catalogue of secret shapes, for every test that checks an output kind (tests/unit/test_secret_shapes.py,
tests/e2e/test_secret_shapes.py): each shape is a text as an app would write it (an exception, a log line, a
header) and the secrets in it that must never leave. The shapes follow gitleaks' default rules
(bootstrap/doors/shapes.py names the rule set and its commit); each secret holds ``Pl4nted`` (or ``PL4NTED``).
"""

from dataclasses import dataclass
from typing import Tuple

MARK = "Pl4nted"


@dataclass(frozen=True)
class Shape:
    rule: str  # gitleaks' rule id, or the project's own name for the shape
    text: str  # as it appears in a text the package writes
    secrets: Tuple[str, ...]  # none of these may appear in anything written

    @property
    def one_line(self) -> bool:
        return "\n" not in self.text


def _fill(prefix: str, length: int, alphabet: str = "a1B2c3D4e5F6g7H8i9J0") -> str:
    body = MARK + alphabet * 10
    return prefix + body[:length]


PEM_BODY = (f"MIIEpAIBAAKCAQEA{MARK}0q1w2e3r4t5y6u7i8o9p0a1s2d3f4g5h6j7k8l9z0x1c2v3b4n5m6",
            f"QWxhZGRpbjpvcGVuIHNlc2FtZQ{MARK}AaBbCcDdEeFfGgHhIiJjKkLlMmNnOoPpQqRrSsTtUuVv",
            f"{MARK}ZW5kIG9mIGtleQ==")
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_BODY) + "\n-----END RSA PRIVATE KEY-----"

CATALOGUE = (
    Shape("aws-access-token", "aws says AKIAPL4NTEDX7Q2ZW3M4 is not allowed", ("AKIAPL4NTEDX7Q2ZW3M4",)),
    Shape("github-pat", f"push refused for {_fill('ghp_', 36)}", (_fill("ghp_", 36),)),
    Shape("github-oauth", f"oauth {_fill('gho_', 36)} expired", (_fill("gho_", 36),)),
    Shape("github-fine-grained-pat", f"token {_fill('github_pat_', 82)}", (_fill("github_pat_", 82),)),
    Shape("slack-bot-token", f"slack: xoxb-1234567890-1234567890123-{MARK}SlackBotAbc", (f"{MARK}SlackBotAbc",)),
    Shape("slack-webhook-url", f"posting to https://hooks.slack.com/services/T0000/B0000/{MARK}Webhook0123456789",
          (f"{MARK}Webhook0123456789",)),
    Shape("private-key", f"cannot load key:\n{PEM}\nfrom the vault", PEM_BODY),
    Shape("jwt", f"session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{MARK}In0x.{MARK}Sig_nature-0123456789 rejected",
          (f"eyJzdWIiOiJ{MARK}In0x", f"{MARK}Sig_nature-0123456789")),
    Shape("generic-api-key", f"login refused: API_KEY=zzz{MARK}123 done", (f"zzz{MARK}123",)),
    Shape("generic-api-key (quoted)", f'settings {{"client_secret": "cs-{MARK}-998877", "lr": 0.1}}',
          (f"cs-{MARK}-998877",)),
    Shape("generic-api-key (colon)", f"db password: {MARK}!2024x", (f"{MARK}!2024x",)),
    Shape("huggingface-access-token", f"hub said 401 for {_fill('hf_', 34, 'abcdefghij')}",
          (_fill("hf_", 34, "abcdefghij"),)),
    Shape("openai-api-key", f"openai: sk-proj-{MARK}T3BlbkFJ0123456789abcdef", (f"sk-proj-{MARK}T3BlbkFJ0123456789abcdef",)),
    Shape("curl-auth-header (bearer)", f"GET /v1 with Authorization: Bearer {MARK}Opaque0123456789",
          (f"{MARK}Opaque0123456789",)),
    Shape("curl-auth-header (basic)", f"headers={{'Authorization': 'Basic dXNlcjp{MARK}Bhc3M='}}",
          (f"dXNlcjp{MARK}Bhc3M=",)),
    Shape("gitlab-pat", f"gitlab {_fill('glpat-', 20)} revoked", (_fill("glpat-", 20),)),
    Shape("stripe-access-token", f"charge failed: sk_live_{MARK}0123456789ab", (f"sk_live_{MARK}0123456789ab",)),
    Shape("gcp-api-key", f"maps key {_fill('AIza', 35)} over quota", (_fill("AIza", 35),)),
    Shape("url-userinfo", f"cannot reach postgres://trainer:{MARK}Pw9@db.internal/runs", (f"{MARK}Pw9",)),
    # generic-api-key's keywords inside compound names (issue 45): one word, or a word the rule has no list of
    Shape("generic-api-key (compound PGPASSWORD)", f"psql exited 2 with PGPASSWORD={MARK}pg77 set", (f"{MARK}pg77",)),
    Shape("generic-api-key (compound AccountKey)", f"DefaultEndpointsProtocol=https;AccountName=runs;AccountKey="
          f"{MARK}Az0+/9Qk==;EndpointSuffix=core.windows.net", (f"{MARK}Az0+/9Qk==",)),
    Shape("generic-api-key (compound SECRETKEY)", f"minio: SECRETKEY={MARK}mn1 rejected", (f"{MARK}mn1",)),
    Shape("generic-api-key (compound dbpassword)", f"connect(dbpassword={MARK}db2)", (f"{MARK}db2",)),
    Shape("generic-api-key (compound ADMINPASSWORD)", f"ADMINPASSWORD={MARK}ad3", (f"{MARK}ad3",)),
    Shape("generic-api-key (compound storageKey)", f"storageKey: {MARK}St0r4ge", (f"{MARK}St0r4ge",)),
    Shape("generic-api-key (compound masterKey)", f"vault masterKey={MARK}mk4 sealed", (f"{MARK}mk4",)),
)
