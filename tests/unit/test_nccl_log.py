"""The network NCCL chose, read from its own log (issue 29, part 3): real excerpts from public issues, kept in
tests/data/nccl with their source address on the first line, and hostile files: bounded, never a traceback."""
import os
from pathlib import Path

import pytest

from bootstrap.doors.inbound import Unreadable
from bootstrap.preflight import nccl_log

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl"
EXPECTED = {  # excerpt -> (names NCCL said, kind, provider)
    "ib_1.log": (["IB"], "ib", None),  # NCCL 2.19.3, mlx5 HCAs
    "ib_2.log": (["IB"], "ib", None),  # RCCL: the same lines
    "plugin_1.log": (["IB"], "ib", None),  # no net plugin found: NCCL's own IB, over RoCE
    "plugin_2.log": (["IBext"], "ib", None),  # the RDMA/SHARP plugin names its network IBext
    "socket_1.log": (["Socket"], "socket", None),  # "NET/IB : No device found." just before the fall back
    "socket_2.log": (["Socket"], "socket", None),
    "efa_1.log": (["AWS Libfabric"], "efa", "efa"),  # aws-ofi-nccl 1.4
    "efa_2.log": (["Libfabric"], "efa", "efa"),  # a newer plugin: "Libfabric", "Selected provider"
    "efa_3.log": (["AWS Libfabric"], "efa", None),  # no provider line in this part of the log
}


def test_every_excerpt_names_its_public_source():
    for path in sorted(DATA.glob("*.log")):
        assert path.read_text().startswith("# source: https://github.com/"), path.name
    assert {p.name for p in DATA.glob("*.log")} == set(EXPECTED)


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
