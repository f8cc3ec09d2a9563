"""The start, phase by phase (issue 49), in this process: the clock from the kernel's start time, the marks, the
fixed-size record and its exchange over a real TCPStore (a thread a rank), the world's figures, the line, and a
plain-Python session whose first step ends its timeline. The real launchers' runs are tests/e2e/test_phases.py."""
import datetime
import json
import math
import os
import statistics
import threading
import time

import pytest
import torch.distributed as dist

import bootstrap
from bootstrap.core import phases
from bootstrap.core.phase_world import MAX_LANES, World, headline
from bootstrap.distributed import phase_exchange
from bootstrap.distributed.waits import Deadline
from bootstrap.doors import inbound, records
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.timeline import TIMELINE, Timeline, counted, launcher_started, now, started, tick_s
from bootstrap.dryrun.world import predicted_phases


# -- the clock -------------------------------------------------------------------------------------------------------
def test_the_kernels_start_time_is_this_process_and_its_parents_on_the_timelines_clock():
    parent, ticks = inbound.read_process_stat()
    assert parent == os.getppid()
    assert tick_s() == 1 / os.sysconf("SC_CLK_TCK")
    mine, theirs = started(), started(os.getppid())
    assert theirs <= mine <= now()  # a parent starts before its child; both before now, on one clock
    assert mine == ticks * tick_s()


@pytest.mark.parametrize("line", [b"", b"12 (x) S", b"12 (a) b) S -1 " + b"0 " * 30, b"\xff" * 5000])
def test_a_status_line_that_is_not_one_is_unreadable(tmp_path, monkeypatch, line):
    fake = tmp_path / "stat"
    fake.write_bytes(line)
    real = inbound.read_bytes
    monkeypatch.setattr(inbound, "read_bytes", lambda path, limit: real(fake, limit))
    with pytest.raises(Unreadable):
        inbound.read_process_stat(1)


def test_a_command_name_with_spaces_and_parentheses_is_passed_over(tmp_path, monkeypatch):
    fields = ["S", "4242"] + ["0"] * 17 + ["987654"] + ["0"] * 30  # field 3 on: state, ppid, ..., starttime (22)
    fake = tmp_path / "stat"
    fake.write_bytes(b"77 (a) b (c)) " + " ".join(fields).encode())
    real = inbound.read_bytes
    monkeypatch.setattr(inbound, "read_bytes", lambda path, limit: real(fake, limit))
    assert inbound.read_process_stat(77) == (4242, 987654)


def test_the_launchers_process_is_the_nearest_ancestor_started_without_its_variable(monkeypatch):
    assert launcher_started("NO_SUCH_VARIABLE_IN_ANY_PARENT") == started(os.getppid())
    assert launcher_started("PATH") is None  # every ancestor has it: no launcher's process found


# -- the marks -------------------------------------------------------------------------------------------------------
def test_marks_make_contiguous_phases_from_the_origin_and_the_first_step_ends_them():
    line = Timeline(origin=100.0)
    line.mark("interpreter", at=101.5)
    line.count(2)
    line.mark("compose", at=101.75)
    line.mark("first_step", at=103.0)
    line.count(3)  # the exchange that reports the phases: the first step's
    line.finish()
    line.mark("later", at=104.0)
    line.count()
    assert line.phases() == [("interpreter", 0.0, 1.5, 0), ("compose", 1.5, 0.25, 2), ("first_step", 1.75, 1.25, 3)]
    line.restart("earlier_jobs")
    assert [name for name, *_ in line.phases()] == ["earlier_jobs"] and not line.finished


def test_accounting_off_marks_and_counts_nothing():
    line = Timeline(origin=0.0)
    line.enabled = False
    line.mark("plan")
    line.count()
    assert line.phases() == []


def test_a_counted_store_counts_each_request_and_not_the_clients_own_settings():
    line = Timeline(origin=0.0)
    store = counted(dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=5)), line)
    Deadline(5).bound(store).set("a", "1")
    assert store.get("a") == b"1" and store.add("n", 2) == 2 and isinstance(store.timeout, datetime.timedelta)
    line.mark("agreement")
    assert line.phases()[0][3] == 3


# -- the record and its exchange -------------------------------------------------------------------------------------
def test_a_record_is_fixed_in_size_and_reads_back_each_name_once():
    record = phase_exchange.pack("gpu115", [("task", 1.0), ("load_checkpoint", 2.5), ("task", 0.25)])
    assert len(record) == phase_exchange.RECORD_BYTES == 646
    assert phase_exchange.unpack(3, record) == ("gpu115", [("task", 1.25), ("load_checkpoint", 2.5)])


def test_past_the_records_room_the_last_phases_are_summed_and_long_names_are_cut_whole():
    many = [(f"p{i}", 1.0) for i in range(30)] + [("ä" * 15, 2.0)]
    host, got = phase_exchange.unpack(0, phase_exchange.pack("h" * 100, many))
    assert len(got) == phase_exchange.MAX_PHASES and got[-1] == ("more", 9.0) and len(host) == 64
    _, (cut,) = phase_exchange.unpack(0, phase_exchange.pack("h", [("ä" * 15, 1.0)]))
    assert cut[0] == "ä" * 10  # 20 bytes: ten two-byte characters, none cut in half


@pytest.mark.parametrize("damage", ["size", "magic", "count", "nan", "negative", "utf8", "empty_name"])
def test_a_peers_record_is_read_strictly(damage):
    good = bytearray(phase_exchange.pack("h", [("plan", 1.0)]))
    offset = phase_exchange.HEADER.size
    if damage == "size":
        good = good[:-1]
    elif damage == "magic":
        good[0:4] = b"XXXX"
    elif damage == "count":
        good[5] = 200
    elif damage == "nan":
        good[offset + 20:offset + 24] = phase_exchange.struct.pack("<f", math.nan)
    elif damage == "negative":
        good[offset + 20:offset + 24] = phase_exchange.struct.pack("<f", -1.0)
    elif damage == "utf8":
        good[offset:offset + 2] = b"\xff\xfe"
    else:
        good[offset:offset + 20] = b"\0" * 20
    with pytest.raises(Unreadable, match="rank 7's phases"):
        phase_exchange.unpack(7, bytes(good))


def _exchange(world_size, ranks, timeout_s=30.0):
    """Every rank of ``ranks`` sends its record through one real TCPStore, a thread a rank; rank 0 gathers. Returns
    rank 0's (records, absent, complete), and each rank's store operations."""
    timeout = datetime.timedelta(seconds=60)
    server = dist.TCPStore("127.0.0.1", 0, world_size, True, timeout, wait_for_workers=False)
    lines = {rank: Timeline(origin=0.0) for rank in range(world_size)}
    stores = {rank: counted(server if rank == 0 else dist.TCPStore("127.0.0.1", server.port, None, False, timeout),
                            lines[rank]) for rank in range(world_size)}
    got = {}

    def rank_main(rank):
        phase_exchange.send(stores[rank], "run/0/1", rank, phase_exchange.pack(f"node{rank // 2}", [("plan", rank)]))
        if rank == 0:
            arrived, absent, complete = phase_exchange.gather(stores[0], "run/0/1", world_size, Deadline(timeout_s))
            got[0] = (list(arrived), absent, complete)

    threads = [threading.Thread(target=rank_main, args=(rank,)) for rank in ranks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    ops = {}
    for rank, line in lines.items():
        line.mark("first_step")
        ops[rank] = line.phases()[0][3]
    return got[0], ops


def test_each_rank_sets_one_record_and_rank_0_reads_them_in_chunks():
    (arrived, absent, complete), ops = _exchange(5, range(5))
    assert [rank for rank, _ in arrived] == list(range(5)) and not absent and complete
    assert phase_exchange.unpack(4, arrived[4][1]) == ("node2", [("plan", 4.0)])
    assert ops == {0: phase_exchange.operations(0, 5), **{rank: 1 for rank in range(1, 5)}} and ops[0] == 3


def test_a_rank_that_never_sends_is_named_within_the_deadline_and_the_others_are_read():
    started_at = time.monotonic()
    (arrived, absent, complete), _ = _exchange(4, [0, 1, 3], timeout_s=1.0)
    assert time.monotonic() - started_at < 10
    assert absent.text() == "rank 2" and complete and [rank for rank, _ in arrived] == [0, 1, 3]


# -- the world's figures ---------------------------------------------------------------------------------------------
def _world(durations, hosts=None):
    world = World(len(durations))
    for rank, phases_of_rank in enumerate(durations):
        world.add(rank, (hosts or {}).get(rank, f"node{rank}"), phases_of_rank)
    return world


def test_each_phase_has_its_min_median_max_and_slowest_rank_on_its_node():
    world = _world([[("plan", 1.0), ("agreement", 5.0)], [("plan", 6.0), ("agreement", 0.1)],
                    [("plan", 2.0), ("agreement", 4.0), ("task", 1.0), ("task", 2.0)]], {1: "gpu115"})
    plan, agreement, task = world.summary()
    assert (plan.min_s, plan.median_s, plan.max_s, plan.slowest_rank, plan.slowest_host) == (1, 2, 6, 1, "gpu115")
    assert (agreement.slowest_rank, agreement.ranks) == (0, 3) and (task.max_s, task.ranks) == (3.0, 1)


def test_the_line_names_the_phase_that_cost_most_not_where_the_others_waited_for_it():
    # rank 1 loads its checkpoint 20 s; rank 0 waits for it in its first step (a DDP all_reduce)
    world = _world([[("load_checkpoint", 0.1), ("first_step", 20.5)], [("load_checkpoint", 20.0), ("first_step", 0.5)]],
                   {1: "gpu115"})
    summary = world.summary()
    assert headline(summary, phases.waits).name == "load_checkpoint"
    line = phases.line(41.23, summary, [])
    assert line == "first step at 41.2 s: slowest phase load_checkpoint (max 20.0 s, rank 1 on gpu115; median 10.1 s)"
    # a phase every rank spends long in, however they arrive, is named: its least is its own cost
    slow_group = _world([[("init_process_group", 30.0), ("plan", 1.0)], [("init_process_group", 29.0), ("plan", 2.0)]])
    assert headline(slow_group.summary(), phases.waits).name == "init_process_group"
    assert phases.line(3.0, [], [records.Phase(name="interpreter", start_s=0, seconds=2.0)]) == \
        "first step at 3.0 s: slowest phase interpreter (2.0 s)"


def test_the_picture_has_at_most_40_lanes_at_any_world_size_each_a_span_of_ranks_medians():
    world = _world([[("plan", float(rank % 7))] for rank in range(10_000)])
    lanes = world.lanes()
    assert len(lanes) == MAX_LANES and lanes[0].label == "ranks 0-249" and lanes[-1].label == "ranks 9750-9999"
    assert lanes[0].seconds == (statistics.median([rank % 7 for rank in range(250)]),)
    assert [lane.label for lane in _world([[("plan", 1.0)]] * 3).lanes()] == ["rank 0", "rank 1", "rank 2"]


def test_a_record_that_cannot_be_read_is_left_out_and_named():
    world = World(20)
    for rank in range(20):
        world.refuse(rank, "not a record")
    assert world.unreadable_count == 20 and len(world.unreadable) == 16 and world.ranks == 0


# -- the task's own phases, and a session's first step ---------------------------------------------------------------
@pytest.mark.parametrize("name", ["", " ", "x" * 65, "a\nb", 3, "plan", "first_step"])
def test_a_phase_name_that_is_not_a_line_or_is_the_bootstraps_own_is_refused_with_the_fix(name):
    with pytest.raises(ValueError, match=r"session\.phase\("):
        with phases.task_phase(name):
            pass


def test_a_plain_loops_first_step_ends_the_timeline_in_the_report(tmp_path, caplog):
    caplog.set_level("INFO", logger="bootstrap.core.phases")
    with bootstrap.initialize({"threads": {"intra_op": 1}, "provenance": {"enabled": False}},
                              output_dir=tmp_path) as session:
        with session.phase("load_checkpoint"):
            pass
        for step, _ in enumerate(session.watch(range(3))):
            if step == 2:
                with session.phase("after_the_first_step"):  # not the start's: no mark
                    pass
        written = json.loads((tmp_path / "bootstrap.json").read_text())["timings"]
    report = records.read_report(tmp_path / "bootstrap.json")
    names = [phase.name for phase in report.timings.phases]
    assert names[names.index("hand_off"):] == ["hand_off", "task", "load_checkpoint", "task", "first_batch",
                                               "first_step"]
    assert names[0] in ("interpreter", "compose", "earlier_jobs", "callback")
    ends = [phase.start_s + phase.seconds for phase in report.timings.phases]
    assert all(abs(phase.start_s - end) < 1e-5 for phase, end in zip(report.timings.phases[1:], ends, strict=False))
    assert report.timings.first_step_s == pytest.approx(ends[-1], abs=1e-5)
    assert written["first_step_s"] == report.timings.first_step_s and not report.timings.world_phases
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("first step at ")] == \
        [phases.line(report.timings.first_step_s, [], report.timings.phases)]
    assert TIMELINE.last() == "earlier_jobs"  # closed: what the process does next is its next job's


def test_a_job_that_never_steps_records_its_phases_to_its_end(tmp_path):
    with bootstrap.initialize({"threads": {"intra_op": 1}, "provenance": {"enabled": False}}, output_dir=tmp_path):
        pass
    report = records.read_report(tmp_path / "bootstrap.json")
    assert [phase.name for phase in report.timings.phases][-2:] == ["hand_off", "task"]
    assert report.timings.first_step_s is None


def test_a_job_stopped_by_its_checks_keeps_the_phases_it_reached_and_the_time_to_its_stop(tmp_path):
    from bootstrap.doors.errors import MismatchError

    with pytest.raises(MismatchError):
        bootstrap.initialize({"requires": {"torch": ">=99"}, "provenance": {"enabled": False}},
                             output_dir=tmp_path).apply()
    report = records.read_report(tmp_path / "bootstrap.json")
    assert report.job.status == "check_failed" and report.timings.phases[-1].name == "stopped"
    assert report.timings.phases[-2].name in ("interpreter", "compose", "callback", "task")  # stopped in its plan
    TIMELINE.restart("earlier_jobs")  # (a refused start closes no session)


# -- the dry run's prediction ---------------------------------------------------------------------------------------
def test_the_dry_run_predicts_the_store_operations_a_real_run_counts():
    agent = predicted_phases("torchrun's agent store", 2, 6)
    assert agent == [{"name": "callback", "store_ops_per_rank": 1}, {"name": "agreement", "store_ops_per_rank": 5},
                     {"name": "preflight", "collectives": 6},
                     {"name": "first_step", "store_ops_per_rank": 1, "store_ops_rank0": 3}]
    big = predicted_phases("rank 0's TCPStore at MASTER_ADDR:MASTER_PORT (a:1)", 131072, 0)
    assert big[-1] == {"name": "first_step", "store_ops_per_rank": 1, "store_ops_rank0": 2 + 128}
    assert predicted_phases("none (one process)", 1, 0) == []


# -- where the phases show: the sweep summary's column, bootstrap diff ------------------------------------------------
def test_the_sweep_summary_has_a_column_for_the_time_to_first_step_once_a_job_reached_it():
    from bootstrap.sweep import tables
    from bootstrap.sweep.read import Row

    stepped = [Row("0", "a=1", "completed", 1, 1, first_step_s=41.25), Row("1", "a=2", "completed", 1, 1)]
    header, *lines = tables.to_csv(stepped).splitlines()
    assert header.split(",")[:6] == ["job", "overrides", "status", "intra_op", "inter_op", "first_step_s"]
    assert lines[0].split(",")[5] == "41.25" and lines[1].split(",")[5] == ""
    assert "first_step_s" not in tables.to_csv([Row("0", "a=1", "completed", 1, 1)])
    assert "| 41.25 |" in tables.to_markdown(stepped)


def test_bootstrap_diff_all_compares_each_phase_and_the_time_to_first_step():
    from bootstrap.cli.diff import compare
    from bootstrap.core import facts

    def report(init_s, first_s):
        found = records.Report()
        found.timings.phases = [records.Phase(name="plan", start_s=0.0, seconds=0.5),
                                records.Phase(name="init_process_group", start_s=0.5, seconds=init_s)]
        found.timings.first_step_s = first_s
        return facts.facts(found)

    rows = compare(report(2.0, 10.0), report(30.1, 38.1), every=True)[facts.ALWAYS_DIFFERS]
    assert {"name": "phase init_process_group", "a": "2.0 s", "b": "30.1 s"} in rows
    assert {"name": "time to first step", "a": "10.0 s", "b": "38.1 s"} in rows
    assert not any(row["name"] == "phase plan" for row in rows)
    assert facts.ALWAYS_DIFFERS not in compare(report(2.0, 10.0), report(30.1, 38.1))  # times: --all only


# -- the picture --------------------------------------------------------------------------------------------------
PICTURE = {"title": "the start", "names": ["launcher", "plan", "first_step"], "notes": ["first step at 3.0 s"],
           "lanes": [{"label": "rank 0", "seconds": [0.5, 1.0, 2.0]}, {"label": "rank 1", "seconds": [0.25, None, 3.0]}]}


@pytest.mark.extra("plot")
def test_the_picture_draws_a_bar_a_lane_each_phase_a_segment_and_the_launchers_before_0():
    from bootstrap.pictures import phases as picture

    axes = picture.figure(picture.read(PICTURE)).axes[0]

    def segments(name):
        return [(patch.get_x(), patch.get_width()) for patch in axes.patches if patch.get_gid() == f"phase-{name}"]
    assert segments("launcher") == [(-0.5, 0.5), (-0.25, 0.25)]
    assert segments("plan") == [(0.0, 1.0), (0.0, 0.0)]
    assert segments("first_step") == [(1.0, 2.0), (0.0, 3.0)]
    assert [label.get_text() for label in axes.get_yticklabels()] == ["rank 0", "rank 1"]


@pytest.mark.parametrize("bad", [{"lanes": []}, {"lanes": [{"label": "r", "seconds": [1.0]}] * 41},
                                 {"lanes": [{"label": "r", "seconds": [1.0, -1.0, 1.0]}]},
                                 {"lanes": [{"label": "r", "seconds": [1.0, 1.0]}]}])
def test_a_picture_of_another_shape_is_refused_in_one_line(bad):
    from bootstrap.pictures import phases as picture

    with pytest.raises(Unreadable):
        picture.read({**PICTURE, **bad})


def test_the_trackers_flat_view_keeps_the_time_to_first_step_and_leaves_the_phases_to_the_report():
    from bootstrap.core.flat import flat

    report = records.Report()
    report.timings.phases = [records.Phase(name="plan", start_s=0.0, seconds=0.5)]
    report.timings.world_phases = [records.WorldPhase(name="plan", min_s=0.5, median_s=0.5, max_s=0.5, slowest_rank=0,
                                                      slowest_host="h", ranks=1)]
    report.timings.first_step_s = 0.5
    keys = flat(report)
    assert keys["bootstrap/timings/first_step_s"] == 0.5
    assert not [key for key in keys if "phases" in key]
