"""Masking's fast path (no parse for text that holds nothing to mask) gives exactly what the full path gives.

The summary masks every override of every job; Hydra's parser costs about 0.1 ms an override,
so text in which no rule can find a secret skips it (bootstrap.masking._nothing_to_mask). The
claim is proven here against the full path on text built to sit on the rules' edges: marker
words split by a reference (``TO${x}KEN``), ``PAT`` inside and outside words, credentials,
tokens one character short, the letters ``re.IGNORECASE`` folds (``ı``, ``ſ``, the Kelvin sign).
"""
import re

from hypothesis import event, given, settings
from hypothesis import strategies as st

from bootstrap.doors import masking

FRAGMENTS = [
    # marker words and pieces of them, in any case
    "token", "TOKEN", "Tok", "en", "secret", "SECRET", "passwd", "Password", "pass", "phrase", "key", "KEY", "Ke", "y",
    "credential", "private", "auth", "AUTH", "cookie", "pat", "PAT", "Pat", "path", "update", "_PAT", "PAT_",
    # Hydra's syntax and structures
    "=", "+", "++", "~", "@", ".", "/", ",", ":", "{", "}", "[", "]", "'", '"', " ", "\\", "${", "$", "oc.env:",
    "env.vars.", "train.lr", "db", "x", "1", "0.001", "-", "_", "a", "b", "\n",
    # credentials and tokens, whole and one short
    "://", ":/", "postgres://u:pw@h/db", "https://tok@github.com", "u:p@", "hf_", "hf_" + "A" * 20, "hf_" + "A" * 19,
    "ghp_" + "b" * 20, "gho_", "sk-" + "c" * 20, "xoxb-" + "d" * 10, "glpat-", "npm_", "pypi-", "AKIA" + "E" * 16,
    # letters that case-insensitive matching folds onto ASCII ones
    "\u0131", "\u017f", "\u212a", "\u0130", "é",
]
# Near misses: text the fast path may pass, whose pieces could join into something to mask.
NEAR = ["Tok", "en", "Ke", "y", "pa", "t", "P", "A", "T", "ss", "wd", "au", "th", "$", "{", "}", ":", "/", "@", "=",
        "hf", "_", "gh", "p", "sk", "-", "xox", "AKIA", "E" * 16, "A" * 20, "x", " ", "+", ".", "'", "\\"]
texts = (st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join)
         | st.lists(st.sampled_from(NEAR), max_size=16).map("".join) | st.text(max_size=30))


@settings(max_examples=600, deadline=None)
@given(texts)
def test_text_the_fast_path_passes_is_its_own_masked_form(text):
    if masking._nothing_to_mask(text):
        event("fast path")
        assert masking._masked_override(text) == text
        assert masking._masked_line(text) == text
    else:
        event("full path")
    # And whichever path is taken, the public functions agree with the full path.
    assert masking.masked_override(text) == masking._masked_override(text)
    assert masking.masked_line(text) == masking._masked_line(text)


def test_plain_overrides_take_the_fast_path_and_secrets_do_not():
    for plain in ("train.lr=0.001", "env.threads.intra_op=2", "+env.vars.NCCL_DEBUG=INFO", "env=cpu_debug"):
        assert masking._nothing_to_mask(plain)
    for secret in ("+env.vars.HF_TOKEN=x", "db=postgres://u:pw@h/db", "+x=hf_" + "A" * 20, "a={TO${b}KEN:c}",
                   "GITHUB_PAT=x", "pr\u0131vate=x"):
        assert not masking._nothing_to_mask(secret)
    assert masking.masked_override("a={TO${b}KEN:c}") == "a=***"  # a reference joining a marker word
    assert masking.masked_override("pr\u0131vate=x") == "pr\u0131vate=***"  # IGNORECASE folds ı onto i


# The patterns as they were before their runs were made possessive and the token search got its lookahead.
_OLD_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*\\?://)(?P<user>[^\s:/@\\]*\\?:)?\S*@")
_OLD_TOKEN = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}"
                        r"|sk-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}"
                        r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{30,}|AKIA[0-9A-Z]{16})")


@settings(max_examples=600, deadline=None)
@given(texts)
def test_the_faster_credential_patterns_find_exactly_what_the_old_ones_found(text):
    def spans(pattern):
        return [(m.span(), m.groupdict()) for m in pattern.finditer(text)]

    assert spans(masking._USERINFO) == spans(_OLD_USERINFO)
    assert spans(masking._TOKEN) == spans(_OLD_TOKEN)


def test_errors_page_says_what_the_overrides_record_shows_of_a_reference():
    """docs/errors.md's examples of ``${oc.env:...}`` in an override are what the record shows (issue 37)."""
    import re
    from pathlib import Path

    from bootstrap.doors.masking import masked_override

    page = (Path(__file__).parents[2] / "docs" / "errors.md").read_text()
    recorded = re.findall(r"`(\+[^`]+\$\{oc\.env:[^`]+)` is recorded as `([^`]+)`", page)
    kept = re.findall(r"`(\+[^`]+\$\{oc\.env:[^`]+)` stays as typed", page)
    assert recorded and kept, "docs/errors.md gives no example of a reference in an override"
    assert [masked_override(typed) for typed, _ in recorded] == [shown for _, shown in recorded]
    assert [masked_override(typed) for typed in kept] == kept
