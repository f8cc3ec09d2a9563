"""bootstrap/doors/inbound.py, the one way in: every reader is bounded in depth as well as in size (issue 28,
class 3), key material comes only from a private file of this user's (class 7), and no other module parses
what someone else wrote.

The depth bound is the reader's, not the parser's: a valid report nested 500 deep parses (Python's JSON
parser stops near 1000), and every renderer after it (bootstrap diff's text, the sweep summary) would then
recurse as deep. Each reader below gets nesting of 40, 500 and 100,000 levels, and refuses all three with
one line.
"""
import ast
import json
import os
import pickle
import re
import stat

import pytest

from bootstrap.doors import inbound
from bootstrap.doors.inbound import MAX_DEPTH, Unreadable

from conftest import ROOT


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _files(tmp_path, depth: int):
    """The same nesting as each kind of file the package reads."""
    text = _nested(depth)
    json_file, yaml_file, pickled = tmp_path / "r.json", tmp_path / "h.yaml", tmp_path / "comm_lib_trace_rank_0"
    # In a field of the report (a key the report does not know is ignored, whatever it holds)
    json_file.write_text('{"schema_version": 3, "distributed": {"hang": {"dumps": ' + text + "}}}")
    yaml_file.write_text("hydra: " + text)
    nested: object = 1
    for _ in range(min(depth, 300)):  # pickle itself recurses while dumping: 300 deep is past the bound
        nested = {"a": nested}
    pickled.write_bytes(pickle.dumps({"entries": [nested]}, protocol=4))
    return json_file, yaml_file, pickled


def _readers():
    """Every reader of data someone else wrote: name -> function of (json file, yaml file, pickle file)."""
    from bootstrap.distributed import agree_store, dumps
    from bootstrap.doors import records

    return {
        "inbound.read_json": lambda j, y, p: inbound.read_json(j),
        "inbound.parse_json": lambda j, y, p: inbound.parse_json(j.read_text()),
        "inbound.parse_json_bytes": lambda j, y, p: inbound.parse_json_bytes(j.read_bytes(), 1 << 24, "a peer"),
        "inbound.read_yaml_mapping": lambda j, y, p: inbound.read_yaml_mapping(y),
        "inbound.read_pickled_data": lambda j, y, p: inbound.read_pickled_data(p),
        "records.read_report": lambda j, y, p: records.read_report(j),
        "dumps.read": lambda j, y, p: dumps.read(p),
        "agree_store (a peer's record)": lambda j, y, p: agree_store._read(j.read_bytes(), agree_store.Reference, "x"),
    }


@pytest.mark.parametrize("depth", [MAX_DEPTH + 8, 500, 100_000])
@pytest.mark.parametrize("reader", list(_readers()))
def test_every_reader_refuses_nesting_past_its_bound_in_one_line(tmp_path, reader, depth):
    files = _files(tmp_path, depth)
    with pytest.raises(Unreadable) as refused:
        _readers()[reader](*files)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 300


def test_nesting_within_the_bound_reads():
    assert inbound.parse_json(_nested(MAX_DEPTH - 1)) == json.loads(_nested(MAX_DEPTH - 1))


def test_a_shared_or_self_holding_value_is_walked_once_or_refused(tmp_path):
    laughs = tmp_path / "laughs.yaml"  # aliases that a renderer would meet 10**8 times over
    laughs.write_text("a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(8)))
    assert set(inbound.read_yaml_mapping(laughs)) == set("abcdefghi")  # read at once: each shared list once
    looped: list = []
    looped.append(looped)
    with pytest.raises(Unreadable, match="nested more than"):
        inbound.bounded_depth(looped, "x")


def test_renderers_are_bounded_in_depth_too():
    from bootstrap.core import facts
    from bootstrap.doors import outbound

    deep = json.loads(_nested(200))
    assert facts.text(deep).count("...") == 1 and len(facts.text(deep)) < 100
    assert json.dumps(outbound.clean_data(deep)).count('"..."') == 1


# -- no other way in -------------------------------------------------------------------------------
# (module, call) -> why it is not a way in. Anything else found below fails the test.
PARSERS_ALLOWED = {
    ("bootstrap/distributed/flightrec.py", "pickle.loads"): "torch's own bytes, made in this process a moment before",
    ("bootstrap/core/config_store.py", "yaml.load"): "the presets this package ships",
    ("bootstrap/sweep/tune.py", "yaml.safe_load"): "the preset tune itself just wrote, read back to check it",
}
_PARSE = re.compile(r"^(json\.loads?|yaml\.(safe_)?load|pickle\.loads?|marshal\.loads?|.*Unpickler)$")


def test_no_module_but_inbound_parses_what_it_reads():
    found = []
    for path in sorted((ROOT / "bootstrap").rglob("*.py")):
        relative = str(path.relative_to(ROOT))
        if relative == "bootstrap/doors/inbound.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and _PARSE.match(ast.unparse(node.func)):
                if (relative, ast.unparse(node.func)) not in PARSERS_ALLOWED:
                    found.append(f"{relative}:{node.lineno}: {ast.unparse(node.func)}")
    assert not found, "read it through bootstrap.doors.inbound:\n" + "\n".join(found)


# -- key material ----------------------------------------------------------------------------------
def _key_file(tmp_path, mode: int = 0o600):
    path = tmp_path / "key"
    path.write_bytes(b"k" * 64)
    os.chmod(path, mode)
    return path


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_private_regular_file_of_this_users_is_read(tmp_path, mode):
    assert inbound.read_private_bytes(_key_file(tmp_path, mode), 100) == b"k" * 64


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o666, 0o622])
def test_a_file_others_may_read_or_write_is_refused(tmp_path, mode):
    with pytest.raises(Unreadable, match="others may read or write it"):
        inbound.read_private_bytes(_key_file(tmp_path, mode), 100)


def test_a_link_even_to_a_private_file_is_refused(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(_key_file(tmp_path))
    with pytest.raises(Unreadable, match="a link"):
        inbound.read_private_bytes(link, 100)


def test_another_users_file_is_refused(tmp_path):
    path = _key_file(tmp_path)
    with pytest.raises(Unreadable, match="owned by another user"):
        inbound.read_private_bytes(path, 100, uid=os.geteuid() + 1)  # the file is ours: as if we were another


def test_a_directory_a_fifo_and_a_file_too_long_are_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    (tmp_path / "dir").mkdir(mode=0o700)
    for path, reason in ((fifo, "not a regular file"), (tmp_path / "dir", "not a regular file"),
                         (_key_file(tmp_path), "larger than 10 bytes")):
        with pytest.raises(Unreadable, match=reason):
            inbound.read_private_bytes(path, 10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # opened without blocking, and not read


# -- the environment this process was started with (/proc/self/environ) ----------------------------
def test_the_start_environment_holds_what_this_process_was_started_with_not_what_it_set_since(monkeypatch):
    monkeypatch.setenv("HTB_SET_SINCE_START", "2")
    start = inbound.read_start_environ()
    if not inbound.START_ENVIRON.exists():  # not Linux: nothing tells the two apart, and the reader says so
        assert start is None
        return
    assert start is not None and "HTB_SET_SINCE_START" not in start
    assert any(os.environ.get(name) == value for name, value in start.items())  # pytest's start environment


def test_a_start_environment_is_read_strictly_and_absent_safely(tmp_path):
    path = tmp_path / "environ"
    path.write_bytes(b"A=1\0B=x=y\0A=second\0=odd\0C=\xff\0")
    assert inbound.read_start_environ(path) == {"A": "1", "B": "x=y", "C": os.fsdecode(b"\xff")}  # as os.environ
    path.write_bytes(b"A=1\0ray::IDLE\0\0\0")  # a title written over the area: no environment any more
    assert inbound.read_start_environ(path) is None
    assert inbound.read_start_environ(tmp_path / "absent") is None  # not Linux: as before the file was read
    path.write_bytes(b"A=" + b"x" * inbound.MAX_ENVIRON_BYTES)
    assert inbound.read_start_environ(path) is None


# -- a file many users share (env.nodes.exclude_file) --------------------------------------------------------------
def _status(mode, uid=1000, gid=100):
    return os.stat_result((mode, 1, 1, 1, uid, gid, 0, 0, 0, 0))


DIRECTORY = _status(stat.S_IFDIR | 0o2775)


@pytest.mark.parametrize("file, directory, why", [
    (_status(0o100644), DIRECTORY, None),  # this user's own
    (_status(0o100664, uid=0), DIRECTORY, None),  # root's, its group ours
    (_status(0o100664, uid=1001), DIRECTORY, None),  # a teammate's, in our group's directory
    (_status(0o100644, uid=1001), DIRECTORY, None),  # a teammate's that only they write
    (_status(0o100666), DIRECTORY, "every user may write it (mode 666)"),
    (_status(0o100664, gid=200), DIRECTORY, "group 200 may write it (mode 664), and this user (uid 1000) is not"),
    (_status(0o100644, uid=1001, gid=200), DIRECTORY, "another user's (uid 1001), of group 200, which this user"),
    (_status(0o100644, uid=1001), _status(stat.S_IFDIR | 0o1777), "in a directory every user may write (mode 1777)"),
    (_status(0o100644), _status(stat.S_IFDIR | 0o1777), None),  # ours, in /tmp: ours whoever else writes there
])
def test_a_shared_file_is_believed_only_when_every_user_who_may_have_written_it_is_trusted(file, directory, why):
    found = inbound.shared_distrust(file, directory, 1000, frozenset({100}))
    assert (found is None) if why is None else (why in found and "\n" not in found), found


def test_a_shared_file_is_read_from_descriptors_never_through_a_link(tmp_path):
    path = tmp_path / "bad_nodes.jsonl"
    path.write_bytes(b"{}\n")
    data, info, directory = inbound.read_shared_bytes(path)
    assert data == b"{}\n" and stat.S_ISREG(info.st_mode) and stat.S_ISDIR(directory.st_mode)
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with pytest.raises(Unreadable, match="^link.jsonl: a link, not followed$"):
        inbound.read_shared_bytes(link)


# -- one rule for what a line is (issue 45) ------------------------------------------------------------------------
SEPARATORS = ("\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")  # str.splitlines() splits at each


@pytest.mark.parametrize("separator", SEPARATORS, ids=[f"U+{ord(s):04X}" for s in SEPARATORS])
def test_only_a_newline_ends_a_line_in_and_out(tmp_path, separator):
    from bootstrap.doors import outbound

    text = f"first{separator}still the first\nsecond\r\n"
    assert inbound.lines(text) == [f"first{separator}still the first", "second", ""]
    assert inbound.first_line(RuntimeError(text)) == f"first{separator}still the first"
    outbound.write_text(tmp_path / "out.txt", text)  # every file the package writes goes this way, or write_json
    written = (tmp_path / "out.txt").read_text()
    assert separator not in written and written.splitlines() == inbound.lines(written)[:2]
    outbound.write_json(tmp_path / "out.json", {"name": text})
    loaded = json.loads((tmp_path / "out.json").read_text())["name"]  # a JSON string, cleaned as every text
    assert separator not in loaded and loaded.count("\n") == text.count("\n")


def test_no_module_of_the_package_splits_lines_any_other_way():
    # str.splitlines() splits at U+2028, U+2029, U+0085, VT, FF...: one definition, inbound.lines
    offenders = []
    for path in sorted((ROOT / "bootstrap").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "splitlines":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
