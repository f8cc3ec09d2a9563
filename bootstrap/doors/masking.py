"""Secrets never leave: what counts as one, and how text is masked. Pure.

Everything the package writes or prints goes through one of these functions. A value
is secret when the name it is stored under looks secret in any part of its path
(``HF_TOKEN``, ``env.vars.WANDB_API_KEY``, ``db.password``); when it names a secret
inside a structure (``{HF_TOKEN: x}``, ``A=1,API_KEY=x``); and, whatever the name,
where the value itself carries a credential: a URL's user information
(``postgres://user:***@host``, ``https://***@github.com``) or a token with a
well-known prefix (``ghp_...``, ``hf_...``). So ``GITHUB_PAT=ghp_...`` and
``DATABASE_URL=postgres://u:pw@h/db`` are masked although neither name says
"secret". A token without a known prefix under a name without a marker word cannot
be told from a plain value: give it a marker name, or keep it in the shell.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from bootstrap.doors.overrides import split

MASK = "***"

# Name markers, matched case-insensitively anywhere in a name (HF_TOKEN, WANDB_API_KEY,
# AWS_SECRET_ACCESS_KEY, GOOGLE_APPLICATION_CREDENTIALS, MLFLOW_TRACKING_PASSWORD), plus
# PAT as a whole word (GITHUB_PAT). Masking a harmless name costs little; missing one leaks.
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|KEY|CREDENTIAL|PRIVATE|AUTH|COOKIE"
                          r"|(?:^|[^A-Za-z])PAT(?:$|[^A-Za-z])", re.IGNORECASE)
# A URL's user information: everything between "://" and the token's last "@" (a
# password may hold "/" or "@"), also as Hydra escapes it in recorded overrides
# (postgres\://u\:pw@h). With a password, the user name stays; without one, the user
# part may itself be a token (https://TOKEN@github.com) and is masked whole.
# The runs before "://" and ":" never give back (*+): the character after each run is one the
# run cannot hold, so no match is lost, and a long run is not scanned again from each of its
# characters (a sweep summary's text is cleaned whole).
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*+\\?://)(?P<user>[^\s:/@\\]*+\\?:)?\S*@")
# Tokens that announce themselves: GitHub, Hugging Face, OpenAI-style, Slack, GitLab, npm,
# PyPI, AWS access key ids. The lookahead (each token's first letter) only skips positions fast.
_TOKEN = re.compile(r"(?=[ghsxnpA])\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}"
                    r"|sk-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}"
                    r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{30,}|AKIA[0-9A-Z]{16})")
_STRUCTURE = re.compile(r"[{\[:=]")  # a value that is a dict, a list or key-value text
_REFERENCE = re.compile(r"\$\{[^{}\s,]*\}")  # an interpolation without a default: ${oc.env:NAME}, ${a.b}


def is_secret(name: Any) -> bool:
    """Does any part of this name or dotted path look like it holds a secret?"""
    return bool(_SECRET_NAME.search(str(name)))


# A config key that holds a credential, judged by whole words of its own name (the last part of
# its path): remembered values are masked in every text, so `tokenizer: gpt2` or `message_key:
# message` must not count, as they would by the marker words of is_secret.
_CREDENTIAL_WORDS = frozenset({"token", "secret", "password", "passwd", "passphrase", "credential", "credentials",
                               "cookie", "pat", "apikey"})
_KEY_KINDS = frozenset({"api", "access", "secret", "private", "signing", "encryption", "auth", "license", "hub"})
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def names_a_credential(key: Any) -> bool:
    """Does this config key's own name say it holds a credential (``password``, ``hub_token``,
    ``api_key``, ``key``), as opposed to merely containing a marker (``tokenizer``, ``message_key``)?"""
    words = [w.lower() for w in _WORDS.findall(str(key))]
    if any(w in _CREDENTIAL_WORDS for w in words):
        return True
    return words == ["key"] or any(w == "key" and i and words[i - 1] in _KEY_KINDS for i, w in enumerate(words))


def mask_credentials(text: Any) -> str:
    """``text`` with URL user information and self-announcing tokens replaced by the mask."""
    text = _USERINFO.sub(lambda m: m.group("head") + (m.group("user") or "") + MASK + "@", str(text))
    return _TOKEN.sub(MASK, text)


def names_secret(text: Any) -> bool:
    """Text that names a secret inside a structure: ``{HF_TOKEN: x}``, ``[PASSWORD, x]``, ``A=1,KEY=x``."""
    # A password that happens to hold a marker word is masked on its own; a reference
    # (${oc.env:HF_TOKEN}) names a secret but holds none.
    text = _REFERENCE.sub("", mask_credentials(text))
    return is_secret(text) and bool(_STRUCTURE.search(text))


def masked(name: Any, value: Any) -> str:
    """A value stored under ``name`` (a variable, a key), as it may be shown."""
    text = str(value)
    if _nothing_to_mask(str(name)) and _nothing_to_mask(text):  # most values: no rule below can find anything
        return text
    return MASK if is_secret(name) or names_secret(text) else mask_credentials(text)


def holds_secret(value: Any, inside: bool = False) -> bool:
    """Does a (possibly nested) value hold a secret-looking key, or a credential, anywhere?

    Inside a dict or list, a secret-looking word counts too (``[PASSWORD, x]``)."""
    if isinstance(value, dict):
        return any(is_secret(k) or holds_secret(k, True) or holds_secret(v, True) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(holds_secret(v, True) for v in value)
    if value is None or isinstance(value, (bool, int, float)):
        return False
    text = str(value)
    return mask_credentials(text) != text or names_secret(text) or (inside and is_secret(text))


# Every marker word of _SECRET_NAME, lower-case: ASCII text holding none of them cannot match it.
_MARKER_WORDS = ("token", "secret", "password", "passwd", "passphrase", "key", "credential", "private", "auth",
                 "cookie", "pat")


def _nothing_to_mask(text: str) -> bool:
    """Text in which no rule below can find a secret, told without Hydra's parser (ANTLR: about
    0.1 ms an override, and a sweep of 10,000 jobs has as many distinct ones).

    Each rule looks for a marker word, a credential (``://`` or a token) or, after removing
    ``${...}`` references, a marker word, in a part of the text: the key or the value. A part
    holds none of these where the whole holds none, so such text is its own masked form. Only
    ASCII: ``re.IGNORECASE`` also matches a few other letters (``ı`` for ``i``, ``ſ`` for ``s``).
    ``tests/unit/test_masking.py`` checks the two paths agree."""
    return text.isascii() and _CUE.search(text.lower()) is None and _TOKEN.search(text) is None


# Anything in lower-cased ASCII text that a rule could start from: a marker word, a reference, a URL; tokens
# are sought in the text as it is. Lower-casing first is 3 times faster than one pattern ignoring case.
_CUE = re.compile("|".join(_MARKER_WORDS) + r"|\$\{|://")


def masked_override(override: Any) -> str:
    """``+env.vars.HF_TOKEN=hf_x`` -> ``+env.vars.HF_TOKEN=***``: command lines carry secrets too.

    A key with a secret-looking part, or a value that names a secret inside it
    (``env.vars={HF_TOKEN:x}``), masks the whole value; any other value keeps its text
    with credentials inside it masked.
    """
    text = str(override)
    # Most overrides (a sweep's 10,000 distinct ones) hold nothing to mask: no parse needed.
    return text if _nothing_to_mask(text) else _masked_override(text)


def _masked_override(text: str) -> str:
    parsed = split(text)
    if parsed.value is None:
        return mask_credentials(text)
    lhs = text[: len(text) - len(parsed.value) - 1]
    return f"{lhs}={masked(parsed.key, parsed.value)}"


def masked_line(text: Any) -> str:
    """Free text (a log line of overrides, a job name, a fact from a report): each
    ``name=value`` token masked as an override, credentials masked everywhere."""
    text = str(text)
    return text if _nothing_to_mask(text) else _masked_line(text)


def _masked_line(text: str) -> str:
    return " ".join(masked_override(t) if "=" in t else mask_credentials(t) for t in text.split(" "))


def masked_text(text: Any, overrides: Iterable[str] = ()) -> str:
    """An error message: the value of every secret-carrying override masked wherever it
    appears, then every ``name=value`` token and credential (:func:`masked_line`)."""
    text = str(text)
    for override in overrides:
        value = split(override).value
        if value and masked_override(override) != str(override):
            text = text.replace(value, MASK)
            # Hydra also prints a value unquoted or as parsed: mask its inner text too.
            inner = value.strip("'\"{}[] ")
            if len(inner) >= 4:
                text = text.replace(inner, MASK)
    return "\n".join(masked_line(line) for line in text.split("\n"))


# One line of source or configuration that assigns to a name: `api_key = "x"`, `export HF_TOKEN=x`,
# `"password": "x",`, `WANDB_API_KEY: x` (a diff's +/- first).
_ASSIGNMENT = re.compile(r"""^(?P<head>[-+ ]?\s*(?:export\s+)?["']?(?P<name>[A-Za-z_][\w.-]*)["']?\s*(?::=|=|:)\s*)"""
                         r"""(?P<value>\S.*?)\s*$""")


def masked_source(text: Any) -> str:
    """Source text (a git diff, a file of settings): the value of each line's assignment to a name that says
    it holds a credential masked (``api_key = "x"`` -> ``api_key = ***``; ``tokenizer = x`` is kept), and
    credentials everywhere (:func:`mask_credentials`)."""
    lines = []
    for line in str(text).split("\n"):
        found = _ASSIGNMENT.match(line) if "=" in line or ":" in line else None
        if found and names_a_credential(found.group("name")) and not _REFERENCE.fullmatch(found.group("value")):
            line = found.group("head") + MASK
        lines.append(mask_credentials(line))
    return "\n".join(lines)
