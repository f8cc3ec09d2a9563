"""Flight-recorder dumps on disk are untrusted: bootstrap.dumps reads them into typed, bounded values,
and `bootstrap hang` analyses only this run's, prints only clean lines and exits 0, 1 or 2.

Pure functions get plain data (as a pickle holds it); real files go through the real reader; the
umask check writes a real dump from a real (one-rank, gloo) process group. The real torchrun
case of a reused run directory is in tests/unit/test_hang.py.
"""
import io
import json
import logging
import os
import pickle
import re
import stat
import tracemalloc
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bootstrap.cli import hang as hang_cli
from bootstrap.distributed import dumps, hang
from bootstrap.distributed.dumps import DUMP_PREFIX, MAX_WORLD_SIZE
from bootstrap.doors import inbound, records
from unit.test_hang import dump_of, entry

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def name(rank) -> str:
    return f"{DUMP_PREFIX}{rank}"


def write(run_dir: Path, rank, data) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / name(rank)
    path.write_bytes(data if isinstance(data, bytes) else pickle.dumps(data))
    return path


def unreadable_reason(data, rank=0) -> str:
    with pytest.raises(inbound.Unreadable) as refused:
        dumps.Reader().from_data(data, name(rank))
    reason = str(refused.value)
    assert reason.startswith(name(rank)) and "\n" not in reason, reason
    return reason


def hang_main(*args):
    """``bootstrap hang ARGS`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = hang_cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


# -- the shape of a dump ---------------------------------------------------------------------------
def test_a_dump_as_torch_and_the_bootstrap_write_it_is_read_typed():
    dump = dumps.Reader().from_data(dump_of(1, [entry(1), entry(2, op="broadcast", sizes=((2, 3), (4,)))]), name(1))
    assert (dump.rank, dump.world_size, dump.dump_time_ns, dump.time_ns) == (1, 2, 700 * 10**9, 700 * 10**9)
    first, second = dump.entries
    assert (first.group, first.group_desc, first.seq, first.op, first.is_p2p) == ("0", "default_pg", 1, "all_reduce",
                                                                                   False)
    assert (second.input_sizes, second.input_dtypes, second.created_ns) == ("[[2, 3], [4]]", ("Float",), 100 * 10**9)
    assert list(dump.pg_config["0"]) == [0, 1]


VALID = dump_of(0, [entry(1)])


def with_entry(**changes):
    item = {**entry(1), **changes}
    return {**VALID, "entries": [item]}


def with_members(members):
    return {**VALID, "pg_config": {"0": {"desc": "default_pg", "ranks": members}}}


@pytest.mark.parametrize("data, fragment", [
    ([1, 2], "holds a list, not a dump's dict"),
    ({"pg_config": {}}, "has no 'entries'"),
    ({**VALID, "entries": {"0": entry(1)}}, "'entries' is a dict, not a list"),
    ({**VALID, "entries": "entries"}, "'entries' is a str, not a list"),
    ({**VALID, "entries": [[[[[entry(1)]]]]]}, "entry 0: a list, not a dict"),
    (with_entry(collective_seq_id="2"), "'collective_seq_id' is a str, not an int"),
    (with_entry(collective_seq_id=2.0), "'collective_seq_id' is a float, not an int"),
    (with_entry(collective_seq_id=True), "'collective_seq_id' is a bool, not an int"),
    (with_entry(collective_seq_id=None), "'collective_seq_id' is a NoneType, not an int"),
    (with_entry(collective_seq_id=-1), "'collective_seq_id' is negative"),
    (with_entry(collective_seq_id=10**100), "'collective_seq_id' is a number of more than 30 digits"),
    (with_entry(collective_seq_id=10**5000), "'collective_seq_id' is a number of more than 30 digits"),
    (with_entry(process_group="0"), "'process_group' is a str, not a (name, description) pair"),
    (with_entry(process_group=("0",)), "not a (name, description) pair"),
    (with_entry(process_group=(0, "default_pg")), "the process group's name is a int, not text"),
    (with_entry(process_group=("0", "d" * 1000)), "the process group's description is 1000 characters long"),
    (with_entry(profiling_name=None), "'profiling_name' is a NoneType, not text"),
    (with_entry(is_p2p="no"), "'is_p2p' is a str, not a bool"),
    (with_entry(time_created_ns=1.5), "'time_created_ns' is a float, not an int"),
    (with_entry(input_sizes={"a": 1}), "'input_sizes' is a dict, not a list"),
    (with_entry(input_sizes=[8]), "'input_sizes' holds a int, not a list of dimensions"),
    (with_entry(input_sizes=[["8"]]), "'input_sizes' is a str, not an int"),
    (with_entry(input_dtypes=[b"Float"]), "input_dtypes is a bytes, not text"),
    ({**VALID, "pg_config": [("0", "[0, 1]")]}, "'pg_config' is a list, not a dict"),
    ({**VALID, "pg_config": {"0": "[0, 1]"}}, "pg_config['0'] is a str, not a dict"),
    ({**VALID, "pg_config": {0: {"ranks": "[0]"}}}, "a pg_config group name is a int, not text"),
    (with_members(17), "pg_config['0']['ranks'] is a int, not a list of ranks"),
    (with_members("[0, 1, x]"), "is not a list of ranks such as [0, 1]"),
    (with_members("[0x1]"), "is not a list of ranks such as [0, 1]"),
    (with_members("[\u0663]"), "is not a list of ranks such as [0, 1]"),  # an Arabic-Indic 3: not a rank
    (with_members("[__import__('os').system('touch PWNED')]"), "is not a list of ranks such as [0, 1]"),
    (with_members("'[0]'"), "is not a list of ranks such as [0, 1]"),  # torch's analyser would eval() this
    (with_members("[" + "9" * 100 + "]"), "is not a list of ranks such as [0, 1]"),
    (with_members(f"[0, {MAX_WORLD_SIZE}]"), f"lists rank {MAX_WORLD_SIZE}, beyond the {MAX_WORLD_SIZE} believed"),
    (with_members([0, "1"]), "pg_config['0']['ranks'] is a str, not an int"),
    (with_members([0] * (MAX_WORLD_SIZE + 1)), f"lists {MAX_WORLD_SIZE + 1} ranks, more than {MAX_WORLD_SIZE}"),
    (with_members("[" + "1" * 20_000_000 + "]"), "characters long, longer than any list of 1048576 ranks"),
    ({**VALID, "bootstrap": "rank 0"}, "'bootstrap' is a str, not a dict"),
    ({**VALID, "bootstrap": {"rank": 5}}, "records rank 5, not the 0 of its name: a renamed or copied dump"),
    ({**VALID, "bootstrap": {"rank": 0, "world_size": 0}}, "claims rank 0 of a world of 0"),
    ({**VALID, "bootstrap": {"rank": 0, "world_size": "2"}}, "'bootstrap.world_size' is a str, not an int"),
    ({**VALID, "bootstrap": {"rank": 0, "dump_time_ns": 2**64}},
     "'bootstrap.dump_time_ns' is 18446744073709551616, more than 9223372036854775807"),
    ({**VALID, "bootstrap": {"rank": 0, "reason": ["job failed"]}}, "bootstrap.reason is a list, not text"),
])
def test_a_dump_of_an_unexpected_shape_is_one_unreadable_outcome(data, fragment):
    assert fragment in unreadable_reason(data)


def test_a_member_list_that_torchs_analyser_would_eval_runs_nothing(tmp_path, monkeypatch):
    # torch's analyser literal_evals a member list and eval()s the result when it is a string: this
    # plain-data dump would run code there. Here it is an unreadable member list.
    monkeypatch.chdir(tmp_path)
    crafted = with_members(repr("__import__('os').system('touch PWNED') or [0]"))
    write(tmp_path / "run", 0, crafted)
    write(tmp_path / "run", 1, dump_of(1, [entry(1)]))
    code, out, err = hang_main(tmp_path / "run")
    assert not (tmp_path / "PWNED").exists()
    assert code == 1 and "pg_config['0']['ranks'] is not a list of ranks such as [0, 1]" in out, out + err


def test_a_dump_that_records_another_rank_than_its_name_is_unreadable(tmp_path):
    # Copied or renamed: analysed under either rank, it could blame the wrong one.
    write(tmp_path, 3, dump_of(5, [entry(1)], world=8))
    found = hang.findings(tmp_path, since_ns=0)
    assert found.dumps == [] and found.unreadable == [
        f"{name(3)}: records rank 5, not the 3 of its name: a renamed or copied dump"]


def test_members_as_torch_writes_them_or_as_a_list():
    assert list(dumps.Reader().from_data(with_members(" [ 0 ,1,  2 ] "), name(0)).pg_config["0"]) == [0, 1, 2]
    assert list(dumps.Reader().from_data(with_members("[]"), name(0)).pg_config["0"]) == []
    assert list(dumps.Reader().from_data(with_members([3, 1, 2, 1]), name(0)).pg_config["0"]) == [1, 2, 3]
    big = dumps.Reader().from_data(with_members(str(list(range(10_000)))), name(0)).pg_config["0"]
    assert (len(big), len(big.starts), 9_999 in big, 10_000 in big) == (10_000, 1, True, False)


def test_a_long_entry_list_keeps_its_newest_and_says_so():
    many = [entry(seq) for seq in range(1, dumps.MAX_ENTRIES + 11)]
    dump = dumps.Reader().from_data({**VALID, "entries": many}, name(0))
    assert len(dump.entries) == dumps.MAX_ENTRIES and dump.entries[0].seq == 11
    assert dump.remarks == (f"holds {dumps.MAX_ENTRIES + 10} entries: the newest {dumps.MAX_ENTRIES} are read",)


def test_an_entry_repeated_through_the_pickles_memo_is_checked_once(tmp_path):
    # 100,000 references to one entry, and one 10**6-long size list shared by many entries: a small file.
    sizes = [[1] * 10**6]
    shared = [{**entry(seq), "input_sizes": sizes} for seq in range(1, 1001)]
    path = write(tmp_path, 0, {**VALID, "entries": [shared[0]] * 99_000 + shared})
    assert path.stat().st_size < 3 * 2**20
    dump = dumps.read(path)
    assert len(dump.entries) == 100_000 and dump.entries[0] is dump.entries[98_999]
    assert dump.entries[0].input_sizes == "[[1, 1, 1, 1, 1, 1, 1, 1, ...1000000 dims]]"


def test_text_is_cut_where_it_is_only_shown():
    reason = "job failed: " + "x" * 1000
    dump = dumps.Reader().from_data({**VALID, "bootstrap": {"rank": 0, "reason": reason}}, name(0))
    assert dump.reason == reason[:dumps.MAX_TEXT] + "..."


# -- hypothesis: any plain data -------------------------------------------------------------------
KEYS = ["entries", "pg_config", "bootstrap", "version", "rank", "world_size", "reason", "dump_time_ns", "ranks",
        "desc", "collective_seq_id", "process_group", "profiling_name", "is_p2p", "time_created_ns", "input_sizes",
        "output_sizes", "input_dtypes", "output_dtypes", "0"]
past_digit_limit = st.just(5000).map(lambda digits: 10**digits)  # str() of it raises: never printed
leaves = (st.none() | st.booleans() | st.integers() | st.sampled_from([2**63, 10**30, -1]) | past_digit_limit
          | st.floats(allow_nan=True) | st.text(max_size=12) | st.binary(max_size=8)
          | st.sampled_from(["[0, 1]", "[0x1]", "[\u0663]", "\x1b]0;x\x07", "gloo:all_reduce", "default_pg"]))
plain = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                     | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), inner, max_size=5),
                     max_leaves=25)


@st.composite
def near_dumps(draw):
    """A valid dump with one field, at any depth, replaced by random plain data."""
    data = dump_of(0, [entry(1), entry(2)])
    paths = [("entries",), ("pg_config",), ("bootstrap",), ("entries", 0), ("pg_config", "0"),
             ("pg_config", "0", "ranks"), ("bootstrap", "rank"), ("bootstrap", "world_size"),
             ("bootstrap", "dump_time_ns"), ("bootstrap", "reason")] + [("entries", 1, key) for key in KEYS[10:]]
    path = draw(st.sampled_from(paths))
    target = data
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = draw(plain)
    return data


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(plain, near_dumps()))
def test_any_plain_data_is_a_dump_or_unreadable_never_an_exception(data):
    try:
        dump = dumps.Reader().from_data(data, name(0))
    except inbound.Unreadable as refused:
        assert "\n" not in str(refused)
        return
    assert isinstance(dump, dumps.Dump) and all(isinstance(e, dumps.Entry) for e in dump.entries)
    hang.diagnose([dump])  # what can be read can be analysed


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.one_of(plain, near_dumps()), min_size=1, max_size=3))
def test_any_directory_of_pickled_plain_data_gets_an_answer(tmp_path_factory, datas):
    run_dir = tmp_path_factory.mktemp("run")
    for rank, data in enumerate(datas):
        write(run_dir, rank, data)
    found = hang.findings(run_dir)
    assert records.Hang.from_json(found.to_json()) == found  # the typed section, as the report reads it back
    assert len(found.dumps) + len(found.unreadable) == len(datas)
    code, out, err = hang_main(run_dir)
    assert code in (0, 1, 2) and "Traceback" not in err and not UNSAFE.search(out + err)


# -- file names --------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix, rank", [("0", 0), ("7", 7), ("1048575", MAX_WORLD_SIZE - 1)])
def test_a_dumps_name_is_a_plain_decimal_rank(suffix, rank):
    assert dumps.rank_of(DUMP_PREFIX + suffix) == rank


@pytest.mark.parametrize("suffix", ["", "x", "0x1", "\u0663", "\uff11", "01", "-1", "+1", " 1", "1 ", "1\n", "1e3",
                                    "1.0", "1_000", str(MAX_WORLD_SIZE), "9" * 100, str(10**100)])
def test_names_that_only_look_like_a_dump_are_ignored(tmp_path, suffix):
    assert dumps.rank_of(DUMP_PREFIX + suffix) is None
    if "\n" not in suffix and "/" not in suffix:
        write(tmp_path, suffix, dump_of(0, [entry(1)]))
        assert dumps.dump_paths(tmp_path) == {}
        assert hang_main(tmp_path)[0] == 2


def test_only_dump_names_are_listed(tmp_path):
    for suffix in ("0", "1", "0x1", "\u0663", str(10**100)):
        write(tmp_path, suffix, dump_of(0, [entry(1)]))
    (tmp_path / ".fr-abc.partial").write_bytes(b"half a dump")  # flightrec's temporary name: not a dump
    assert sorted(p.name for p in dumps.dump_paths(tmp_path).values()) == [name(0), name(1)]


# -- bounds ------------------------------------------------------------------------------------------
def test_an_absurd_world_size_costs_nothing_and_missing_ranks_are_ranges(tmp_path):
    run_dir = tmp_path / "run"
    groups = {"0": {"desc": "default_pg", "ranks": "[0, 1, 2]"}}
    write(run_dir, 0, dump_of(0, [entry(1)], world=MAX_WORLD_SIZE, groups=groups))  # believed: at the cap
    write(run_dir, 1, dump_of(1, [entry(1)], world=10**12, groups=groups))  # not believed
    write(run_dir, 2, dump_of(2, [entry(1)], world=10**5000, groups=groups))  # past Python's digit limit, too
    assert [p.stat().st_size < 1000 for p in sorted(run_dir.iterdir())] == [True, True, False]  # 10**5000: 2 KB
    tracemalloc.start()
    try:
        found = hang.findings(run_dir, since_ns=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 2**20, peak  # no set, list or text of a million ranks
    assert found.world_size == MAX_WORLD_SIZE and found.missing == f"ranks 3-{MAX_WORLD_SIZE - 1}"
    assert f"no dump from ranks 3-{MAX_WORLD_SIZE - 1}: they ended without one" in found.finding
    assert f"{name(1)}: claims a world of 1000000000000 ranks, more than the {MAX_WORLD_SIZE} believed: the " \
           "claim is ignored" in found.notes
    assert f"{name(2)}: claims a world of a number of more than 30 digits ranks" in " ".join(found.notes)


def test_missing_ranks_are_named_as_ranges_however_they_fall():
    world = 10_000
    present = [0, 1, 5, 9_999]
    result = hang.diagnose([dumps.Reader().from_data(dump_of(r, [entry(1)], world=world), name(r)) for r in present])
    assert result.missing == "ranks 2-4, 6-9998"
    scattered = dumps.Ranks.of(range(0, 100, 2))
    assert scattered.text() == "ranks 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, ... (50 ranks in all)"


# -- this run's dumps only --------------------------------------------------------------------------
START = 500 * 10**9  # this run's start, in the hand-made dumps' clock (dump_of dumps at 700 s, entries at 100 s)


def test_a_dump_older_than_the_run_is_stale_left_in_place_and_its_rank_missing(tmp_path):
    write(tmp_path, 0, dump_of(0, [entry(1), entry(2, created_s=600.0)], dumped_s=700.0))
    stale = write(tmp_path, 1, dump_of(1, [entry(1), entry(2), entry(3)], dumped_s=400.0))  # an earlier run's
    found = hang.findings(tmp_path, since_ns=START, world_size=2)
    assert found.dumps == [name(0)] and found.ranks == [0] and found.stale == [name(1)]
    assert found.missing == "rank 1" and found.findings == [
        "no dump from rank 1: it ended without one (killed with SIGKILL, or crashed inside a collective)"]
    assert f"1 stale dump, from an earlier run (older than this run's start; left in place, not analysed): " \
           f"{name(1)}" in found.notes
    assert stale.exists()


def test_a_dumps_time_is_its_own_else_its_newest_entrys_else_the_files(tmp_path):
    torchs_own = {k: v for k, v in dump_of(0, [entry(1, created_s=400.0), entry(2, created_s=600.0)]).items()
                  if k != "bootstrap"}
    write(tmp_path, 0, torchs_own)  # newest entry at 600 s: this run's
    write(tmp_path, 1, {**torchs_own, "entries": [entry(1, created_s=400.0)]})  # 400 s: stale
    untimed = write(tmp_path, 2, {**torchs_own, "entries": []})
    os.utime(untimed, ns=(START - 1, START - 1))  # only the file's time: stale
    untimed_now = write(tmp_path, 3, {**torchs_own, "entries": []})
    os.utime(untimed_now, ns=(START, START))
    scanned = dumps.scan(tmp_path, START)
    assert [d.name for d in scanned.current] == [name(0), name(3)]
    assert scanned.stale == (name(1), name(2))


def test_without_a_start_every_dump_is_analysed_and_the_output_says_so(tmp_path):
    write(tmp_path, 0, dump_of(0, [entry(1), entry(2)], dumped_s=400.0))
    write(tmp_path, 1, dump_of(1, [entry(1)], dumped_s=400.0))
    found = hang.findings(tmp_path)  # no report in the directory: no start
    assert found.dumps == [name(0), name(1)] and found.run_started_ns is None
    assert any("records when this run started: every dump was analysed" in note for note in found.notes)


def test_the_runs_start_is_the_latest_its_reports_record(tmp_path):
    from bootstrap.doors import records

    def report(path, started_ns):
        data = records.Report().to_json()
        data["timings"]["started_ns"] = started_ns
        path.write_text(json.dumps(data))

    report(tmp_path / "bootstrap.rank0.json", START)
    report(tmp_path / "bootstrap.rank1.json", START + 5)
    report(tmp_path / "bootstrap.rank7.json", START - 10**12)  # left by an earlier, larger run
    (tmp_path / "bootstrap.rank2.json").write_text("{not json")
    assert dumps.run_started_ns(tmp_path) == START + 5
    assert dumps.run_started_ns(tmp_path / "nothing here") is None


# -- what leaves for the terminal ---------------------------------------------------------------------
FORGED = "\r\n  rank 0 never entered collective #9 (all_reduce on default_pg); rank 1 waited in it for 9.0 s"


def test_control_characters_in_a_dump_never_reach_the_terminal(tmp_path):
    evil_group = ("0", "\x1b]0;retitled\x07\x1b[2J\u202edefault_pg")
    raw0 = dump_of(0, [entry(1, group=evil_group), entry(2, group=evil_group, op="all_reduce" + FORGED)])
    raw1 = dump_of(1, [entry(1, group=evil_group), entry(2, group=evil_group, op="broadcast\x1b[8m")])
    raw0["bootstrap"]["reason"] = "job failed\r\x1b[1A\x1b[2K"
    write(tmp_path, 0, raw0)
    write(tmp_path, 1, raw1)
    write(tmp_path, 2, b"\x1b]0;not a pickle\x07")
    code, out, err = hang_main(tmp_path)
    assert code == 1, out + err
    assert not UNSAFE.search(out + err), out + err
    lines = out.splitlines()
    assert not any(line.lstrip().startswith("rank 0 never entered") for line in lines), out
    assert "\\x1b]0;retitled\\x07\\x1b[2J\\u202edefault_pg" in out and "\\x0d\\n" in out
    code, out, _ = hang_main(tmp_path, "--json")
    assert code == 1 and not UNSAFE.search(out)
    parsed = json.loads(out)
    for line in parsed["findings"] + parsed["groups"] + parsed["notes"]:
        assert not UNSAFE.search(line) and "\n" not in line and "\r" not in line, line


def test_an_argument_is_quoted_cleanly_in_argparses_own_errors():
    code, out, err = hang_main("a", "--bogus\x1b]0;x\x07")
    assert code == 2 and "--bogus\\x1b]0;x\\x07" in err and not UNSAFE.search(out + err)


# -- exit status ------------------------------------------------------------------------------------
def test_exit_status_says_divergence_only_when_the_dumps_show_one(tmp_path):
    assert hang_main(tmp_path / "absent")[0] == 2
    assert hang_main(tmp_path)[0] == 2  # no dump
    write(tmp_path, 0, b"not a pickle")
    code, _, err = hang_main(tmp_path)
    assert code == 2 and "holds no flight-recorder dump from this run" in err and "unreadable, not analysed" in err
    write(tmp_path, 0, dump_of(0, [entry(1), entry(2)], world=2))
    write(tmp_path, 1, dump_of(1, [entry(1), entry(2)], world=2))
    assert hang_main(tmp_path)[0] == 0
    write(tmp_path, 1, dump_of(1, [entry(1)], world=2))
    assert hang_main(tmp_path)[0] == 1


def test_a_directory_of_stale_dumps_only_is_no_dump_of_this_run(tmp_path):
    write(tmp_path, 0, dump_of(0, [entry(1)], dumped_s=400.0))
    (tmp_path / "bootstrap.json").write_text(json.dumps(_report_started(START)))
    code, _, err = hang_main(tmp_path)
    assert code == 2 and "holds no flight-recorder dump from this run" in err and "1 stale dump" in err


def _report_started(started_ns):
    from bootstrap.doors import records

    data = records.Report().to_json()
    data["timings"]["started_ns"] = started_ns
    return data


def test_an_unexpected_error_exits_2_with_one_line_never_1(tmp_path, monkeypatch):
    write(tmp_path, 0, dump_of(0, [entry(1)]))

    def broken(*_):  # a fault injected into our own code, to hold the promise for bugs not yet found
        raise KeyError("a bug\nwith a second line")

    monkeypatch.setattr(dumps, "scan", broken)
    code, out, err = hang_main(tmp_path)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "KeyError" in err
    assert "could not be analysed" in " ".join(hang.findings(tmp_path, since_ns=0).notes)


# -- the same verdicts as torch's analyser --------------------------------------------------------------
def torchs_verdicts(raw: dict) -> set:
    """(sequence id, what) that torch.distributed.flight_recorder finds, on trusted hand-made dumps."""
    from torch.distributed.flight_recorder.components.builder import build_db
    from torch.distributed.flight_recorder.components.config_manager import JobConfig
    from torch.distributed.flight_recorder.components.fr_logger import FlightRecorderLogger

    log = FlightRecorderLogger().logger
    saved = (log.handlers[:], log.propagate)
    log.handlers, log.propagate = [logging.NullHandler()], False
    try:
        details = {name(r): {"rank": r, "entries": [dict(e) for e in d["entries"]], "version": d["version"],
                             "pg_config": d["pg_config"]} for r, d in raw.items()}
        db = build_db(details, JobConfig().parse_args([".", "--allow-incomplete-ranks"]), "2.10")
    finally:
        log.handlers, log.propagate = saved
    kinds = {"COLLECTIVE_TYPE_MISMATCH": "operation", "SIZE_OR_SYNTAX_MISMATCH": "sizes",
             "COLLECTIVE_DTYPE_MISMATCH": "dtypes"}
    return {(c.collective_seq_id, kinds[next(iter(c.mismatch_collectives.values())).type_of_mismatch.state.name])
            for c in db.collectives if c.mismatch_collectives}


def ours(raw: dict) -> set:
    verdicts = set()
    for line in hang.diagnose([dumps.Reader().from_data(d, name(r)) for r, d in raw.items()]).findings:
        if match := re.match(r"collective #(\d+) on .*: the ranks disagree on the (\w+):", line):
            verdicts.add((int(match.group(1)), match.group(2)))
    return verdicts


@pytest.mark.parametrize("other, expected", [
    ({}, set()),
    ({"op": "broadcast"}, {(2, "operation")}),
    ({"sizes": ((5,),)}, {(2, "sizes")}),
    ({"sizes": ((8,), (8,))}, {(2, "sizes")}),
    ({"dtypes": ("Half",)}, {(2, "dtypes")}),
])
@pytest.mark.parametrize("ranks", [2, 3])
def test_mismatch_verdicts_are_torchs(other, expected, ranks):
    raw = {r: dump_of(r, [entry(1), entry(2), entry(3)], world=ranks) for r in range(ranks)}
    raw[ranks - 1]["entries"][1] = entry(2, **other)
    assert torchs_verdicts(raw) == expected
    assert ours(raw) == expected


def test_a_mismatch_among_many_ranks_is_one_line_of_ranges():
    raw = {r: dump_of(r, [entry(1)], world=1000) for r in range(1000)}
    for r in (7, 8, 9, 500):
        raw[r]["entries"][0] = entry(1, op="broadcast")
    (finding,) = hang.diagnose([dumps.Reader().from_data(d, name(r)) for r, d in raw.items()]).findings
    assert finding == ("collective #1 on default_pg: the ranks disagree on the operation: ranks 0-6, 10-499, "
                       "501-999 all_reduce [[8]] ['Float'], ranks 7-9, 500 broadcast [[8]] ['Float']")


# -- dumps honour the umask -------------------------------------------------------------------------
@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_a_dump_is_written_with_the_permissions_the_umask_gives(tmp_path, umask, mode):
    import time

    import torch
    import torch.distributed as dist

    from bootstrap.distributed import flightrec

    since = time.time_ns()
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    saved = os.umask(umask)
    try:
        dist.all_reduce(torch.ones(2))
        path = flightrec.dump(tmp_path / "run", 0, 1, "test", since)
    finally:
        os.umask(saved)
        dist.destroy_process_group()
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert [p.name for p in (tmp_path / "run").iterdir()] == [name(0)]  # no temporary file left
    dump = dumps.read(path)
    assert dump.reason == "test" and [e.op for e in dump.entries] == ["all_reduce"]


# -- NCCL's collectives are in a recorder of their own ----------------------------------------------
def test_a_dump_merges_the_nccl_recorder_with_the_cpu_one_in_time_order():
    from bootstrap.distributed import flightrec

    cpu = {"version": "2.10", "entries": [{"time_created_ns": 2, "profiling_name": "gloo:barrier"}], "pg_status": {}}
    nccl = {"version": "2.10", "entries": [{"time_created_ns": 1, "profiling_name": "nccl:all_reduce"},
                                           {"time_created_ns": 3, "profiling_name": "nccl:all_reduce"}],
            "nccl_comm_state": {"0": {}}}
    both = flightrec.merged(cpu, nccl)
    assert [e["time_created_ns"] for e in both["entries"]] == [1, 2, 3]
    assert "nccl_comm_state" in both and "pg_status" in both
    assert flightrec.merged(cpu, None) is cpu and flightrec.merged(cpu, {}) is cpu
