"""SLURM's host lists: expansion in SLURM's order, the compact form back, and one line for a list that is not
SLURM's syntax. Pure. (tests/e2e/test_hostlist_slurm.py compares both directions with scontrol itself.)"""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bootstrap.distributed import hostlist
from bootstrap.distributed.launchvars import first_host
from bootstrap.doors.errors import ConfigError


@pytest.mark.parametrize("text, hosts", [
    ("node1", ["node1"]),
    ("node[1-3]", ["node1", "node2", "node3"]),
    ("gpu[001-003,010],login1", ["gpu001", "gpu002", "gpu003", "gpu010", "login1"]),
    ("n[08-10]", ["n08", "n09", "n10"]),  # the low bound's padding
    ("r[1-2]n[8-9]", ["r1n8", "r1n9", "r2n8", "r2n9"]),  # groups expand in turn
    ("a,b, c", ["a", "b", "c"]),
    ("", []),
])
def test_expand(text, hosts):
    assert hostlist.expand(text, "--nodelist") == hosts
    assert hostlist.count(text) == len(hosts)


@pytest.mark.parametrize("hosts, text", [
    (["node3", "node1", "node7", "node2", "node1"], "node[1-3,7]"),
    (["a"], "a"),
    (["n08", "n09", "n10"], "n[08-10]"),
    (["login", "gpu2", "gpu1"], "gpu[1-2],login"),
    ([], ""),
])
def test_compress(hosts, text):
    assert hostlist.compress(hosts) == text


@given(st.lists(st.tuples(st.sampled_from(["node", "gpu", "r1n"]), st.integers(0, 300)), max_size=40))
def test_compress_then_expand_gives_the_same_hosts(pairs):
    hosts = {f"{prefix}{number}" for prefix, number in pairs}
    assert sorted(hostlist.expand(hostlist.compress(hosts))) == sorted(hosts)


@pytest.mark.parametrize("text, fragment", [
    ("n[1-", "--nodelist='n[1-' has an unmatched '['."),
    ("n]", "unmatched ']'"),
    ("n[a-b]", "Cannot read the host range ['a-b'] in --nodelist"),
    ("n[5-1]", "runs backwards: write [1-5]"),
    ("n[[1]]", "'[' inside brackets"),
    ("x y", "'x y' is not a host name"),
    ("n[0-9999999]", "--nodelist names 10000000 hosts; at most 65536 are read"),
    ("n" * (hostlist.MAX_TEXT + 1), "a host list is read up to"),
])
def test_a_list_that_is_not_slurms_syntax_is_one_line_naming_the_flag(text, fragment):
    with pytest.raises(ConfigError) as err:
        hostlist.expand(text, "--nodelist")
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_counting_a_huge_list_builds_nothing():
    assert hostlist.count("n[0-99999999999],m[1-2]") == 100000000002
    assert first_host("n[0-99999999999]") == "n0"
