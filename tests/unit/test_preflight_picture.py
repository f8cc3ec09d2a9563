"""The preflight's picture: the series are built where the figures are (bootstrap.preflight.picture), from every
rank's figures and the verdict, and the picture (bootstrap.pictures.preflight) draws exactly those series: every
plotted number is read back from the figure's artists. The picture travels to the process that draws it as
JSON, read back strictly; without matplotlib the check logs one line and nothing else changes.

The picture of a real slow rank, drawn by a real drawing process, is in tests/e2e/test_preflight.py.
"""
import io
import json
import logging
import statistics
import sys
from dataclasses import replace

import pytest

import bootstrap
from bootstrap.doors import inbound, outbound
from bootstrap.pictures import apart, canvas, notes
from bootstrap.pictures import preflight as drawing
from bootstrap.preflight import picture, verdict
from bootstrap.preflight.figures import Compute
from bootstrap.preflight.request import Floors, Request
from unit.test_preflight import _rank

REQUEST = Request(mode="warn", seconds=5, max_skew=3.0, floors=Floors(min_tflops=0.01, min_busbw_gbps=2.0),
                  device="cpu", backend="gloo", world_size=4, key="env")


def _world():
    """Four ranks: rank 2 slow, rank 3's matmul wrong; the world's all_reduce under its floor."""
    return [_rank(0, 0.07, busbw=0.4), _rank(1, 0.06, busbw=0.5), _rank(2, 0.005, busbw=0.3),
            _rank(3, 0.065, busbw=0.45, compute=Compute.WRONG)]


def _judged(world, request=REQUEST):
    return verdict.judge(world, request.floors, request.max_skew, "cpu", "gloo", key=request.key)


def _artists(axes) -> dict:
    return {artist.get_gid(): artist for artist in axes.get_children() if artist.get_gid()}


def _ticks(collection) -> list:
    """A per-rank line's ticks as (rank, value): each tick spans its rank's x +- 0.4."""
    return [(round((a[0] + b[0]) / 2), a[1]) for a, b in collection.get_segments()]


@pytest.mark.extra("plot")
def test_each_rank_s_figures_against_the_median_of_the_others_and_the_floor():
    world = _world()
    findings = _judged(world)
    assert [f.kind for f in findings] == ["faulty", "min_tflops", "slow", "min_busbw_gbps"]
    series = picture.picture(world, findings, REQUEST)
    compute, network = series.panels
    assert compute.values == [0.07, 0.06, 0.005, 0.065] and compute.named == [2, 3]
    assert network.values == [0.4, 0.5, 0.3, 0.45] and network.named == []
    assert series.notes == [f.message for f in findings] and series.title == \
        "preflight: 4 ranks on cpu: faulty, min_tflops, slow, min_busbw_gbps"
    figure = drawing.figure(series)
    top, bottom = figure.axes[:2]
    shown = _artists(top)
    assert shown["ranks-0"].get_offsets().tolist() == [[0, 0.07], [1, 0.06]]
    assert shown["named-0"].get_offsets().tolist() == [[2, 0.005], [3, 0.065]]  # each named rank, marked
    # the slow rule's reference, rank by rank: the faulty rank is left out of it, as the verdict leaves it
    others = verdict.medians_of_others([0.07, 0.06, 0.005])
    assert _ticks(shown["median-0"]) == list(zip([0, 1, 2], others, strict=True))
    assert _ticks(shown["threshold-0"]) == [(rank, m / 3.0) for rank, m in zip([0, 1, 2], others, strict=True)]
    assert list(shown["floor-0"].get_ydata()) == [0.01, 0.01]
    assert [t.get_text() for t in top.texts] == ["rank 2", "rank 3"]
    below = _artists(bottom)
    assert below["ranks-1"].get_offsets().tolist() == [[0, 0.4], [1, 0.5], [2, 0.3], [3, 0.45]]
    assert list(below["median-1"].get_ydata()) == [statistics.median([0.4, 0.5, 0.3, 0.45])] * 2
    assert list(below["floor-1"].get_ydata()) == [2.0, 2.0]
    labels = {text.get_text() for axes in (top, bottom) for text in axes.get_legend().get_texts()}
    assert {"floor env.preflight.min_tflops=0.01", "floor env.preflight.min_busbw_gbps=2",
            "slow below: that median / max_skew (3)"} <= labels
    assert [text.get_text() for text in figure.axes[2].texts] == notes.cut([f.message for f in findings], 4)


def test_a_node_s_all_reduce_has_a_panel_of_its_own_and_names_the_slow_node():
    world = [_rank(r, 0.05, host=f"host{r // 2}", busbw=1.0, node_busbw=0.2 if r < 2 else 5.0) for r in range(4)]
    request = Request(mode="warn", seconds=5, max_skew=3.0, floors=Floors(min_node_busbw_gbps=1.0), device="cpu",
                      backend="gloo", world_size=4)
    findings = _judged(world, request)
    assert [(f.kind, f.ranks) for f in findings] == [("min_node_busbw_gbps", [0])]
    node = picture.picture(world, findings, request).panels[2]
    assert (node.values, node.named, [line.values for line in node.lines]) == ([0.2, 0.2, 5.0, 5.0], [0], [[1.0]])


@pytest.mark.extra("plot")
def test_ten_thousand_ranks_one_point_each_and_a_bounded_picture():
    world = [_rank(r, 0.05 + (r % 7) * 0.001) for r in range(10_000)]
    world[4321] = _rank(4321, 0.001)
    findings = _judged(world)
    series = picture.picture(world, findings, REQUEST)
    assert len(outbound.to_json(series.to_json())) < 2 * 2**20  # what travels to the drawing process
    figure = drawing.figure(series)
    shown = _artists(figure.axes[0])
    assert len(shown["ranks-0"].get_offsets()) == 9_999 and shown["named-0"].get_offsets().tolist() == [[4321, 0.001]]
    assert len(figure.axes[0].texts) <= drawing.MAX_LABELLED and figure.get_size_inches()[1] < 10


@pytest.mark.extra("plot")
def test_the_picture_travels_as_json_and_is_read_back_strictly(tmp_path):
    series = picture.picture(_world(), _judged(_world()), REQUEST)
    sent = outbound.to_json(series.to_json()).encode()
    assert drawing.read(json.loads(sent)) == series
    assert drawing.draw_from(io.BytesIO(sent), tmp_path / "p.svg") == 0
    svg = (tmp_path / "p.svg").read_text()
    assert "<!-- rank 2 -->" in svg and 'id="named-0"' in svg and 'id="floor-0"' in svg
    wrong = json.loads(sent)
    wrong["panels"][1]["values"].pop()
    with pytest.raises(inbound.Unreadable, match=r"^the picture's panels hold \[3, 4\] ranks"):
        drawing.read(wrong)
    with pytest.raises(inbound.Unreadable, match=r"^the picture has no panel$"):
        drawing.read({**json.loads(sent), "panels": []})
    wrong = json.loads(sent)
    wrong["panels"][0]["lines"][0]["kind"] = "bogus"
    with pytest.raises(inbound.Unreadable, match=r"^matmul TFLOP/s: a line 'bogus' of 4 values"):
        drawing.read(wrong)


@pytest.mark.extra("plot")
def test_the_drawing_process_never_makes_a_run_directory_deleted_after_the_job_again(tmp_path, capsys):
    # issue 45: the job ended, its directory was deleted, and the process drawing its picture came afterwards
    sent = outbound.to_json(picture.picture(_world(), _judged(_world()), REQUEST).to_json()).encode()
    gone = tmp_path / "outputs" / "2026-12-07" / "05-00-00"
    assert drawing.draw_from(io.BytesIO(sent), gone / "preflight.png") == 0  # nothing to tell: the job has ended
    assert not (tmp_path / "outputs").exists() and capsys.readouterr().err == ""


def test_the_drawing_process_says_in_one_line_what_it_could_not_draw(tmp_path, capsys):
    assert drawing.draw_from(io.BytesIO(b'{"title": "t", "panels": 3}'), tmp_path / "p.png") == 1
    assert drawing.draw_from(io.BytesIO(b"x" * (apart.MAX_BYTES + 1)), tmp_path / "p.png") == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"bootstrap: preflight: no picture in {tmp_path}/p.png: Unreadable: panels: not a list",
                     f"bootstrap: preflight: no picture in {tmp_path}/p.png: Unreadable: the preflight's figures: "
                     f"larger than {apart.MAX_BYTES} bytes"]
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("kinds, wanted", [([], False), (["slow"], True), (["slow", "unfinished"], False)])
def test_a_picture_when_the_check_found_something_and_every_figure_came(kinds, wanted):
    assert picture.wanted([verdict.Finding(kind, "m") for kind in kinds]) is wanted


def test_without_matplotlib_a_job_with_a_finding_logs_one_line_and_nothing_else_changes(tmp_path, monkeypatch,
                                                                                          caplog):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed: every import of it fails
    preset = {"preflight": {"min_tflops": 1000.0, "mode": "warn"}}
    with caplog.at_level(logging.INFO, logger="bootstrap"), bootstrap.initialize(preset, output_dir=tmp_path) as job:
        assert [f.kind for f in job.report.preflight.findings] == ["min_tflops"]  # found, and the job goes on
    said = [r.getMessage() for r in caplog.records if r.name == "bootstrap.preflight.picture"]
    assert said == [f"preflight: {canvas.MISSING}"]
    assert not (tmp_path / "preflight.png").exists()


def test_only_a_job_s_rank_0_draws_and_never_the_doctor():
    from bootstrap.core import preflight as step
    from bootstrap.core.schema import EnvConfig
    from unit.test_plan import TWO_RANKS, plan

    def asked(output_dir="/job", launch=None, always=False):
        made = replace(plan(launch=launch) if launch else plan(), output_dir=output_dir)
        return step.request(EnvConfig(), made, "cpu", None, "env", always).picture

    assert str(asked()) == "/job/preflight.png"
    assert asked(launch=TWO_RANKS) is None  # rank 1: every rank holds the same figures, rank 0 draws them
    assert asked(output_dir=None) is None and asked(always=True) is None  # nowhere to write; the doctor writes nothing
