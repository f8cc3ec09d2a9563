"""The hang's timeline (`bootstrap hang RUN_DIR --plot`): the lanes are built from the dumps where the diagnosis is
(bootstrap.distributed.hang), and the picture (bootstrap.pictures.timeline) draws exactly those lanes: every
number plotted is read back from the figure's artists, and a saved SVG keeps the labels.

The real hang's timeline, from torchrun's dumps, is in tests/e2e/test_hang.py.
"""
import re
import sys
import warnings

import pytest

from bootstrap.distributed import dumps, hang
from bootstrap.distributed.dumps import Dump, Entry
from bootstrap.pictures import canvas, timeline
from unit.test_dumps import hang_main, name, write
from unit.test_hang import dump_of, entry, typed


def four_ranks_two_stuck() -> dict:
    """Ranks 1 and 3 never enter all_reduce #2; ranks 0 and 2 wait in it."""
    raw = {0: dump_of(0, [entry(1), entry(2)], world=4), 1: dump_of(1, [entry(1)], world=4),
           2: dump_of(2, [entry(1), entry(2)], world=4), 3: dump_of(3, [entry(1)], world=4)}
    for data in raw.values():
        data["pg_config"]["0"]["ranks"] = "[0, 1, 2, 3]"
    return raw


def drawn(lanes: hang.Timeline, findings=()):
    figure = timeline.figure(lanes, "a title", findings)
    axes = figure.axes[0]
    return figure, axes, {patch.get_gid(): patch for patch in axes.patches if patch.get_gid()}


@pytest.mark.extra("plot")
def test_each_lane_is_the_ranks_in_one_state_and_the_bars_are_its_collectives():
    diagnosis = hang.diagnose(typed(four_ranks_two_stuck()), timeline=True)
    lanes = diagnosis.timeline
    # the ranks behind first: they are the ones the others wait for
    assert [(lane.ranks, lane.completed, lane.completed_op, lane.entered, lane.waiting_op, lane.waiting)
            for lane in lanes.lanes] == [("ranks 1, 3", 1, "all_reduce", 1, "", None),
                                         ("ranks 0, 2", 1, "all_reduce", 2, "all_reduce", 2)]
    assert lanes.lanes[1].waited_s == 600.0 and lanes.diverged == ["default_pg"] and lanes.more == 0
    figure, axes, bars = drawn(lanes, diagnosis.findings)
    for row, lane in enumerate(lanes.lanes):
        done = bars[f"completed-{row}"]
        assert done.get_x() + done.get_width() == lane.completed  # the last collective in common, per lane
        assert done.get_y() + done.get_height() / 2 == row
    waiting = bars["waiting-1"]  # entered #2 and waits in it
    assert (waiting.get_x(), waiting.get_x() + waiting.get_width()) == (1, 2)
    never = bars["never-0"]  # never entered #2
    assert (never.get_x(), never.get_x() + never.get_width()) == (1, 2) and "waiting-0" not in bars
    assert [label.get_text() for label in axes.get_yticklabels()] == ["default_pg: ranks 1, 3",
                                                                      "default_pg: ranks 0, 2"]
    written = [text.get_text() for text in axes.texts]
    assert written == ["#1 all_reduce; never entered #2", "#1 all_reduce; waits in #2 all_reduce, 600.0 s"]
    assert [text.get_text() for text in figure.axes[1].texts] == diagnosis.findings  # under the lanes


def test_ranks_that_disagree_on_an_operation_wait_in_it_each_with_its_own():
    raw = {0: dump_of(0, [entry(1), entry(2)]), 1: dump_of(1, [entry(1), entry(2, op="broadcast")])}
    lanes = hang.diagnose(typed(raw), timeline=True).timeline.lanes
    assert [(lane.ranks, lane.completed, lane.waiting, lane.waiting_op) for lane in lanes] == [
        ("rank 0", 1, 2, "all_reduce"), ("rank 1", 1, 2, "broadcast")]


@pytest.mark.extra("plot")
def test_a_healthy_world_is_one_lane_and_no_diagnosis_asks_for_lanes_it_did_not_want():
    raw = {rank: dump_of(rank, [entry(1), entry(2)]) for rank in (0, 1)}
    assert hang.diagnose(typed(raw)).timeline is None  # the job's failure path folds no lanes
    lanes = hang.diagnose(typed(raw), timeline=True).timeline
    assert [(lane.ranks, lane.completed, lane.waiting) for lane in lanes.lanes] == [("ranks 0, 1", 2, None)]
    _, axes, bars = drawn(lanes)
    assert set(bars) == {"completed-0"} and [t.get_text() for t in axes.texts] == ["#2 all_reduce"]


def _world(world: int, last_of) -> list:
    """``world`` typed dumps built directly (10,000 through the pickle reader take seconds); rank r entered
    collectives 1 to ``last_of(r)`` of the default group. Entries are shared, as the reader shares texts."""
    members = dumps.Ranks.span(0, world)
    shared = [Entry("0", "default_pg", seq, "gloo:all_reduce", False, int(100e9), "[[8]]", "[[8]]", ("Float",),
                    ("Float",)) for seq in range(1, max(map(last_of, range(world))) + 1)]
    return [Dump(name(rank), rank, world, "job failed", int(700e9), tuple(shared[:last_of(rank)]),
                 {"0": members}) for rank in range(world)]


@pytest.mark.extra("plot")
def test_ten_thousand_ranks_make_as_many_lanes_as_states_and_never_more_than_40():
    found = _world(10_000, lambda rank: 2 if rank in (7, 4242) else 3)
    lanes = hang.diagnose(found, timeline=True).timeline
    assert [(lane.ranks, lane.count, lane.entered) for lane in lanes.lanes] == [
        ("ranks 7, 4242", 2, 2), ("ranks 0-6, 8-4241, 4243-9999", 9_998, 3)]
    # every rank in a state of its own, 100 states: 40 lanes drawn, the rest counted and named as ranges
    scattered = hang.diagnose(_world(10_000, lambda rank: 1 + rank % 100), timeline=True).timeline
    assert len(scattered.lanes) == hang.MAX_LANES and scattered.more == 100 - hang.MAX_LANES
    assert [lane.entered for lane in scattered.lanes] == list(range(1, hang.MAX_LANES + 1))
    assert scattered.lanes[0].ranks.startswith("ranks 0, 100, 200,") and scattered.lanes[0].count == 100
    assert scattered.more_ranks == "ranks 40-99, 140-199, 240-299, 340-399, 440-499, 540-599, 640-699, 740-799, " \
                                   "840-899, 940-999, 1040-1099, 1140-1199, ... (6000 ranks in all)"
    figure, axes, bars = drawn(scattered)
    assert len(axes.get_yticks()) == hang.MAX_LANES and len([g for g in bars if g.startswith("completed")]) == 40
    assert figure.axes[1].texts[-1].get_text() == f"and 60 more lanes, not drawn: {scattered.more_ranks}"
    assert figure.get_size_inches()[1] < 20  # a picture bounded like its lanes, whatever the world


@pytest.mark.extra("plot")
def test_an_svg_keeps_every_label_and_each_bar_s_id(tmp_path):
    lanes = hang.diagnose(typed(four_ranks_two_stuck()), timeline=True).timeline
    figure, _, _ = drawn(lanes)
    canvas.save(figure, tmp_path / "t.svg")
    svg = (tmp_path / "t.svg").read_text()
    texts = re.findall(r"<!-- (.*?) -->", svg)  # matplotlib writes each text beside its glyphs
    assert {"default_pg: ranks 1, 3", "default_pg: ranks 0, 2", "#1 all_reduce; never entered #2"} <= set(texts)
    assert all(f'id="{gid}"' in svg for gid in ("completed-0", "never-0", "completed-1", "waiting-1"))


# -- bootstrap hang --plot ------------------------------------------------------------------------------
def _run_dir(tmp_path):
    run_dir = tmp_path / "run"
    for rank, data in four_ranks_two_stuck().items():
        write(run_dir, rank, data)
    return run_dir


@pytest.mark.extra("plot")
def test_plot_draws_beside_the_dumps_and_says_where_in_one_line(tmp_path):
    run_dir = _run_dir(tmp_path)
    code, out, err = hang_main(run_dir, "--plot")
    assert code == 1 and err == ""  # the analysis's status: a divergence
    assert out.splitlines()[-1] == f"bootstrap hang: timeline drawn into {run_dir / 'hang_timeline.png'}"
    assert (run_dir / "hang_timeline.png").read_bytes().startswith(b"\x89PNG")
    code, out, err = hang_main(run_dir, "--json", f"--plot={tmp_path / 'elsewhere.svg'}")
    assert code == 1 and out.startswith("{")  # the JSON stays alone on stdout
    assert err == f"bootstrap hang: timeline drawn into {tmp_path}/elsewhere.svg\n"


def test_a_picture_that_cannot_be_drawn_is_one_line_and_the_answer_stands(tmp_path, monkeypatch):
    run_dir = _run_dir(tmp_path)
    code, out, err = hang_main(run_dir, "--plot", tmp_path / "t.jpg")
    assert (code, out) == (2, "") and err == f"bootstrap hang: --plot {tmp_path}/t.jpg: a picture is .png or .svg " \
                                             "(--plot timeline.svg)\n"
    (tmp_path / "file").write_text("")
    code, out, err = hang_main(run_dir, "--plot", tmp_path / "file" / "t.png")  # under a file: cannot be made
    assert code == 1 and "never entered collective #2" in out
    assert err.startswith("bootstrap hang: no picture: ") and err.count("\n") == 1
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # what an import of a missing package raises
    code, out, err = hang_main(run_dir, "--plot")
    assert code == 1 and "never entered collective #2" in out and not (run_dir / "hang_timeline.png").exists()
    assert err == f"bootstrap hang: {canvas.MISSING}\n"


def test_without_a_dump_there_is_nothing_to_draw_and_one_line_says_why(tmp_path):
    code, out, err = hang_main(tmp_path, "--plot")
    assert (code, out) == (2, "") and "holds no flight-recorder dump" in err and err.count("\n") == 1
    assert not (tmp_path / "hang_timeline.png").exists()


@pytest.mark.extra("plot")
def test_dumps_without_a_collective_of_a_group_make_a_picture_that_says_so(tmp_path):
    raw = {rank: dump_of(rank, [{**entry(1), "is_p2p": True}]) for rank in (0, 1)}  # a send and a recv
    lanes = hang.diagnose(typed(raw), timeline=True).timeline
    assert lanes.lanes == [] and lanes.more == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning of matplotlib's on the command's stderr either
        figure, axes, bars = drawn(lanes)
        canvas.save(figure, tmp_path / "t.png")
    assert bars == {} and [t.get_text() for t in axes.texts] == ["no collective of a process group in the dumps"]
