"""Secrets never leave: what counts as one, and how text is masked. Pure.

A value is secret when the name it is stored under looks secret in any part of its
path (``HF_TOKEN``, ``env.vars.WANDB_API_KEY``, ``db.password``), and, whatever the
name, where the value itself carries a credential: the password of a URL
(``postgres://user:pw@host``) or a token with a well-known prefix (``ghp_...``,
``hf_...``). So ``GITHUB_PAT=ghp_...`` and ``DATABASE_URL=postgres://u:pw@h/db`` are
masked although neither name says "secret".
"""

from __future__ import annotations

import re
from typing import Any, Iterable

MASK = "***"

# Name markers, matched case-insensitively anywhere in a name (HF_TOKEN, WANDB_API_KEY,
# AWS_SECRET_ACCESS_KEY, GOOGLE_APPLICATION_CREDENTIALS, MLFLOW_TRACKING_PASSWORD), plus
# PAT as a whole word (GITHUB_PAT). Masking a harmless name costs little; missing one leaks.
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|KEY|CREDENTIAL|PRIVATE|AUTH|COOKIE"
                          r"|(?:^|[^A-Za-z])PAT(?:$|[^A-Za-z])", re.IGNORECASE)
# The password in a URL's user info: scheme://user:PASSWORD@host, also as Hydra escapes
# it in recorded overrides (postgres\://u\:pw@h).
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*\\?://[^/\s:@]*?\\?:)[^/\s@]+(?=@)")
# Tokens that announce themselves: GitHub, Hugging Face, OpenAI-style, Slack, GitLab, npm,
# PyPI, AWS access key ids.
_TOKEN = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}"
                    r"|sk-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}"
                    r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{30,}|AKIA[0-9A-Z]{16})")


def is_secret(name: str) -> bool:
    """Does any part of this name or dotted path look like it holds a secret?"""
    return bool(_SECRET_NAME.search(str(name)))


def mask_credentials(text: str) -> str:
    """``text`` with URL passwords and self-announcing tokens replaced by the mask."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
    return _TOKEN.sub(MASK, text)


def masked(name: str, value: Any) -> str:
    """A variable's value as it may be shown."""
    return MASK if is_secret(name) else mask_credentials(str(value))


def holds_secret(value: Any) -> bool:
    """Does a (possibly nested) value hold a secret-looking key or a credential anywhere?"""
    if isinstance(value, dict):
        return any(is_secret(k) or holds_secret(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(holds_secret(v) for v in value)
    return mask_credentials(str(value)) != str(value)


def masked_override(override: str) -> str:
    """``+env.vars.HF_TOKEN=hf_x`` -> ``+env.vars.HF_TOKEN=***``: command lines carry secrets too.

    A key with a secret-looking part masks the whole value; a dict or list value that
    names a secret anywhere (``env.vars={HF_TOKEN:x}``) is masked whole; any other value
    keeps its text with credentials inside it masked.
    """
    key, sep, value = str(override).partition("=")
    if not sep:
        return mask_credentials(override)
    secret_inside = value.lstrip().startswith(("{", "[")) and is_secret(value)
    if is_secret(key) or secret_inside:
        return f"{key}={MASK}"
    return f"{key}={mask_credentials(value)}"


def masked_overrides_line(text: str) -> str:
    """A line of space-separated overrides (Hydra's ``#3 : a=b c=d`` log lines), each masked."""
    return " ".join(masked_override(token) if "=" in token else mask_credentials(token) for token in text.split(" "))


def masked_text(text: str, overrides: Iterable[str] = ()) -> str:
    """Free text (an error message) with the value of every secret-carrying override masked,
    and any credential it contains."""
    for override in overrides:
        value = str(override).partition("=")[2]
        if value and masked_override(override) != override:
            text = text.replace(value, MASK)
            # Hydra also prints a value unquoted or as parsed: mask its inner text too.
            inner = value.strip("'\"{}[] ")
            if len(inner) >= 4:
                text = text.replace(inner, MASK)
    return mask_credentials(text)
