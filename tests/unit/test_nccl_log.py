"""The network NCCL chose, read from its own log (issue 29, part 3): real excerpts from public issues, kept in
tests/data/nccl with their source address on the first line, and hostile files: bounded, never a traceback."""
import os
from pathlib import Path

import pytest

from bootstrap.doors.inbound import Unreadable
from bootstrap.fabric import nccl_log

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl"
EXPECTED = {  # excerpt -> (names NCCL said, kind, provider)
    "ib_1.log": (["IB"], "ib", None),  # NCCL 2.19.3, mlx5 HCAs
    "ib_2.log": (["IB"], "ib", None),  # RCCL: the same lines
    "plugin_1.log": (["IB"], "roce", None),  # no net plugin found: NCCL's own IB, its devices "mlx5_10:1/RoCE"
    "plugin_2.log": (["IBext"], "ib", None),  # the RDMA/SHARP plugin names its network IBext
    "socket_1.log": (["Socket"], "socket", None),  # "NET/IB : No device found." just before the fall back
    "socket_2.log": (["Socket"], "socket", None),
    "efa_1.log": (["AWS Libfabric"], "efa", "efa"),  # aws-ofi-nccl 1.4
    "efa_2.log": (["Libfabric"], "efa", "efa"),  # a newer plugin: "Libfabric", "Selected provider"
    "efa_3.log": (["AWS Libfabric"], "efa", None),  # no provider line in this part of the log
}
EXCERPTS = {"efa_1.log", "efa_2.log", "efa_3.log", "ib_1.log", "ib_2.log", "plugin_1.log", "plugin_2.log",
            "socket_1.log", "socket_2.log"}  # issue 29's; issue 40's are judged in test_fabric_logs.py


def test_every_excerpt_names_its_public_source():
    for path in sorted(DATA.glob("*.log")):
        assert path.read_text().startswith("# source: https://github.com/"), path.name
    assert EXCERPTS <= {p.name for p in DATA.glob("*.log")} and set(EXPECTED) == EXCERPTS


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_network_nccl_chose_is_read_from_its_using_network_line(name):
    found = nccl_log.parse((DATA / name).read_text())
    names, kind, provider = EXPECTED[name]
    assert (found.names, found.kind, found.provider) == (names, kind, provider)
    assert found.matches(kind) and found.matches("any")
    assert not any(found.matches(other) for other in nccl_log.KINDS if other != kind)


def test_lines_about_a_device_that_was_not_found_do_not_decide():
    text = ("h:1:1 [0] NCCL INFO NET/IB : No device found.\nh:1:1 [0] NCCL INFO NET/Plugin : No plugin found\n"
            "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n")  # no "Using network" line: nothing is known
    assert nccl_log.parse(text).kind is None and nccl_log.parse(text).text is None


def test_two_communicators_on_two_networks_match_no_single_expectation():
    text = "a NCCL INFO Using network IB\nb NCCL INFO Using network Socket\n"
    found = nccl_log.parse(text)
    assert found.names == ["IB", "Socket"] and found.text == "IB + Socket" and not found.matches("ib")


def _job_dir(tmp_path, body: bytes, pid: int = os.getpid(), host=None) -> Path:
    (tmp_path / nccl_log.log_name(pid, host)).write_bytes(body)
    return tmp_path


@pytest.mark.parametrize("body", [
    b"\xff\xfe\x00" * 1000,  # not text
    b"x" * (nccl_log.MAX_LOG_BYTES + 10),  # one line past the bound, no newline
    b"h NCCL INFO Using network " + b"I" * 3000 + b"B\n",  # a line longer than NCCL writes: skipped whole
    b"NCCL INFO Using network " + b"A" * 10_000 + b"\n",  # a name past any real one
    b"NCCL INFO Using network IB\x1b[2J\x00\n",  # control characters after the name
    b"NCCL INFO Using network \xe2\x80\x8bIB\n",  # an invisible character in the name
])
def test_a_hostile_log_gives_no_network_and_no_traceback(tmp_path, body):
    found = nccl_log.read(_job_dir(tmp_path, body), os.getpid())
    assert found.kind is None


def test_only_the_head_of_a_long_log_is_read(tmp_path):
    body = b"h NCCL INFO Using network IB\n" + b"filler line\n" * (nccl_log.MAX_LOG_BYTES // 12 + 10) + \
        b"h NCCL INFO Using network Socket\n"
    assert nccl_log.read(_job_dir(tmp_path, body), os.getpid()).names == ["IB"]


def test_no_log_a_directory_or_a_fifo_is_unreadable_not_a_hang(tmp_path):
    with pytest.raises(Unreadable, match="no NCCL log"):
        nccl_log.read(tmp_path, os.getpid())
    (tmp_path / nccl_log.log_name(os.getpid())).mkdir()
    with pytest.raises(Unreadable, match="not a regular file"):
        nccl_log.read(tmp_path, os.getpid())
    fifo_dir = tmp_path / "fifo"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / nccl_log.log_name(os.getpid()))  # opening it would block until a writer came
    with pytest.raises(Unreadable, match="not a regular file"):
        nccl_log.read(fifo_dir, os.getpid())


def test_another_process_s_log_is_not_this_one_s(tmp_path):
    _job_dir(tmp_path, b"h NCCL INFO Using network Socket\n", pid=os.getpid() + 1)
    _job_dir(tmp_path, b"h NCCL INFO Using network Socket\n", host="another-host.example")  # same pid, elsewhere
    with pytest.raises(Unreadable):
        nccl_log.read(tmp_path, os.getpid(), host="this-host.example")
    assert nccl_log.read(tmp_path, os.getpid(), host="another-host").names == ["Socket"]  # NCCL's %h: to the dot


# -- issue 37 section 3: a cut line never decides, and only this user's own regular file is read -----------------

@pytest.mark.parametrize("body", [
    b"h:1:1 [0] NCCL INFO Using network I",  # cut at the end of the file (NCCL still writing it)
    b"h:1:1 [0] NCCL INFO Using network IB\r",  # no newline yet: a carriage return ends no line
])
def test_a_line_cut_at_the_end_of_the_file_is_not_read(tmp_path, body):
    assert nccl_log.read(_job_dir(tmp_path, body), os.getpid()).names == []


def test_a_line_cut_at_the_bound_is_not_read(tmp_path):
    line = b"h:1:1 [0] NCCL INFO Using network IB\n"
    head = b"x" * (nccl_log.MAX_LOG_BYTES - len(line) + 2 - 1) + b"\n"  # the bound falls between the I and the B
    assert (head + line)[:nccl_log.MAX_LOG_BYTES].endswith(b"Using network I")
    found = nccl_log.read(_job_dir(tmp_path, head + line), os.getpid())
    assert found.names == [] and found.kind is None
    whole = nccl_log.read(_job_dir(tmp_path, head[10:] + line), os.getpid())  # the same line, within the bound
    assert whole.names == ["IB"]


OTHER_UID = 4321  # a uid that is not this process's (the tests run as root, which may chown to it)


def _as_another_user(path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a file of another user needs root (the test suite runs as root in CI)")
    os.chown(path, OTHER_UID, OTHER_UID)


def test_a_log_planted_by_another_user_is_not_believed_and_says_why(tmp_path):
    log = tmp_path / nccl_log.log_name(os.getpid())
    log.write_bytes(b"h:1:1 [0] NCCL INFO Using network IB\n")
    _as_another_user(log)
    with pytest.raises(Unreadable, match=rf"owned by another user \(uid {OTHER_UID}\)"):
        nccl_log.read(tmp_path, os.getpid())


def test_a_link_planted_under_the_log_s_name_is_not_followed(tmp_path):
    real = tmp_path / "elsewhere.log"
    real.write_bytes(b"h:1:1 [0] NCCL INFO Using network IB\n")  # this user's own, even: a link is never read
    (tmp_path / nccl_log.log_name(os.getpid())).symlink_to(real)
    with pytest.raises(Unreadable, match="a link, not the log itself"):
        nccl_log.read(tmp_path, os.getpid())
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "planted.log").write_bytes(b"h:1:1 [0] NCCL INFO Using network IB\n")
    _as_another_user(theirs / "planted.log")
    os.symlink(theirs / "planted.log", theirs / nccl_log.log_name(os.getpid()))
    with pytest.raises(Unreadable, match="a link"):
        nccl_log.read(theirs, os.getpid())


def test_group_and_other_read_bits_are_allowed(tmp_path):
    log = tmp_path / nccl_log.log_name(os.getpid())
    log.write_bytes(b"h:1:1 [0] NCCL INFO Using network IB\n")
    log.chmod(0o644)  # NCCL writes with the usual umask
    assert nccl_log.read(tmp_path, os.getpid()).names == ["IB"]


# -- issue 40: the lines the fabric rules read are bounded too ------------------------------------------------------

def test_a_log_of_many_processes_and_huge_numbers_is_bounded():
    many = "".join(f"h{i}:{i}:1 [0] NCCL INFO Using network Socket\n" for i in range(nccl_log.MAX_PROCESSES + 50))
    assert len(nccl_log.processes(many)) == nccl_log.MAX_PROCESSES
    huge = ("h:1:1 [0] NCCL INFO comm 0x1 rank 999999999999999 nranks 2 - Init START\n"
            "h:1:1 [0] NCCL INFO NET/OFI Selected provider is efa (found 99999 nics)\n"
            "h:1:1 [0] NCCL INFO NET/OFI Using aws-ofi-nccl " + "9" * 5000 + "\n")
    [process] = nccl_log.processes(huge)
    assert process.rank is None and process.nics is None and process.ofi_version is None


def test_a_forged_header_inside_a_line_names_no_other_process():
    text = "real:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:1.2.3.4<0> fake:9:9 [0] NCCL INFO Using network IB\n"
    [process] = nccl_log.processes(text)
    assert process.host == "real" and process.networks == []  # the header is NCCL's first, the rest its text


def test_a_log_built_to_make_a_pattern_backtrack_is_read_in_linear_time():
    import time

    line = ("a" * 1000 + ":" + "1" * 900 + " " * 40 + "NCCL INFO " + "x" * 80)[:nccl_log.MAX_LINE] + "\n"
    text = line * (nccl_log.MAX_LOG_BYTES // len(line))
    started = time.process_time()  # this process's CPU, which another process's load does not lengthen
    nccl_log.processes(text)
    assert time.process_time() - started < 5  # 0.3 s here; a header regex with optional groups took 185 s
