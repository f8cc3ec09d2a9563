"""The one way in: every file the package reads is read here, strictly and within bounds.

A file on disk is untrusted: another run, a teammate, a copy, an attacker may have left it.
Each reader returns plain data of a known shape or raises :class:`Unreadable` with a one-line
reason, never anything else: a directory, a FIFO, a device, a dangling link, a file past its
size limit, bytes that are not UTF-8, text that is not JSON or YAML, nesting deeper than
:data:`MAX_DEPTH` (a parser's own limit is far deeper, and every renderer after it would
recurse as deep), integers past Python's digit limit and pickles that would run code all
end there. Key material is read only from a private regular file of this user's
(:func:`read_private_bytes`), never through a link; NCCL's log of this process only from a regular file of
this user's, never through a link, and only its whole lines (:func:`read_own_log_lines`); a file many users share
(the bad-node ledger) never through a link, and only where every user who may have written it is trusted
(:func:`read_shared_bytes`, :func:`shared_distrust`). The typed values built on top
(:mod:`bootstrap.doors.records` for reports, :mod:`bootstrap.distributed.dumps` for flight-recorder
dumps) check the shape of what these return.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import stat
import struct
from pathlib import Path
from typing import AbstractSet, Any, Callable, Dict, FrozenSet, List, NoReturn, Optional, Tuple, Union

StrPath = Union[str, "os.PathLike[str]"]  # a path as every reader here takes it
MAX_TEXT_BYTES = 16 * 2**20  # a report or overrides.yaml is a few KiB; anything this large is not one
MAX_DUMP_BYTES = 256 * 2**20  # a flight-recorder dump: 20,000 entries with stacks fit well within
# Objects and lists inside one another. A report nests 8 deep, a flight-recorder dump 6; a reader that
# returns deeper data would hand every renderer after it (bootstrap diff, the summary) a recursion.
MAX_DEPTH = 32


class Unreadable(Exception):
    """A file that cannot be read as what it should be; ``str()`` is a one-line reason."""


def read_bytes(path: StrPath, limit: int) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes."""
    try:
        info = os.stat(path)  # follows a link; a dangling one is unreadable
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{Path(path).name}: not a regular file")
        if info.st_size > limit:
            raise Unreadable(f"{Path(path).name}: larger than {limit} bytes")
        with open(path, "rb") as f:
            data = f.read(min(info.st_size, limit) + 1)  # its size, and a byte more to see whether it grew
            if len(data) > info.st_size:  # it grew since the stat (or, as /proc's files, has no size): read on
                data += f.read(limit + 1 - len(data))
    except OSError as error:
        raise Unreadable(f"{Path(path).name}: {error.strerror or type(error).__name__}") from None
    if len(data) > limit:  # it grew while we read
        raise Unreadable(f"{Path(path).name}: larger than {limit} bytes")
    return data


def read_text(path: StrPath, limit: int = MAX_TEXT_BYTES) -> str:
    try:
        return read_bytes(path, limit).decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable(f"{Path(path).name}: not UTF-8 text") from None


def lines(text: str) -> List[str]:
    """``text``'s lines, as every file the package writes and reads back defines one: ended by ``\n`` alone (a
    ``\r`` before it dropped). ``str.splitlines()`` also ends a line at U+2028, U+2029, U+0085, VT, FF and the other
    separators, which a package's or a host's name may hold; the way out shows each of them escaped
    (:func:`bootstrap.doors.outbound.printable`), and the way in never splits there."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def first_line(text: Any) -> str:
    """The first of ``text``'s :func:`lines` (an error's message, the first line of a file)."""
    return lines(str(text))[0]


START_ENVIRON = Path("/proc/self/environ")  # Linux: the environment this process was started with, never updated
MAX_ENVIRON_BYTES = 16 * 2**20  # Linux caps a process's arguments and environment at a quarter of its stack


def read_start_environ(path: Path = START_ENVIRON) -> Optional[Dict[str, str]]:
    """The environment this process was started with, as ``os.environ`` decoded it then; None where it cannot be
    known: no such file (not Linux), unreadable, or not ``NAME=value`` entries (a program that wrote its title
    over the area, as ``setproctitle`` may). A name given twice keeps its first value, as ``os.environ`` does."""
    try:
        data = read_bytes(path, MAX_ENVIRON_BYTES)
    except Unreadable:
        return None
    start: Dict[str, str] = {}
    for entry in data.split(b"\0"):
        name, equals, value = entry.partition(b"=")
        if not equals and entry:
            return None  # not an environment any more
        if name and equals:
            start.setdefault(os.fsdecode(name), os.fsdecode(value))
    return start


MAX_STAT_BYTES = 4096  # /proc/<pid>/stat: 52 numbers and a command name of at most 64 bytes


def read_process_stat(pid: Union[int, str] = "self") -> Tuple[int, int]:
    """A process's parent and its start, from ``/proc/<pid>/stat`` (Linux, proc(5)): field 4, the parent's pid,
    and field 22, the start in clock ticks since the machine booted. Field 2, the command's name in parentheses,
    may hold spaces and parentheses itself: the fields are counted after its last ``)``."""
    data = read_bytes(f"/proc/{pid}/stat", MAX_STAT_BYTES)
    fields = data[data.rfind(b")") + 1:].split()
    try:
        parent, start = int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        raise Unreadable(f"/proc/{pid}/stat: not a process's status line") from None
    if parent < 0 or start < 0:
        raise Unreadable(f"/proc/{pid}/stat: a negative parent or start")
    return parent, start


def read_log_head(path: StrPath, limit: int) -> str:
    """The first ``limit`` bytes of a log another program writes (NCCL's, whose start-up lines come first),
    as text, bytes that are not UTF-8 replaced: a log line is read for one word, the rest never trusted."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise Unreadable(f"{Path(path).name}: not a regular file")
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", errors="replace")
    except OSError as error:
        raise Unreadable(f"{Path(path).name}: {error.strerror or type(error).__name__}") from None


def read_own_log_lines(path: StrPath, limit: int, uid: Optional[int] = None) -> str:
    """The whole lines among the first ``limit`` bytes of a log this user's own process wrote (NCCL's), as
    text, bytes that are not UTF-8 replaced. Only a regular file owned by ``uid`` (this user), opened without
    following a link (``O_NOFOLLOW``) and checked on the open descriptor (``fstat``), is read: a file or a link
    another user planted under the log's name is :class:`Unreadable`, and says why. Group and other read bits
    are allowed (NCCL writes with the usual umask, 0644). A line with no newline after it (cut at the bound, or
    still being written at the end) is left out: a cut line never decides."""
    return _log_lines(path, limit, os.geteuid() if uid is None else uid)


def read_log_lines(path: StrPath, limit: int) -> Tuple[str, int]:
    """The whole lines among the first ``limit`` bytes of a log a person named on the command line
    (``bootstrap doctor --nccl-log FILE``): a regular file, whoever owns it (a colleague's paste), through a
    link if the person named one; the same bounds and whole lines as :func:`read_own_log_lines`. With them, the
    file's size: what lies past ``limit`` was not read, and a verdict on the file must say so."""
    sizes: List[int] = []
    return _log_lines(path, limit, None, sizes), sizes[0]


def _log_lines(path: StrPath, limit: int, uid: Optional[int], sizes: Optional[List[int]] = None) -> str:
    name = Path(path).name
    follow = 0 if uid is None else os.O_NOFOLLOW
    try:
        fd = os.open(path, os.O_RDONLY | follow | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:  # ELOOP: a link
        reason = "a link, not the log itself" if error.errno == errno.ELOOP and uid is not None else \
            (error.strerror or type(error).__name__)
        raise Unreadable(f"{name}: {reason}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{name}: not a regular file")
        if uid is not None and info.st_uid != uid:
            raise Unreadable(f"{name}: owned by another user (uid {info.st_uid}), not this process's (uid {uid})")
        if sizes is not None:
            sizes.append(info.st_size)
        data = b""
        while len(data) < limit and (chunk := os.read(fd, limit - len(data))):
            data += chunk
    except OSError as error:
        raise Unreadable(f"{name}: {error.strerror or type(error).__name__}") from None
    finally:
        os.close(fd)
    return data[:data.rfind(b"\n") + 1].decode("utf-8", errors="replace")  # whole lines: a cut one never decides


def unpack_record(layout: "struct.Struct", data: bytes, what: str) -> tuple:
    """A fixed-size binary record another rank sent (``layout``: its fields); Unreadable unless exactly
    that many bytes. The caller checks each field's range."""
    if len(data) != layout.size:
        raise Unreadable(f"{what}: {len(data)} bytes, not {layout.size}")
    return layout.unpack(data)


def bounded_depth(value: Any, what: str, limit: int = MAX_DEPTH) -> Any:
    """``value`` itself, if no object or list in it lies more than ``limit`` deep; else :class:`Unreadable`.
    Walked level by level without recursion, so the check itself cannot exhaust the stack. A value that YAML's
    aliases or a pickle's memo share many times over (a cycle, "a billion laughs") is walked once per level
    it is met at, so the walk stays linear in the file, and a cycle is too deep."""
    level, depth = [value] if type(value) in _CONTAINERS else [], 0
    while level:
        depth += 1
        if depth > limit:
            raise Unreadable(f"{what}: nested more than {limit} deep")
        below: list = []
        for item in level:
            below += [child for child in (item.values() if type(item) is dict else item) if type(child) in _CONTAINERS]
        if len(below) > 64:  # shared values only matter when there are many: JSON shares none
            below = list({id(child): child for child in below}.values())
        level = below
    return value


_CONTAINERS = (dict, list, tuple)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Made once: json.loads with an argument makes a decoder on every call (5 us of a 4 KB report's 30).
_STRICT_JSON = json.JSONDecoder(parse_constant=_no_constant)


def parse_json(text: str, what: str = "the file", typed: bool = False) -> Any:
    """Strict JSON: no NaN or Infinity (Python's parser takes them; JSON has neither), nested at most
    :data:`MAX_DEPTH` deep. ``typed``: the caller reads the result into a typed section at once
    (:mod:`bootstrap.doors.typed`), which bounds every field's depth itself, so the walk is not made twice."""
    try:
        value = _STRICT_JSON.decode(text)
    except (ValueError, RecursionError):  # ValueError: not JSON, or an int past Python's digit limit
        raise Unreadable(f"{what}: not JSON") from None
    return value if typed else bounded_depth(value, what)


def parse_json_bytes(data: bytes, limit: int, what: str) -> Any:
    """Bytes a peer sent (a value in a process group's store), as strict JSON of at most ``limit`` bytes."""
    if len(data) > limit:
        raise Unreadable(f"{what}: larger than {limit} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable(f"{what}: not UTF-8 text") from None
    return parse_json(text, what)


def read_json(path: StrPath, limit: int = MAX_TEXT_BYTES, typed: bool = False) -> Any:
    """A JSON file (:func:`parse_json`)."""
    return parse_json(read_text(path, limit), os.path.basename(path), typed)  # basename: a Path costs 3 us


def _yaml_loader():
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader where PyYAML has one: 10x faster


def read_string_list(path: StrPath, limit: int = MAX_TEXT_BYTES) -> List[str]:
    """A YAML file holding a list of strings (Hydra's ``.hydra/overrides.yaml``); empty: ``[]``."""
    import yaml

    text = read_text(path, limit)
    try:
        value = yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a safe loader
    except Exception:  # noqa: BLE001 - untrusted YAML: YAMLError, a bad date's ValueError, RecursionError, ...
        raise Unreadable(f"{Path(path).name}: not YAML") from None
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    raise Unreadable(f"{Path(path).name}: not a list of strings")


def read_yaml_mapping(path: StrPath, limit: int = MAX_TEXT_BYTES) -> dict:
    """A YAML file holding a mapping (Hydra's ``.hydra/hydra.yaml``, a sweep's ``multirun.yaml``)."""
    import yaml

    text = read_text(path, limit)
    try:
        value = yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a safe loader
    except Exception:  # noqa: BLE001 - untrusted YAML
        raise Unreadable(f"{Path(path).name}: not YAML") from None
    if not isinstance(value, dict):
        raise Unreadable(f"{Path(path).name}: not a mapping")
    return bounded_depth(value, Path(path).name)


class _DataOnly(pickle.Unpickler):
    """Plain data only: a pickle found on disk must not run code when it is read."""

    def find_class(self, module: str, name: str) -> NoReturn:
        raise pickle.UnpicklingError(f"plain data only, not {module}.{name}")


def read_pickled_data(path: StrPath, limit: int = MAX_DUMP_BYTES) -> Any:
    """A pickle of plain data (dicts, lists, strings, numbers); one that names any class is refused."""
    import io

    data = read_bytes(path, limit)
    try:
        value = _DataOnly(io.BytesIO(data)).load()
    except Exception:  # noqa: BLE001 - hostile or half-written bytes: whatever the unpickler raises
        raise Unreadable(f"{Path(path).name}: not a pickle of plain data") from None
    return bounded_depth(value, Path(path).name)


def _read_open(path: StrPath, limit: int, flags: int, check: Callable[[os.stat_result, str], None],
               folder: Optional[int] = None) -> Tuple[bytes, os.stat_result]:
    """The bytes of the regular file opened at ``path`` (in the open directory ``folder``, if given) with ``flags``,
    at most ``limit`` of them, and its status, both from the one open file (``check`` refuses what its status
    shows)."""
    name = Path(path).name
    try:  # O_NONBLOCK: a FIFO put in its place opens at once (and is refused below) instead of waiting for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | flags, dir_fd=folder)
    except OSError as error:  # ELOOP: a link, with O_NOFOLLOW
        reason = "a link, not followed" if error.errno == errno.ELOOP else (error.strerror or type(error).__name__)
        raise Unreadable(f"{name}: {reason}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"{name}: not a regular file")
        if info.st_size > limit:
            raise Unreadable(f"{name}: larger than {limit} bytes")
        check(info, name)
        data = b""
        while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):
            data += chunk
    except OSError as error:
        raise Unreadable(f"{name}: {error.strerror or type(error).__name__}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Unreadable(f"{name}: larger than {limit} bytes")
    return data, info


def read_private_bytes(path: StrPath, limit: int, uid: Optional[int] = None) -> bytes:
    """The bytes of key material: a regular file, not reached through a link, owned by ``uid`` (this
    user) and closed to everyone else (no group or other permission bits), of at most ``limit`` bytes.

    Anything else is :class:`Unreadable`: a link to a file someone else may write, or a file another user
    made, could hold a key that person knows. Checked on the open file, so the file checked is the one read."""
    owner = os.geteuid() if uid is None else uid

    def private(info: os.stat_result, name: str) -> None:
        if info.st_uid != owner:
            raise Unreadable(f"{name}: owned by another user (uid {info.st_uid})")
        if info.st_mode & 0o077:
            raise Unreadable(f"{name}: others may read or write it (mode {stat.S_IMODE(info.st_mode):o})")

    return _read_open(path, limit, os.O_NOFOLLOW, private)[0]


MAX_SHARED_BYTES = 4 * 2**20  # env.nodes.exclude_file: about 8,000 observations of 500 bytes


def shared_distrust(info: os.stat_result, directory: os.stat_result, uid: int, groups: AbstractSet[int]
                    ) -> Optional[str]:
    """Why the lines of a file many users share (``env.nodes.exclude_file``) cannot be believed, from its status and
    its directory's, or None. They are believed when every user who may have written them is one this user trusts:

    - no other user may write it (mode ``o+w``), and its group may write it only where this user is in that group;
    - it is this user's or root's, or a teammate's: its group is one of this user's (``groups``);
    - a teammate's file lies in a directory that not every user may write (in ``/tmp``, anyone could have made it).
    """
    mode, owner = stat.S_IMODE(info.st_mode), info.st_uid
    if mode & stat.S_IWOTH:
        return f"every user may write it (mode {mode:o}): chmod o-w it"
    if mode & stat.S_IWGRP and info.st_gid not in groups:
        return (f"group {info.st_gid} may write it (mode {mode:o}), and this user (uid {uid}) is not in that group: "
                "chmod g-w it, or give it a group of yours")
    if owner in (uid, 0):
        return None
    if info.st_gid not in groups:
        return (f"another user's (uid {owner}), of group {info.st_gid}, which this user (uid {uid}) is not in: "
                "keep the list in a directory of your project's group")
    if directory.st_mode & stat.S_IWOTH:
        return (f"another user's (uid {owner}), in a directory every user may write (mode "
                f"{stat.S_IMODE(directory.st_mode):o}), where anyone could have made it: keep the list in a directory "
                "of your project's group")
    return None


def groups_of_this_process() -> FrozenSet[int]:
    """The groups this process acts with: its effective group and its supplementary groups."""
    return frozenset({os.getegid(), *os.getgroups()})


def read_shared_bytes(path: StrPath, limit: int = MAX_SHARED_BYTES) -> Tuple[bytes, os.stat_result, os.stat_result]:
    """A file many jobs and users share (``env.nodes.exclude_file``): its bytes, its status and its directory's, all
    from open descriptors (the directory's, then the file's, opened in it without following a link). A link (one
    another user planted could point at a file of yours, :func:`shared_distrust`), a device (``/dev/zero``), a FIFO,
    a directory, a file past ``limit``, and a file whose writers this user does not trust (:func:`shared_distrust`)
    are :class:`Unreadable`, each with its one-line reason, before a byte is read."""
    where, name = os.path.split(os.fspath(path))
    uid, groups = os.geteuid(), groups_of_this_process()
    try:
        folder = os.open(where or ".", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise Unreadable(f"{name}: its directory: {error.strerror or type(error).__name__}") from None
    try:
        directory = os.fstat(folder)

        def trusted(info: os.stat_result, shown: str) -> None:
            why = shared_distrust(info, directory, uid, groups)
            if why:
                raise Unreadable(f"{shown}: not trusted: {why}")

        data, info = _read_open(name, limit, os.O_NOFOLLOW, trusted, folder)
    finally:
        os.close(folder)
    return data, info, directory
