"""The one way out: everything the package writes or prints leaves through this module.

Every text is *cleaned* on its way out (:func:`clean`):

- secrets are masked: values this process knows to be secret (:func:`remember`: a secret override's value, a preset
  variable under a secret name, and every value in ``os.environ`` under a secret-looking name, read at the moment of
  writing), then every credential the text itself shows, by one rule
  (:func:`bootstrap.doors.masking.mask_credentials`: URL passwords, self-announcing tokens, private-key blocks,
  authorization headers, assignments to a credential's name; :mod:`bootstrap.doors.shapes` after gitleaks' rules);
- it is made printable: control characters (terminal escapes, carriage returns, bidi controls, lone surrogates) are
  shown escaped (``\\x1b``), so no text can retitle or clear a terminal, hide what follows or forge a line; where
  one line is expected, newlines are escaped too.

So the task's own exception text, a launcher plugin's log line, a field read from a hostile dump and a value typed
on the command line all get the same promise, whoever calls. Files are written atomically (a temporary file beside
the target, then a rename) with the permissions ``open()`` would give under the umask.

While a job or a sweep is active, :class:`MaskedLogs` masks every log record of the process, whichever logger made
it: a record factory survives Hydra's ``configure_log``, which replaces the root handlers after
``on_multirun_start`` (a handler filter would be lost with them).

``tests/unit/test_doors.py`` checks that no other module of the package prints or
writes a file, and pushes hostile text through every door.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import json
import logging
import os
import re
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, NoReturn, Optional

from bootstrap.doors.inbound import MAX_DEPTH
from bootstrap.doors.masking import (
    MASK,
    is_secret,
    mask_credentials,
    masked,
    masked_line,
    masked_override,
    names_a_credential,
)

MIN_SECRET_LEN = 6  # a shorter value ("1", "true") would mask every copy of itself in unrelated text
_MAX_REMEMBERED = 4096  # a long sweep remembers each job's secrets; the oldest go first

_remembered: Dict[str, None] = {}  # insertion-ordered set of secret values
_lock = threading.Lock()


# -- what is secret ---------------------------------------------------------------------------
def remember(value: Any) -> None:
    """Mask this value wherever it appears in anything written or printed from now on."""
    text = "" if value is None else str(value)
    if len(text) < MIN_SECRET_LEN or text == MASK:
        return
    with _lock:
        _remembered.pop(text, None)
        _remembered[text] = None
        while len(_remembered) > _MAX_REMEMBERED:
            del _remembered[next(iter(_remembered))]


def remember_overrides(overrides: Iterable[str]) -> None:
    """The values of the overrides that carry a secret (``+env.vars.HF_TOKEN=x``, ``db.password=x``)."""
    from bootstrap.doors.overrides import split

    for override in overrides:
        value = split(str(override)).value
        if value and masked_override(override) != str(override):
            remember(value)
            remember(value.strip("'\"{}[] "))  # Hydra may print it unquoted, or as parsed


def remember_vars(variables: Mapping[str, Any]) -> None:
    """The values of the variables whose name says secret (a preset's ``HF_TOKEN``)."""
    for name, value in variables.items():
        if _secret_name(str(name)):
            remember(value)


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    return is_secret(name) or names_a_credential(name)


def _known_secrets() -> List[str]:
    """Longest first, so that a secret holding another is masked whole."""
    from_environ = [value for name, value in list(os.environ.items())
                    if len(value) >= MIN_SECRET_LEN and _secret_name(name)]
    with _lock:
        values = set(_remembered) | set(from_environ)
    return sorted(values, key=len, reverse=True)


# -- making text safe -------------------------------------------------------------------------
# C0 controls but tab and newline, DEL, C1 controls (U+0085 among them), the Unicode line and paragraph
# separators, bidi controls and lone surrogates (which cannot even be encoded, so a file holding one could not be
# written). Only "\n" ends a line in what the package writes (inbound.lines reads it back so): every other character
# that str.splitlines() or a YAML reader takes for a line's end (VT, FF, U+0085, U+2028, U+2029) leaves escaped.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                          "\ud800-\udfff]")
_LINE_BREAKS = re.compile("[\n\t\u2028\u2029\x85]")


def _escape(match: "re.Match[str]") -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_COLOUR = re.compile(r"\x1b\[[0-9;]{0,32}m")  # an SGR sequence: colour and weight, nothing else


def printable(text: str, one_line: bool = False, colours: bool = False) -> str:
    """``text`` with every control character shown escaped; ``one_line`` escapes line breaks too.
    ``colours`` keeps colour sequences (``\x1b[32m``), which can neither move the cursor, clear the
    screen nor retitle the terminal: another library's log lines keep their look."""
    if colours and "\x1b" in text:
        return _keep_colours(text, one_line)
    text = _UNPRINTABLE.sub(_escape, text)
    if one_line:
        text = _LINE_BREAKS.sub(lambda m: {"\n": "\\n", "\t": " "}.get(m.group(), _escape(m)), text)
    return text


def _keep_colours(text: str, one_line: bool) -> str:
    out, at = [], 0
    for match in _COLOUR.finditer(text):
        out += [printable(text[at:match.start()], one_line), match.group()]
        at = match.end()
    return "".join(out) + printable(text[at:], one_line)


def _mask(text: str, secrets: List[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return mask_credentials(text)


def clean(text: Any, *, one_line: bool = False) -> str:
    """``text`` as it may leave the process: secrets masked, control characters escaped."""
    return printable(_mask(str(text), _known_secrets()), one_line)


MAX_SHOWN = 160  # characters of one value in a message, quotes included
MAX_FINDING = 4000  # characters of one finding (a line of a message, an error that crosses ranks)
_QUOTES = frozenset("'\"")


def visible(text: str) -> str:
    """``text`` so that no two different values look alike: as it is when it is plain (printable, no
    white space at either end, no run of spaces, no quote), else quoted with every invisible character
    escaped, as Python's ``repr`` does (``'Ring '``, ``'a\\nb'``, ``'x\\u200by'``, ``''``). A plain text
    holds no quote, so a quoted one never looks like a plain one."""
    if text and text.isprintable() and text[0] != " " and text[-1] != " " and "  " not in text \
            and _QUOTES.isdisjoint(text):
        return text
    return repr(text)


def cut(text: str, limit: int) -> str:
    """``text`` of at most ``limit`` characters: its start and "..." when longer."""
    return text if len(text) <= limit else text[:max(0, limit - 3)] + "..."


def shown(value: Any, name: Any = None, limit: int = MAX_SHOWN) -> str:
    """One value as every message shows it (the values of a rank, a report, a variable): masked by its
    name and its shape (``masking.masked``: a secret-looking ``name``, a value that names a secret, a
    credential), then by what this process knows to be secret, then :func:`visible`, then cut to
    ``limit`` characters. The result is one line of printable text that cannot forge another."""
    text = masked(name, value) if name is not None else masked_line(str(value))
    return printable(cut(visible(_mask(text, _known_secrets())), limit))


def finding(text: Any, limit: int = MAX_FINDING) -> str:
    """A finding as one line: masked, printable, line breaks escaped, cut to ``limit`` characters (masked
    before it is cut, so a cut never keeps half a secret). For what crosses ranks or reaches a terminal
    as one line: an agreement's message, a failure another rank reads, torchrun's summary."""
    return cut(clean(text, one_line=True), limit)


def clean_data(data: Any) -> Any:
    """A JSON-like structure with every string (keys too) cleaned, and every scalar stored under a
    secret-looking key masked (``{"password": "x"}``); numbers, booleans and None stay as they are.
    Nesting deeper than :data:`MAX_DEPTH` is written as ``"..."``: a renderer is bounded in depth too."""
    secrets = _known_secrets()

    def visit(item: Any, secret_key: bool, depth: int = 0) -> Any:
        if isinstance(item, (dict, list, tuple)) and depth >= MAX_DEPTH:
            return "..."
        if isinstance(item, dict):  # keys too: a metric's name is the task's own text
            return {visit(k, False) if isinstance(k, str) else k: visit(v, _secret_name(str(k)), depth + 1)
                    for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [visit(v, secret_key, depth + 1) for v in item]
        if isinstance(item, str):
            return MASK if secret_key and item else printable(_mask(item, secrets))
        if secret_key and not (item is None or isinstance(item, (bool, int, float))):
            return MASK
        return item

    return visit(data, False)


# -- printing ---------------------------------------------------------------------------------
def say(text: Any = "", *, err: bool = False, one_line: bool = False) -> None:
    """Print ``text``, cleaned, to stdout (``err``: stderr), and flush."""
    _line(sys.stderr if err else sys.stdout, clean(text, one_line=one_line))


def say_json(data: Any) -> None:
    """Print a JSON document, cleaned, to stdout."""
    _line(sys.stdout, to_json(data))


def _line(stream: Any, text: str) -> None:
    stream.write(text + "\n")  # one write: print()'s two let slurmstepd's line land inside ours (traced)
    stream.flush()


def to_json(data: Any) -> str:
    return json.dumps(clean_data(data), indent=2, allow_nan=False)


def print_traceback(error: BaseException) -> None:
    """``HYDRA_FULL_ERROR=1``: the traceback the user asked for, cleaned like any other text."""
    import traceback

    say("".join(traceback.format_exception(error)).rstrip("\n"), err=True)


def stop(message: Any, code: int = 1) -> NoReturn:
    """End the process with ``message`` on stderr and no traceback (exit status ``code``).

    With status 1 the message travels inside the SystemExit, as Python prints it when the process
    ends: a launcher that re-raises a worker's exception in the launching process (joblib) shows it."""
    if code == 1:
        raise SystemExit(clean(message))
    say(message, err=True)
    raise SystemExit(code)


class ArgumentParser(argparse.ArgumentParser):
    """argparse prints usage and errors itself, quoting what was typed (``--x=hf_...``): through here."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if message:
            say(message.rstrip("\n"), err=file is not sys.stdout)


# -- files ------------------------------------------------------------------------------------
def file_mode() -> int:
    """0666 less the umask, as ``open()`` would give (mkstemp's 0600 would hide files from teammates)."""
    try:
        with open("/proc/self/status") as status:  # reads the umask without changing it (Linux 4.7+)
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def make_directory(path: Path) -> None:
    """The job's directory, before anything (NCCL, torch's watchdog) is pointed at files in it."""
    Path(path).mkdir(parents=True, exist_ok=True)


def write_bytes(path: Path, data: bytes, *, prefix: Optional[str] = None, suffix: str = "",
                mode: Optional[int] = None, sync: bool = False, parents: bool = True) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename: readers never see half a file.
    ``parents``: make ``path``'s directories where they are missing (False: a directory that is gone stays gone,
    and the write raises FileNotFoundError).

    Bytes are not cleaned: only the flight recorder's dumps (torch's own pickled data) and pictures (whose
    texts :func:`bootstrap.pictures.canvas.save` cleans first) go this way."""
    path = Path(path)
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=prefix or f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            os.fchmod(f.fileno(), file_mode())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_text(path: Path, text: str) -> None:
    """Write ``text``, cleaned (newlines kept), atomically."""
    write_bytes(path, clean(text).encode("utf-8"))


def write_json(path: Path, data: Any) -> None:
    """Write a JSON document, cleaned, atomically."""
    write_bytes(path, (to_json(data) + "\n").encode("utf-8"))


def shared_mode(like: Optional[os.stat_result], directory: os.stat_result) -> int:
    """The mode of a file beside a shared list (``like``: the list's status; None: none yet): the list's own, read and
    write bits only; a new list in a directory its group may write is made group-writable (the directory says the
    group shares it, whatever this user's umask), and never writable by every user."""
    if like is not None:
        return stat.S_IMODE(like.st_mode) & 0o666
    return (file_mode() | (0o060 if directory.st_mode & stat.S_IWGRP else 0)) & ~0o002


def _share(fd: int, mode: int, like: Optional[os.stat_result]) -> None:
    os.fchmod(fd, mode)
    if like is not None and os.fstat(fd).st_gid != like.st_gid:
        os.fchown(fd, -1, like.st_gid)  # the list's group: every member who may write the list may take the lock


@contextlib.contextmanager
def locked(path: Path, seconds: float, like: Optional[os.stat_result] = None,
           directory: Optional[os.stat_result] = None) -> Iterator[None]:
    """Hold an exclusive lock (``fcntl.flock``) on the lock file ``path`` for the block, waiting at most ``seconds``
    for another holder: TimeoutError past that. The lock file is opened read-only (``flock`` takes an exclusive lock
    through a read-only descriptor, so any member who may read it may take it, whoever made it) and never through a
    link; one made here takes the mode and group of the file it guards (``like``, in ``directory``:
    :func:`shared_mode`)."""
    import fcntl

    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    mode = shared_mode(like, directory) if directory is not None else file_mode()
    try:  # made with its mode (the umask may take bits away: set again below), so a member may read it at once
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, mode)
        made = True
    except FileExistsError:
        fd, made = os.open(path, flags), False
    try:
        if made:
            _share(fd, mode, like)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{Path(path).name}: not a regular file")
        deadline = time.monotonic() + seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{Path(path).name}: held by another process for {seconds:g} s") from None
                time.sleep(0.005)
        yield
    finally:
        os.close(fd)  # releases the lock


def replace_shared(path: Path, data: bytes, like: Optional[os.stat_result], directory: os.stat_result) -> None:
    """Replace a shared list (``env.nodes.exclude_file``) with ``data``: written whole beside it, with the list's
    mode and group (:func:`shared_mode`), fsync'd, then renamed over it, so that a reader never sees half a file and
    the list stays its group's. Bytes are not cleaned: each line was (``clean(..., one_line=True)``) when made."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            _share(f.fileno(), shared_mode(like, directory), like)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# -- logs -------------------------------------------------------------------------------------
class MaskedLogs:
    """While held, every log record of the process is cleaned when it is made (one record factory,
    counted holds: a job inside a sweep, nested sessions). Release restores the previous factory
    when no one else replaced ours meanwhile; otherwise ours stays in the chain, passing records
    through untouched."""

    _holds = 0
    _previous: Optional[Callable[..., logging.LogRecord]] = None
    _factory: Optional[Callable[..., logging.LogRecord]] = None

    @classmethod
    def hold(cls) -> None:
        with _lock:
            cls._holds += 1
            if cls._factory is not None and logging.getLogRecordFactory() is cls._factory:
                return
            previous = logging.getLogRecordFactory()

            def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
                record = previous(*args, **kwargs)
                if cls._holds > 0:
                    _clean_record(record)
                return record

            cls._previous, cls._factory = previous, factory
            logging.setLogRecordFactory(factory)

    @classmethod
    def release(cls) -> None:
        with _lock:
            cls._holds = max(0, cls._holds - 1)
            if cls._holds == 0 and cls._previous is not None and cls._factory is not None \
                    and logging.getLogRecordFactory() is cls._factory:  # both are set together
                logging.setLogRecordFactory(cls._previous)
                cls._previous = cls._factory = None

    @classmethod
    def held(cls) -> bool:
        return cls._holds > 0


def _clean_record(record: logging.LogRecord) -> None:
    """Never raises: a log call must not crash the task that makes it (logging itself would only
    report a record it cannot format)."""
    try:
        _clean_record_text(record)
    except Exception:  # noqa: BLE001 - a message whose __str__ raises, arguments that do not fit, ...
        record.msg, record.args = f"<a log record that could not be shown ({type(record.msg).__name__})>", None
        record.exc_info = record.exc_text = record.stack_info = None


def _clean_record_text(record: logging.LogRecord) -> None:
    message = record.getMessage()
    # Our own records are cleaned whole. Another library's keep their colours (Ray's lines) but no
    # other control sequence, and never a secret: a launcher plugin logs each job's overrides as typed ("#3 :
    # +env.vars.HF_TOKEN=x"), a sweep's value no job has remembered yet, so every name=value token
    # whose name looks secret is masked too.
    ours = record.name == "bootstrap" or record.name.startswith("bootstrap.")
    tidy = clean if ours else (lambda text: printable(_mask(str(text), _known_secrets()), colours=True))
    message = mask_credentials(message)  # whole first: a private-key block spans lines
    record.msg, record.args = tidy("\n".join(masked_line(line) for line in message.split("\n"))), None
    if record.exc_info and not record.exc_text:
        record.exc_text = tidy(logging.Formatter().formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = tidy(record.stack_info)
