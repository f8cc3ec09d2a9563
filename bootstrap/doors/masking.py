"""Secrets never leave: what counts as one, and how text is masked. Pure.

Everything the package writes or prints goes through one of these functions. A value
is secret when the name it is stored under looks secret in any part of its path
(``HF_TOKEN``, ``env.vars.WANDB_API_KEY``, ``db.password``); when it names a secret
inside a structure (``{HF_TOKEN: x}``, ``A=1,API_KEY=x``); and, whatever the name,
where the value itself carries a credential (:func:`mask_credentials`, the one rule for
every free text): a URL's user information (``postgres://user:***@host``,
``https://***@github.com``), a token with a well-known prefix (``ghp_...``, ``hf_...``),
a PEM private-key block, an ``Authorization:`` header (:mod:`bootstrap.doors.shapes`, after
gitleaks' default rules), or an assignment to a name that says it holds a credential
(``API_KEY=x``, ``"password": "x"``, ``PGPASSWORD=x``, Azure's ``AccountKey=x``: a keyword of gitleaks' generic
rule anywhere in the name, :func:`names_a_credential`). So ``GITHUB_PAT=ghp_...`` and
``DATABASE_URL=postgres://u:pw@h/db`` are masked although neither name says
"secret". A token without a known prefix under a name without a marker word cannot
be told from a plain value: give it a marker name, or keep it in the shell.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Iterable

from bootstrap.doors import shapes
from bootstrap.doors.overrides import split

MASK = "***"

# Name markers, matched case-insensitively anywhere in a name (HF_TOKEN, WANDB_API_KEY,
# AWS_SECRET_ACCESS_KEY, GOOGLE_APPLICATION_CREDENTIALS, MLFLOW_TRACKING_PASSWORD), plus
# PAT as a whole word (GITHUB_PAT). Masking a harmless name costs little; missing one leaks.
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|KEY|CREDENTIAL|CREDS|PRIVATE|AUTH|COOKIE"
                          r"|(?:^|[^A-Za-z])PAT(?:$|[^A-Za-z])", re.IGNORECASE)
# A URL's user information: everything between "://" and the token's last "@" (a
# password may hold "/" or "@"), also as Hydra escapes it in recorded overrides
# (postgres\://u\:pw@h). With a password, the user name stays; without one, the user
# part may itself be a token (https://TOKEN@github.com) and is masked whole.
# The runs before "://" and ":" never give back (*+): the character after each run is one the
# run cannot hold, so no match is lost, and a long run is not scanned again from each of its
# characters (a sweep summary's text is cleaned whole).
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*+\\?://)(?P<user>[^\s:/@\\]*+\\?:)?\S*@")
_TOKEN = shapes.TOKEN  # tokens that announce themselves: GitHub, Hugging Face, OpenAI, Slack, AWS, JWTs...
_STRUCTURE = re.compile(r"[{\[:=]")  # a value that is a dict, a list or key-value text
_REFERENCE = re.compile(r"\$\{[^{}\s,]*\}")  # an interpolation without a default: ${oc.env:NAME}, ${a.b}


def is_secret(name: Any) -> bool:
    """Does any part of this name or dotted path look like it holds a secret?"""
    return bool(_SECRET_NAME.search(str(name)))


# gitleaks' generic rule (``generic-api-key``, config/gitleaks.toml at commit 009e025ad4106ab333aa0b9dc4f2a884390d134c,
# as bootstrap/doors/shapes.py): a name holding one of its keywords anywhere, inside a compound word too (PGPASSWORD,
# AccountKey, storageKey, dbpassword), says it holds a credential. Ours add the marker words gitleaks leaves elsewhere.
GENERIC_KEYWORDS = ("access", "api", "auth", "key", "credential", "creds", "passwd", "password", "secret", "token")
OUR_KEYWORDS = ("passphrase", "cookie")
_KEYWORD = re.compile("|".join(GENERIC_KEYWORDS + OUR_KEYWORDS) + r"|(?:^|[^a-z])(?P<pat>pat)(?:$|[^a-z])")
# Where a keyword stands inside a name that holds no credential. gitleaks' allowlist of the same rule (a word that
# merely contains a keyword: author, monkey, rapid; a name about a credential, not one: key_name, secret_size,
# token_url, key_file; a database's keys: primary_key), then ours: a tokenizer and its counts of tokens (max_tokens),
# the keys of a record or a config (a log formatter's message_key, OmegaConf's full_key, the callback's config_key), an
# exception's name (KeyError: 'API_KEY'). A remembered value is masked in every text, so a
# name here must never hold a secret; a name missing here costs a masked harmless value, which is the cheap error.
_HARMLESS = re.compile(
    r"access(?:ib\w*|ors?)|access[_.-]?id|random[_.-]?access|api[_.-]?(?:id|name|version)|rapid|capital|author"
    r"|credentials?[_.-]?id|withcredentials|(?:bucket|foreign|hot|idx|natural|primary|pub(?:lic)?|schema|sequence)"
    r"[_.-]?key|turkey|key[_.-]?(?:alias|board|code|frame|id|length|mesh|name|pair|press(?:ed)?|ring|selector"
    r"|signature|size|stone|storetype|word|up|down|left|right)|key[_.-]?vault[_.-]?(?:id|name)"
    r"|key(?:store|tab)[_.-]?(?:file|path)|issuerkeyhash|[dm]onkey|keying|secret[_.-]?(?:length|name|size)"
    r"|usersecretsid|csrf[_.-]?token|(?:api|credentials|token)[_.-]?(?:endpoint|ur[il])|public[_.-]?token"
    r"|(?:key|token)[_.-]?file"
    r"|tokeni[sz]\w*|(?:max|min|num|n|total)(?:[_.-]?(?:new|input|output|prompt))?[_.-]?tokens?"
    r"|(?:message|time|sort|group|partition|cache|hash|lookup|index|join|shard|routing|row|column|field|label|metric"
    r"|map|order|event|record|log|full|config|dict|node|item|entry|attr|attribute|param|state|parent|child|root"
    r"|unique|composite)[_.-]?key|[a-z_.-]*(?:error|exception|warning)s?$")


def names_a_credential(key: Any) -> bool:
    """Does this name say it holds a credential? As gitleaks' generic rule judges a name: one of its keywords
    (:data:`GENERIC_KEYWORDS`, and ours) anywhere in it, inside a compound word too (``PGPASSWORD``,
    ``AccountKey``, ``hub_token``, ``api_key``, ``key``), unless the keyword only stands inside a harmless word or
    name (``tokenizer``, ``author``, ``monkey``, ``key_name``, ``max_tokens``, ``message_key``)."""
    return _names_a_credential(str(key).lower())


@functools.lru_cache(maxsize=4096)
def _names_a_credential(name: str) -> bool:
    found = [(m.start("pat"), m.end("pat")) if m.group("pat") else m.span() for m in _KEYWORD.finditer(name)]
    if not found:
        return False
    harmless = [m.span() for m in _HARMLESS.finditer(name)]
    return any(not any(start <= at and end <= stop for start, stop in harmless) for at, end in found)


def mask_credentials(text: Any) -> str:
    """``text`` with every credential the text itself shows replaced by the mask: the one rule for every free
    text the package writes (an exception, a message, a summary, a picture's text, a tracker's value, a diff).

    Whole PEM private-key blocks, ``Authorization:`` headers and ``Bearer`` tokens, URL user information,
    self-announcing tokens (:mod:`bootstrap.doors.shapes`) and the value of an assignment to a name that says
    it holds a credential (:func:`names_a_credential`: ``API_KEY=x``, ``password: "x"``). Text that holds none
    of their cues is returned as it is, unparsed: the bootstrap cleans every string it writes."""
    text = str(text)
    lower = text.lower()
    if shapes.PRIVATE_KEY_CUE in text:
        text = shapes.PRIVATE_KEY.sub(lambda m: m.group("begin") + MASK + (m.group("end") or ""), text)
    if any(cue in lower for cue in shapes.HEADER_CUES):
        text = shapes.HEADER.sub(_masked_header, text)
    if "://" in text:
        text = _USERINFO.sub(lambda m: m.group("head") + (m.group("user") or "") + MASK + "@", text)
        text = shapes.WEBHOOK.sub(MASK, text)
    text = _TOKEN.sub(MASK, text)
    if ("=" in text or ":" in text) and _CREDENTIAL_CUE.search(lower):
        text = _masked_assignments(text)
    return text


def _masked_header(match: "re.Match[str]") -> str:
    if match.group("head") is not None:
        return match.group("head") + MASK
    return match.group("bearer") + MASK


# An assignment anywhere in a text: `API_KEY=x`, `password: "x y"`, `"token": "x"`, `secret => x`; never a pin or a
# comparison (`google-auth==2.40.0`, a packages.txt line: "==" assigns nothing). The value is
# a quoted string, or a run up to white space, a quote, or what ends a value in a list, a CSV row or a call (`,;)]}`).
# A name starts only where a word starts, and never gives back: a long run of letters is read once, not again from
# each of its characters (text of any length is cleaned whole).
_INLINE = re.compile(r"""(?<![\w.-])(?P<name>[A-Za-z_][\w.-]*+)(?P<sep>["']?[ \t]*(?::=|=>|=(?!=)|:)[ \t]*)"""
                     r"""(?P<value>"[^"\n]*"|'[^'\n]*'|\$\{[^{}\s]*\}|[^\s"'`,;)\]}]+)""")
# After ":" (which also ends a sentence's clause: "password: incorrect", "token: expired") an unquoted value is
# masked only when it looks like one: 8 characters or more, one of them not a letter.
_LOOKS_SECRET = re.compile(r"^(?=.*[^A-Za-z]).{8,}$")


def _masked_assignments(text: str) -> str:
    """Each assignment's value masked where its name says it holds a credential. A match that is not one
    (``refused: API_KEY=x``) gives back all but its name, so that an assignment inside its value is found."""
    out, at, pos = [], 0, 0
    while (match := _INLINE.search(text, pos)) is not None:
        if _holds_credential(match):
            out += [text[at:match.start("value")], MASK]
            at = pos = match.end()
        else:
            pos = match.end("name")
    return "".join(out) + text[at:] if out else text


def _holds_credential(match: "re.Match[str]") -> bool:
    bare = match.group("value").strip("\"'")
    if bare == MASK or not bare or _REFERENCE.fullmatch(bare) or not names_a_credential(match.group("name")):
        return False
    quoted = match.group("value")[0] in "\"'"  # a quoted value is a value, whatever its words
    return quoted or match.group("sep").strip(" \t\"'") != ":" or bool(_LOOKS_SECRET.match(bare))


def names_secret(text: Any) -> bool:
    """Text that names a secret inside a structure: ``{HF_TOKEN: x}``, ``[PASSWORD, x]``, ``A=1,KEY=x``."""
    # A password that happens to hold a marker word is masked on its own; a reference
    # (${oc.env:HF_TOKEN}) names a secret but holds none.
    text = _REFERENCE.sub("", mask_credentials(text))
    return is_secret(text) and bool(_STRUCTURE.search(text))


def masked(name: Any, value: Any) -> str:
    """A value stored under ``name`` (a variable, a key), as it may be shown."""
    text = str(value)
    if len(text) > _MAX_KEPT:
        return _masked(str(name), text)
    return _masked_kept(str(name), text)


def _masked(name: str, text: str) -> str:
    if _nothing_to_mask(name) and _nothing_to_mask(text):  # most values: no rule below can find anything
        return text
    return MASK if is_secret(name) or names_a_credential(name) or names_secret(text) else mask_credentials(text)


_MAX_KEPT = 256  # characters of a value whose masked form is kept: a dry run asks the same of every rank
_masked_kept = functools.lru_cache(maxsize=1024)(_masked)  # pure: a function of the name and the text alone


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
_MARKER_WORDS = ("token", "secret", "password", "passwd", "passphrase", "key", "cred", "private", "auth",
                 "cookie", "pat", "access", "api")


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
_CUE = re.compile("|".join(_MARKER_WORDS) + r"|\$\{|://|bearer|hooks\.slack")
# Lower-cased words without which no name can say it holds a credential (names_a_credential): the assignment
# rule of mask_credentials parses nothing else.
_CREDENTIAL_CUE = re.compile(r"token|secret|passw|passphrase|cred|cookie|key|pat|access|api|auth")


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
    # Credentials over the whole text first: a header, a private-key block, a quoted value span several tokens.
    text = mask_credentials(text)
    return " ".join(masked_override(t) if "=" in t else t for t in text.split(" "))


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
    return "\n".join(masked_line(line) for line in mask_credentials(text).split("\n"))


# One line of source or configuration that assigns to a name: `api_key = "x"`, `export HF_TOKEN=x`,
# `"password": "x",`, `WANDB_API_KEY: x` (a diff's +/- first).
_ASSIGNMENT = re.compile(r"""^(?P<head>[-+ ]?\s*(?:export\s+)?["']?(?P<name>[A-Za-z_][\w.-]*)["']?\s*(?::=|=(?!=)|:)\s*)"""
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
        lines.append(line)
    return mask_credentials("\n".join(lines))  # over the whole text: a private-key block spans lines
