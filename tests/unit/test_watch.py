"""The watch's pure parts on values (bootstrap/watch/): a step's own time, the recorder's entries read, the window's
record behind the preflight's header, the scores and the verdict, the bounded history and picture; its exchange on a
real TCPStore in this process; and rank 0's judgement of two ranks' windows, driven window by window."""

import datetime
import json
import time

import pytest
import torch.distributed as dist

from bootstrap.core import nodes
from bootstrap.core.schema import EnvConfig, Nodes, OnBad, Watch, WatchMode, load
from bootstrap.doors.errors import ConfigError, WatchError
from bootstrap.doors.watch_report import LAST_WINDOWS, MAX_FINDINGS, MAX_RANKS, WatchFinding
from bootstrap.preflight import figures as preflight_figures
from bootstrap.watch import figures, recorder, series, steps
from bootstrap.watch.exchange import Exchange
from bootstrap.watch.figures import WindowFigures
from bootstrap.watch.scores import Judge, Kept, lowest
from bootstrap.watch.watcher import Place, Settings
from bootstrap.watch.watcher import Watch as Watcher
from unit.test_nodes import _plan

MS = 1_000_000  # a millisecond in nanoseconds


# -- a step's own time -------------------------------------------------------------------------------------------------
def test_a_step_s_own_time_is_its_wall_time_less_its_waits_counted_once():
    marks = [0, 10 * MS, 20 * MS, 30 * MS]
    ended = [steps.Collective(6 * MS, 10 * MS), steps.Collective(8 * MS, 12 * MS),  # overlapping: counted once
             steps.Collective(25 * MS, 40 * MS)]  # past the last mark
    measured = steps.steps(marks, ended)
    assert [round(s.wall_s * 1e3, 6) for s in measured] == [10, 10, 10]
    assert [round(s.own_s * 1e3, 6) for s in measured] == [6, 8, 5]
    assert steps.medians(measured) == pytest.approx((0.010, 0.006))
    assert steps.medians([]) == (None, None)
    # a kernel's duration (NCCL with timing): waited from its start, not from when the host issued it
    timed = steps.steps([0, 10 * MS], [steps.Collective(1 * MS, 9 * MS, began=7 * MS)])
    assert round(timed[0].own_s * 1e3, 6) == 8


def test_without_an_end_a_step_waited_from_its_last_collective_s_arrival_to_its_end():
    # gloo: two buckets a step, no end recorded; the slow rank arrives at its last collective late, the fast one early
    marks = [0, 100 * MS, 200 * MS]
    fast = [steps.Collective(ms * MS) for ms in (20, 30, 120, 130)]
    slow = [steps.Collective(ms * MS) for ms in (60, 90, 160, 190)]
    assert [round(s.own_s * 1e3, 6) for s in steps.steps(marks, fast)] == [30, 30]
    assert [round(s.own_s * 1e3, 6) for s in steps.steps(marks, slow)] == [90, 90]
    assert [round(s.own_s * 1e3, 6) for s in steps.steps(marks, [])] == [100, 100]  # no collective: all its own
    # a framework's one-number collective after the gradients' sync (Lightning's stop decision under max_time) is no
    # arrival: the wait began at the last large one
    buckets = [steps.Collective(60 * MS, size=1000), steps.Collective(90 * MS, size=800), steps.Collective(95 * MS)]
    assert [round(s.own_s * 1e3, 6) for s in steps.steps([0, 100 * MS], buckets)] == [90]


def test_steps_that_began_before_the_recorder_s_oldest_entry_are_left_out():
    marks = [0, 10 * MS, 20 * MS, 30 * MS]
    assert len(steps.steps(marks, [], covered_from=10 * MS)) == 2
    assert len(steps.steps(marks, [], covered_from=None)) == 3


def test_the_recorder_s_entries_become_collectives_with_their_end_where_it_is_recorded():
    held = [{"time_created_ns": 5, "time_discovered_completed_ns": 9},  # ended before the window: not its
            {"time_created_ns": 12, "time_discovered_completed_ns": 20, "duration_ms": 5e-6},
            {"time_created_ns": 30, "time_discovered_completed_ns": None, "state": "scheduled",
             "input_sizes": [[4, 3], [2]]},  # gloo's
            {"time_created_ns": 4, "state": "scheduled"},  # gloo's, issued before the window
            {"time_created_ns": 0}, "not an entry", {"time_created_ns": "12"}]
    read = recorder.waits(held, since_ns=10, buffer_size=100)
    assert read.collectives == [steps.Collective(12, 20, 15), steps.Collective(30, size=14)]
    assert read.covered_from is None  # the buffer never filled: every collective is there
    assert recorder.waits(held, 10, buffer_size=3).covered_from == 4  # full: known from its oldest entry


# -- the record --------------------------------------------------------------------------------------------------------
def _figures(rank, own_ms, step_ms=None, window=0, host=None, steps_=10, link=None):
    return WindowFigures(rank=rank, host=host or f"node{rank}", window=window, steps=steps_,
                         step_s=(step_ms or own_ms) / 1e3, own_s=own_ms / 1e3, waits_measured=True,
                         link_next_gbps=link)


def test_a_window_s_record_travels_whole_and_the_rank_is_its_key_not_its_claim():
    sent = _figures(5, 12.5, step_ms=40.0, window=7, link=1.25)
    read = figures.unpack(2, 7, figures.pack(sent))
    assert (read.rank, read.host, read.window, read.steps, read.invalid) == (2, "node5", 7, 10, [])
    assert (read.step_s, read.own_s, read.link_next_gbps, read.waits_measured) == (0.04, 0.0125, 1.25, True)


@pytest.mark.parametrize("field, value, said", [("own_s", float("nan"), "own_s=nan"), ("step_s", -2.0, "step_s=-2"),
                                                ("own_s", 1e6, "own_s=1e+06"), ("link_next_gbps", 1e9, "link")])
def test_a_figure_no_measurement_gives_is_invalid_and_left_out(field, value, said):
    sent = _figures(1, 10.0, step_ms=20.0)
    setattr(sent, field, value)
    read = figures.unpack(1, 0, figures.pack(sent))
    assert read.invalid and said in read.invalid[0] and getattr(read, field) is None
    short = figures.unpack(1, 0, b"\0" * 5)
    assert short.invalid and short.host == "?"


def test_the_watch_s_header_is_the_preflight_s_with_its_own_magic_so_neither_misreads_the_other():
    own = _figures(0, 1.0)
    header = figures.header(own)
    assert len(header) == preflight_figures.HEADER_BYTES
    read = figures.read_header(3, header)
    assert figures.problem(read) is None and (read.host, read.size) == ("node0", figures.LAYOUT.size)
    assert preflight_figures.read_header(3, header).magic == b""  # the preflight's reader: no header it knows
    preflight_header = preflight_figures.header(b"\2" + b"\0" * 97, 1.0, "node0", 0)
    assert "no header this version knows" in figures.problem(figures.read_header(3, preflight_header))
    newer = preflight_figures.header(b"\2" + b"\0" * 200, 0.0, "node0", 0, figures.MAGIC)
    assert "version 2 of 201 bytes" in figures.problem(figures.read_header(3, newer))


# -- the verdict -------------------------------------------------------------------------------------------------------
def _judged(judge, windows):
    found = []
    for number, world in enumerate(windows):
        found += judge.window(number, 2.0 * (number + 1), world)
    return found


def test_a_rank_three_times_slower_in_its_own_work_is_named_after_consecutive_windows_with_both_scores():
    judge = Judge(threshold=0.5, consecutive=3, key="env")
    healthy = [[_figures(0, 10.0, 31.0, n), _figures(1, 10.5, 31.0, n)] for n in range(4)]
    slowed = [[_figures(0, 10.0, 31.0, n), _figures(1, 30.0, 31.0, n)] for n in range(4, 8)]
    assert _judged(judge, healthy + slowed[:2]) == []  # two windows under the threshold: not yet
    (finding,) = judge.window(6, 14.0, slowed[2])
    assert (finding.kind, finding.ranks, finding.hosts, finding.since_window, finding.window) == \
        ("slow", [1], ["node1"], 4, 6)
    message = finding.message
    assert message.startswith("rank 1 (node1) is slow: its own work takes 3.0x the fastest rank's (30 ms a step "
                              "against rank 0's 10 ms; relative 0.33, individual 0.35)"), message
    assert "since window 4, which ended 10 s into training, under env.watch.threshold=0.5 for 3 windows" in message
    assert judge.window(7, 16.0, slowed[3]) == []  # named once


def test_noise_under_twice_the_fastest_names_nobody_and_a_missing_window_keeps_a_streak():
    judge = Judge(threshold=0.5, consecutive=3)
    noisy = [[_figures(0, 10.0 * (1 + 0.8 * (n % 2)), window=n), _figures(1, 10.0 * (1 + 0.8 * (n % 3 == 0)),
                                                                           window=n)] for n in range(50)]
    assert _judged(judge, noisy) == []
    judge = Judge(threshold=0.5, consecutive=3)
    gap = WindowFigures(rank=1, host="node1", window=1)  # no step there: its streak stays as it was
    windows = [[_figures(0, 10.0), _figures(1, 30.0)], [_figures(0, 10.0), gap], [_figures(0, 10.0), _figures(1, 30.0)],
               [_figures(0, 10.0), _figures(1, 30.0)]]
    assert [f.kind for f in _judged(judge, windows)] == ["slow"]


def test_a_rank_slower_than_its_best_yet_not_than_the_others_is_slowed_and_everyone_at_once_names_no_node():
    judge = Judge(threshold=0.5, consecutive=2)
    before = [[_figures(r, 10.0, window=n) for r in range(4)] for n in range(2)]
    # rank 2 had been the fastest by far; it slows to the others' pace, no slower than them
    judge.window(0, 1.0, [_figures(0, 30.0), _figures(1, 30.0), _figures(2, 10.0), _figures(3, 30.0)])
    after = [[_figures(0, 30.0, window=n), _figures(1, 30.0, window=n), _figures(2, 30.0, window=n),
              _figures(3, 30.0, window=n)] for n in (1, 2)]
    (finding,) = [f for n, world in enumerate(after, 1) for f in judge.window(n, n, world)]
    assert (finding.kind, finding.ranks) == ("slowed", [2]) and "its best window's" in finding.message
    judge = Judge(threshold=0.5, consecutive=2)
    _judged(judge, before)
    (everyone,) = [f for n in (2, 3) for f in judge.window(n, n, [_figures(r, 25.0) for r in range(4)])]
    assert everyone.kind == "slowed" and everyone.ranks == [] and everyone.hosts == []
    assert everyone.message.startswith("4 of 4 ranks work slower than in their best window at once")
    assert "not a node" in everyone.message


def test_a_node_whose_links_stay_slow_is_named_with_its_host():
    judge = Judge(threshold=0.5, consecutive=2)

    def world(n, slow):
        return [_figures(0, 10.0, window=n, host="node1", link=1.0),
                _figures(1, 10.0, window=n, host="node2", link=0.006 if slow else 1.1),
                _figures(2, 10.0, window=n, host="node3", link=0.006 if slow else 0.9)]

    assert _judged(judge, [world(0, False), world(1, True)]) == []
    (finding,) = judge.window(2, 6.0, world(2, True))
    assert (finding.kind, finding.ranks, finding.hosts) == ("slow_link", [2], ["node3"])
    assert finding.message.startswith("node node3 (rank 2): its links carry 0.006 GB/s against the other links' 1 GB/s")


def test_ranks_that_left_or_send_what_cannot_be_read_are_named_once_and_findings_are_bounded():
    judge = Judge(threshold=0.5, consecutive=1, key="cfg.env")
    (absent,) = judge.absent(3, [(1, "node2")], 600)
    assert absent.ranks == [1] and absent.hosts == ["node2"]
    assert "sent no figures for window 3 within cfg.env.distributed.timeout_s=600" in absent.message
    assert judge.absent(4, [(1, "node2")], 600) == []
    (invalid,) = judge.invalid(3, [(2, "node3", "own_s=nan")])
    assert invalid.kind == "invalid" and "rank 2 (node3) own_s=nan" in invalid.message
    for n in range(40):
        judge.absent(n, [(100 + n, "x")], 1)
    assert len(judge.findings) == MAX_FINDINGS


def test_the_report_keeps_the_first_the_worst_and_the_last_windows_of_a_long_run_at_any_world_size():
    judge = Judge(threshold=0.5, consecutive=1000)
    for n in range(300):
        own = 50.0 if n == 123 else 10.0 + (n % 7)
        judge.window(n, float(n), [_figures(0, 10.0, window=n), _figures(1, own, window=n)])
    kept = judge.kept.windows()
    assert [w.window for w in kept] == [0, 123, *range(300 - LAST_WINDOWS, 300)]
    assert lowest(kept[1]) == pytest.approx(0.2)
    judge = Judge(threshold=0.5, consecutive=1000)
    judge.window(0, 1.0, [_figures(r, 10.0 + r % 5) for r in range(10_000)])
    (window,) = judge.kept.windows()
    assert len(window.ranks) == MAX_RANKS and window.more_ranks == 10_000 - MAX_RANKS
    assert window.ranks[0].relative == min(r.relative for r in window.ranks)  # the lowest first
    assert Kept().windows() == []


def test_the_window_that_made_a_finding_is_kept_as_its_evidence_however_long_the_run_goes_on():
    judge = Judge(threshold=0.5, consecutive=3)
    for n in range(100):
        own = 30.0 if 5 <= n <= 7 else 10.0  # under the threshold in windows 5, 6 and 7: named at 7
        judge.window(n, float(n), [_figures(0, 10.0, window=n), _figures(1, own, window=n)])
    (finding,) = judge.findings
    assert (finding.window, finding.since_window) == (7, 5)
    kept = {w.window: w for w in judge.kept.windows()}
    assert sorted(kept) == [0, 5, 7, *range(100 - LAST_WINDOWS, 100)]  # the worst is the first of the three
    assert kept[7].ranks[0].rank == 1 and kept[7].ranks[0].relative == pytest.approx(1 / 3, abs=1e-3)
    judge = Judge(threshold=0.5, consecutive=1)
    for n in range(200):  # a new rank slow in each window: a finding each, the evidence bounded as the findings are
        judge.window(n, float(n), [_figures(r, 30.0 if r == n else 10.0, window=n) for r in range(200)])
    assert len(judge.findings) == MAX_FINDINGS
    assert len(judge.kept.windows()) <= 2 + MAX_FINDINGS + LAST_WINDOWS


def test_the_picture_s_lanes_are_at_most_forty_and_its_points_at_most_512_whatever_the_run():
    for world in (1, 3, 40, 41, 10_000):
        labels = [series.lane_label(lane, world) for lane in range(min(world, series.MAX_LANES))]
        covered = [rank for rank in range(world) if series.lane_of(rank, world) < len(labels)]
        assert len(labels) <= 40 and len(covered) == world
        assert labels[0].endswith(" 0") or labels[0].startswith("ranks 0-")
    drawn = series.Series(10_000)
    for n in range(5_000):
        drawn.add(float(n), [(9_999, 0.2 if n == 4_321 else 1.0, 1.0), (0, 1.0, 0.9)])
    assert len(drawn.ends_s) <= series.MAX_POINTS and drawn.ends_s[-1] == 4_999.0
    assert min(row[-1] for row in drawn.relative) == 0.2  # a dip stays seen, however many windows later
    assert min(row[0] for row in drawn.individual) == 0.9


# -- the exchange on a real store --------------------------------------------------------------------------------------
@pytest.fixture
def store():
    return dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=5), wait_for_workers=False)


def test_rank_0_reads_what_is_there_at_once_and_finds_the_missing_ones_by_halving(store):
    ranks = [Exchange(store, "k", rank, 64) for rank in range(64)]
    for exchange in ranks:
        if exchange.rank not in (17, 40):
            exchange.publish(5, figures.pack(_figures(exchange.rank, 1.0, window=5)))
    read = ranks[0].records(5, list(range(64)))
    assert sorted(set(range(64)) - set(read)) == [17, 40]
    assert figures.unpack(33, 5, read[33]).window == 5
    assert ranks[0].records(6, [1, 2]) == {}  # the other slot: nothing there yet


def test_the_verdict_reaches_every_rank_once_and_an_unreadable_one_is_a_finding(store):
    zero, one = Exchange(store, "k", 0, 2), Exchange(store, "k", 1, 2)
    assert one.verdict() is None
    zero.post_verdict(3, [WatchFinding(kind="slow", message="rank 1 (node1) is slow", ranks=[1], hosts=["node1"])],
                      stop=True)
    stop, (finding,) = one.verdict()
    assert stop and (finding.kind, finding.ranks, finding.hosts) == ("slow", [1], ["node1"])
    assert one.verdict() is None
    store.set("k/verdict", b"{not json")
    store.add("k/verdicts", 1)
    stop, (bad,) = one.verdict()
    assert not stop and bad.kind == "invalid" and "this rank does not follow it" in bad.message


def _watch(store, rank, mode="warn", timeout_s=600.0, consecutive=2):
    settings = Settings(mode=mode, window_s=2.0, threshold=0.5, consecutive=consecutive, links=False,
                        timeout_s=timeout_s)
    return Watcher(settings, Place(rank=rank, world_size=2, host=f"node{rank + 1}"), store, "run")


def _steps(watch, count, step_ms):
    end = time.time_ns() - count * step_ms * MS
    for _ in range(count + 1):
        watch.marks.append(end)
        end += step_ms * MS


def test_rank_0_judges_two_ranks_window_by_window_and_every_rank_follows_its_verdict(store):
    zero, one = _watch(store, 0, mode="error"), _watch(store, 1, mode="error")
    for window in range(4):
        for watch, step_ms in ((one, 30 if window else 10), (zero, 10)):
            _steps(watch, 5, step_ms)
            watch._window(window)
        zero._rank0.judge(final=True)
    (finding,) = zero.findings
    assert (finding.kind, finding.ranks, finding.hosts) == ("slow", [1], ["node2"]) and zero.stopping
    assert zero.take() == [finding] and zero.take() == []
    one._follow()
    assert one.findings == [finding] and one.stopping
    record = zero.record()
    assert (record.status, record.judged, record.windows, record.measured) == ("slow", 4, 4, "steps")
    assert [w.window for w in record.kept] == [0, 1, 2, 3] and record.exchange_bytes > 0
    assert one.record().kept == [] and one.record().status == "slow"


def test_a_rank_whose_windows_stop_coming_is_named_absent_once_its_timeout_passed(store):
    zero, one = _watch(store, 0, timeout_s=0.05), _watch(store, 1)
    for watch in (one, zero):
        _steps(watch, 3, 10)
        watch._window(0)
    zero._rank0.judge(final=True)
    assert zero.findings == []
    zero._rank0.seen_s[1] -= 1.0  # its last record came a second ago: past its timeout of 0.05 s
    _steps(zero, 3, 10)
    zero._window(1)
    zero._rank0.judge(final=True)
    (absent,) = zero.findings
    assert (absent.kind, absent.ranks, absent.hosts) == ("absent", [1], ["node2"])
    assert zero._rank0.expected == [0]


# -- the settings and the bad nodes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("key, value, said", [
    ("window_s", 0.1, "env.watch.window_s=0.1 must be seconds from 0.5"),
    ("threshold", 1.0, "env.watch.threshold=1.0 must be a score between 0 and 1"),
    ("consecutive", 0, "env.watch.consecutive=0 must be a count of windows in [1, 1000]")])
def test_a_watch_setting_out_of_range_is_one_line_naming_it(key, value, said):
    with pytest.raises(ConfigError, match=said.replace("[", r"\[").replace(".", r"\.")):
        load({"watch": {key: value}})


def test_every_shipped_preset_watches_under_warn():
    from bootstrap.core import compose

    for name in ("cpu_debug", "a100", "h100"):
        preset = load(compose.preset(name, "env"))
        assert preset.watch.mode.value == "warn", name
    assert load(compose.preset("cpu_debug", "env")).watch.threshold == 0.5  # shared cores swing 2x


def test_findings_become_watch_observations_beside_the_preflight_s_and_error_stops_naming_them(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "bad_nodes.jsonl").write_text(json.dumps({
        "node": "node1", "reason": "slow", "observed_at": "2026-12-07T00:00:00Z",
        "valid_until": "2099-01-01T00:00:00Z"}) + "\n")
    shared = tmp_path / "shared.jsonl"
    preset = EnvConfig(nodes=Nodes(exclude_file=str(shared)), watch=Watch(mode=WatchMode.warn))
    slow = WatchFinding(kind="slow", message="rank 3 (node3) is slow", ranks=[3], hosts=["node3"])
    everyone = WatchFinding(kind="slowed", message="4 of 4 ranks work slower", ranks=[], hosts=[])
    warnings = []
    assert nodes.after_watch(preset, _plan(tmp_path), [slow, everyone], "env", warnings, {}) is None
    lines = [json.loads(line) for line in (run / "bad_nodes.jsonl").read_text().splitlines()]
    # added to the job's own record after the preflight's line; one soft observation excludes no node (issue 47)
    assert [(e["node"], e["reason"]) for e in lines] == [("node1", "slow"), ("node3", "watch_slow")]
    assert lines[1]["against"] == {"threshold": 0.75, "consecutive": 3, "window_s": 60.0} and lines[1]["ranks"] == [3]
    assert not (run / "exclude.txt").exists()
    assert [json.loads(line)["node"] for line in shared.read_text().splitlines()] == ["node3"]
    stopping = EnvConfig(nodes=Nodes(on_bad=OnBad.requeue), watch=Watch(mode=WatchMode.error))
    stopped = nodes.after_watch(stopping, _plan(tmp_path), [slow], "env", [], {})
    assert isinstance(stopped, WatchError) and "watch: rank 3 (node3) is slow" in str(stopped)
    assert "not a SLURM job" in str(stopped) and "observed, not excluded: node3" in str(stopped)
    assert isinstance(nodes.after_watch(stopping, _plan(tmp_path, rank=1), [everyone], "env", [], {}), WatchError)


def test_a_window_costs_the_store_and_rank_0_linearly_in_the_ranks_and_no_collective():
    from bootstrap.watch.exchange import per_window

    small, large = per_window(1024, 128, links=True), per_window(16384, 2048, links=True)
    assert large["collectives"] == small["collectives"] == 0
    assert large["rank0_reads_bytes"] == 16 * small["rank0_reads_bytes"] and large["bytes_per_rank"] == 118
    assert large["store_ops"] / small["store_ops"] <= 16 and large["store_ops_rank0"] == small["store_ops_rank0"]
    assert per_window(8, 1, links=True)["probe_bytes"] == 0  # one node: no link


@pytest.mark.extra("plot")
def test_the_picture_draws_each_lane_s_scores_over_time_and_marks_the_lanes_named(tmp_path):
    from bootstrap.pictures import canvas
    from bootstrap.pictures import watch as drawing

    drawn = series.Series(100)
    for n in range(6):
        drawn.add(2.0 * (n + 1), [(rank, 0.3 if rank == 97 and n >= 3 else 0.9, 1.0) for rank in range(100)])
    slow = WatchFinding(kind="slow", message="rank 97 (node25) is slow", ranks=[97], hosts=["node25"])
    shown = series.picture(drawn, [slow], threshold=0.5, device="cpu")
    assert len(shown.lanes) == 40 and shown.named == [series.lane_of(97, 100)] and shown.title.endswith(": slow")
    figure = drawing.figure(drawing.read(json.loads(json.dumps(shown.to_json()))))
    (relative,) = [artist for artist in figure.findobj() if artist.get_gid() == "relative"]
    values = relative.get_array().reshape(40, 6)
    assert values[series.lane_of(97, 100)].tolist() == pytest.approx([0.9, 0.9, 0.9, 0.3, 0.3, 0.3])
    assert values.min() == pytest.approx(0.3) and sorted(set(values.flatten().round(2))) == [0.3, 0.9]
    canvas.save(figure, tmp_path / "watch.png")
    assert (tmp_path / "watch.png").read_bytes().startswith(b"\x89PNG")
    with pytest.raises(Exception, match="41 lanes"):
        drawing.read({**shown.to_json(), "lanes": ["x"] * 41})


def test_the_sweep_summary_and_bootstrap_diff_show_what_the_watch_named():
    from bootstrap.core import facts
    from bootstrap.doors import records
    from bootstrap.sweep.read import Row
    from bootstrap.sweep.tables import to_csv, to_markdown

    seen = records.Watch(mode="warn", status="slow", findings=[
        WatchFinding(kind="slow", message="rank 1 (node2) is slow", ranks=[1], hosts=["node2"]),
        WatchFinding(kind="slowed", message="2 of 2 ranks work slower", ranks=[], hosts=[])])
    assert facts.watch_findings(seen) == "slow: rank 1 (node2); slowed: no node" and facts.watch_findings(None) == ""
    shown = facts.facts(records.Report(watch=seen))["watch"]
    assert shown["findings"].startswith("rank 1 (node2) is slow") and shown["status"] == "slow"
    rows = [Row("0", "", "completed", 1, 1, watch=facts.watch_findings(seen)), Row("1", "", "completed", 1, 1)]
    assert "watch" in to_csv(rows).splitlines()[0].split(",") and "slow: rank 1 (node2)" in to_markdown(rows)
    assert "watch" not in to_csv([Row("0", "", "completed", 1, 1)]).splitlines()[0].split(",")
