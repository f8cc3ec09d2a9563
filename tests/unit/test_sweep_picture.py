"""The sweep summary's picture: its data from the rows (bootstrap/sweep/plotted.py), drawn by
bootstrap/pictures/sweep.py. The tests read the plotted series back from the figure's artists and from an SVG,
never pixels."""
import json
import re
import sys

import pytest

from bootstrap.doors import outbound
from bootstrap.pictures import canvas
from bootstrap.pictures import sweep as picture
from bootstrap.pictures.sweep import Panel
from bootstrap.sweep import plotted, rank, summary, swept
from bootstrap.sweep.read import Row

OBJECTIVE = ("samples_per_s", "max")


def job(num, *overrides, **metrics):
    return Row(str(num), " ".join(overrides), "completed", 1, 1, metrics, override_list=tuple(overrides))


def ranked(*rows):
    return rank.rank(list(rows), *OBJECTIVE)


def panels_of(rows):
    return {p.key: p for p in plotted.panels(rows, swept.split(rows), OBJECTIVE)}


def series(figure, categorical=()):
    """Per panel (its x label): the jobs' points and the best's, as plotted; on the ``categorical`` panels, a
    point's x read back as the label of its tick."""
    found = {}
    for axes in figure.axes:
        key = axes.get_xlabel()
        labels = dict(zip(axes.get_xticks(), (t.get_text() for t in axes.get_xticklabels()), strict=True))
        by_gid = {c.get_gid(): [tuple(xy) for xy in c.get_offsets().tolist()] for c in axes.collections}

        def shown(points, key=key, labels=labels):
            return [(labels[x] if key in categorical else x, y) for x, y in points]

        found[key] = {"jobs": shown(by_gid["jobs"]), "best": shown(by_gid.get("best", [])),
                      "y": axes.get_ylabel(), "scale": axes.get_xscale()}
    return found


@pytest.mark.extra("plot")
def test_each_swept_key_plots_every_job_with_the_objective_and_the_best_is_its_own_point():
    rows = ranked(job(0, "env=probe", "intra_op=1", "lr=0.1", samples_per_s=100.0),
                  job(1, "env=cpu_debug", "intra_op=1", "lr=0.001", samples_per_s=200.0),
                  job(2, "env=probe", "intra_op=2", "lr=0.0001", samples_per_s=300.0),
                  job(3, "env=cpu_debug", "intra_op=2", "lr=0.01"),  # no objective: no point
                  job(4, "env=probe", "intra_op=4", samples_per_s=50.0))  # lr not set
    panels = panels_of(rows)
    assert list(panels) == ["env", "intra_op", "lr"]
    assert panels["env"] == Panel("env", (("probe", 100.0), ("cpu_debug", 200.0), ("probe", 300.0), ("probe", 50.0)),
                                  ("probe", 300.0))
    assert panels["intra_op"].points == ((1.0, 100.0), (1.0, 200.0), (2.0, 300.0), (4.0, 50.0))
    assert panels["lr"].points == ((0.1, 100.0), (0.001, 200.0), (0.0001, 300.0))  # job 4 set none: no point
    assert panels["lr"].best == (0.0001, 300.0) and panels["env"].categories() == ["probe", "cpu_debug"]

    drawn = series(picture.figure(list(panels.values()), *OBJECTIVE), categorical={"env"})
    for key, panel in panels.items():
        assert drawn[key]["jobs"] == [(x, y) for x, y in panel.points], key
        assert drawn[key]["best"] == [panel.best], key
    assert drawn["lr"]["scale"] == "log" and drawn["intra_op"]["scale"] == "linear"  # a span of 1000x: log
    assert drawn["env"]["y"] == "samples_per_s (higher is better)"


def test_a_text_key_some_jobs_did_not_set_has_a_category_for_them_and_a_best_that_set_nothing_is_not_marked():
    rows = ranked(job(0, "a=1", "+trainer.strategy=ddp", samples_per_s=1.0), job(1, "a=2", samples_per_s=2.0))
    panels = panels_of(rows)
    assert panels["trainer.strategy"].points == (("ddp", 1.0), (plotted.NOT_SET, 2.0))
    assert panels["trainer.strategy"].best == (plotted.NOT_SET, 2.0)
    mixed = panels_of(ranked(job(0, "b=1", samples_per_s=1.0), job(1, "b=null", samples_per_s=2.0)))["b"]
    assert mixed.categories() == ["1", "null"]  # one value that is not a number: every value a category


def test_nothing_to_draw_without_an_objective_or_a_swept_key():
    rows = ranked(job(0, "a=1", samples_per_s=1.0), job(1, "a=1", samples_per_s=2.0))
    assert plotted.panels(rows, swept.split(rows), OBJECTIVE) == []
    varied = ranked(job(0, "a=1", loss=1.0), job(1, "a=2", loss=2.0))
    assert plotted.panels(varied, swept.split(varied), None) == []
    assert plotted.panels(varied, swept.split(varied), ("accuracy", "max")) == []  # no job reported it
    assert picture.figure([], *OBJECTIVE) is None


@pytest.mark.extra("plot")
def test_the_svg_names_the_keys_the_categories_and_the_best_and_no_secret(tmp_path):
    secret = "hunter2-planted-in-a-category"
    outbound.remember(secret)
    panels = [Panel("env", (("cpu_debug", 1.0), (f"x{secret}", 2.0)), ("cpu_debug", 1.0)),
              Panel("env.threads.intra_op", ((1.0, 1.0), (2.0, 2.0)), (1.0, 1.0))]
    canvas.save(picture.figure(panels, "final_loss", "min"), tmp_path / "p.svg")
    svg = (tmp_path / "p.svg").read_text()
    comments = set(re.findall(r"<!-- (.*?) -->", svg))
    assert {"env", "env.threads.intra_op", "cpu_debug", "final_loss (lower is better)", "best"} <= comments
    assert svg.count('<g id="best">') == 2 and secret not in svg


@pytest.mark.extra("plot")
def test_more_swept_keys_than_panels_draws_the_first_and_the_summary_says_so(tmp_path):
    keys = picture.MAX_PANELS + 3
    for num in range(2):
        _job_dir(tmp_path, num, [f"k{i}={num}" for i in range(keys)], samples_per_s=float(num + 1))
    markdown = summary.write(tmp_path)
    assert f"![samples_per_s against each swept value]({summary.PNG_NAME})" in markdown
    assert f"The picture shows the first {picture.MAX_PANELS} swept keys; 3 more are in the table's CSV." in markdown
    rows = rank.rank([job(n, *(f"k{i}={n}" for i in range(keys)), samples_per_s=float(n)) for n in range(2)])
    drawn = picture.figure(plotted.panels(rows, swept.split(rows), OBJECTIVE), *OBJECTIVE)
    assert [a.get_xlabel() for a in drawn.axes] == [f"k{i}" for i in range(picture.MAX_PANELS)]


def _job_dir(root, num, overrides, **metrics):
    directory = root / str(num)
    (directory / ".hydra").mkdir(parents=True)
    (directory / ".hydra" / "overrides.yaml").write_text("".join(f"- {json.dumps(o)}\n" for o in overrides))
    (directory / "bootstrap.json").write_text(json.dumps(
        {"preset": "cpu_debug", "overrides": overrides, "threads": {"intra_op": 1, "inter_op": 1},
         "job": {"num": num, "status": "completed", "metrics": metrics}}))


@pytest.mark.extra("plot")
def test_the_summary_draws_its_picture_once_where_promised_and_shows_it_under_the_table(tmp_path):
    for num in range(3):
        _job_dir(tmp_path, num, ["train.steps=2", f"env.threads.intra_op={num + 1}"], samples_per_s=float(num))
    markdown = summary.write(tmp_path)
    assert markdown.startswith("Shared by all jobs: `train.steps=2`\n\n| job |")
    table_end = markdown.index("\n\n", markdown.index("| job |"))
    assert markdown[table_end:].startswith("\n\n![samples_per_s against each swept value](sweep_summary.png)\n")
    assert (tmp_path / summary.PNG_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / summary.PNG_NAME).unlink()
    assert "sweep_summary.png" not in summary.write(tmp_path, pictured=False)
    assert not (tmp_path / summary.PNG_NAME).exists()


def test_without_matplotlib_the_summary_is_written_and_one_line_says_how_to_get_the_picture(tmp_path, monkeypatch):
    for num in range(2):
        _job_dir(tmp_path, num, [f"env.threads.intra_op={num + 1}"], samples_per_s=float(num))
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # what an import of a missing package raises
    markdown = summary.write(tmp_path)
    assert markdown.count(canvas.MISSING) == 1 and f"\n{canvas.MISSING}\n" in markdown
    assert "sweep_summary.png" not in markdown and not (tmp_path / summary.PNG_NAME).exists()
    assert (tmp_path / summary.MD_NAME).read_text() == markdown


def test_matplotlib_failing_costs_the_picture_never_the_summary(tmp_path, monkeypatch):
    for num in range(2):
        _job_dir(tmp_path, num, [f"a={num}"], samples_per_s=float(num))

    def fails(*args):
        raise RuntimeError("a backend that cannot draw\nsecond line")

    monkeypatch.setattr(picture, "figure", fails)
    markdown = summary.write(tmp_path)
    assert "\nno picture: matplotlib failed: RuntimeError: a backend that cannot draw\\nsecond line\n" in markdown


@pytest.mark.parametrize("objective, mode, best", [(None, None, 1.0), ("final_loss", None, 1.0),
                                                  ("final_loss", "max", 0.0)])
@pytest.mark.extra("plot")
def test_another_objective_draws_its_own_best(tmp_path, objective, mode, best):
    for num in range(2):
        _job_dir(tmp_path, num, [f"a={num}"], samples_per_s=float(num), final_loss=float(1 - num))
    markdown = summary.write(tmp_path, objective, mode)
    assert f"![{objective or 'samples_per_s'} against each swept value](sweep_summary.png)" in markdown
    rows = rank.rank([job(n, f"a={n}", samples_per_s=float(n), final_loss=float(1 - n)) for n in range(2)],
                     objective, mode)
    (panel,) = plotted.panels(rows, swept.split(rows), rank.objective_for(rows, objective, mode))
    assert panel.best is not None and panel.best[0] == best


@pytest.mark.extra("plot")
def test_many_long_categories_get_bounded_tick_labels_that_keep_their_ends_apart():
    names = [f"a_very_long_architecture_name_{i:03d}" for i in range(100)]
    drawn = picture.figure([Panel("model.net", tuple((n, float(i)) for i, n in enumerate(names)))], *OBJECTIVE)
    (axes,) = drawn.axes
    labels = [t.get_text() for t in axes.get_xticklabels()]
    assert len(labels) <= picture.MAX_TICK_LABELS and all(len(label) <= picture.MAX_LABEL for label in labels)
    assert labels[:2] == ["a_very_lon...e_name_000", "a_very_lon...e_name_004"]  # every 4th, start and end kept
    assert len(axes.collections[0].get_offsets()) == 100  # every job is still a point


def _overlapping_labels(axes) -> list:
    """Pairs of x tick labels whose drawn boxes overlap, as the figure renders them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(axes.figure).get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in axes.get_xticklabels()
             if t.get_text() and t.get_visible() and axes.get_xlim()[0] <= t.get_position()[0] <= axes.get_xlim()[1]]
    return [(a, b) for (a, box_a), (b, box_b) in zip(boxes, boxes[1:]) if box_a.overlaps(box_b)]


@pytest.mark.extra("plot")
def test_close_swept_values_get_tick_labels_that_do_not_overlap():
    # an Optuna search's learning rates: 0.0533777 and 0.0561635 sat one over the other (issue 37)
    lrs = (0.0533777, 0.0561635, 0.0123, 0.0912, 0.0301)
    rows = ranked(*(job(i, f"lr={lr}", samples_per_s=100.0 + i) for i, lr in enumerate(lrs)))
    shown = picture.figure(list(panels_of(rows).values()), *OBJECTIVE)
    (axes,) = shown.axes
    assert _overlapping_labels(axes) == [], [t.get_text() for t in axes.get_xticklabels()]
    assert all(len(t.get_text()) <= 6 for t in axes.get_xticklabels()), [t.get_text() for t in axes.get_xticklabels()]


@pytest.mark.extra("plot")
def test_thread_counts_keep_a_tick_at_each_value():
    rows = ranked(*(job(i, f"intra_op={n}", samples_per_s=100.0 + i) for i, n in enumerate((1, 2, 4, 8))))
    shown = picture.figure(list(panels_of(rows).values()), *OBJECTIVE)
    (axes,) = shown.axes
    assert [t.get_text() for t in axes.get_xticklabels()] == ["1", "2", "4", "8"]


@pytest.mark.extra("plot")
@pytest.mark.parametrize("values", [
    [0.001 * i for i in range(1, 10)],  # an Optuna search's learning rates on a linear axis: 0.0010.002 touched
    [0.00125, 0.0015, 0.00175, 0.002],  # a few values, each its own tick
    [1e-5, 3.3e-5, 1e-4, 3.3e-4, 1e-3, 3.3e-3, 1e-2],  # a logarithmic axis
    [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 123456.789],  # long labels, crowded
])
def test_no_two_tick_labels_of_a_numeric_axis_touch(values):
    # measured on matplotlib's own layout of the figure as it is saved (issue 45: '0.0010.002' on a linear axis)
    panels = [Panel(f"key{n}", tuple((v, float(i)) for i, v in enumerate(values)), (values[0], 0.0)) for n in range(4)]
    figure = picture.figure(panels, "loss", "min")
    figure.draw_without_rendering()
    renderer = figure._get_renderer()
    for axes in figure.axes:
        boxes = sorted((t.get_window_extent(renderer) for t in axes.xaxis.get_ticklabels()
                        if t.get_visible() and t.get_text()), key=lambda box: box.x0)
        assert len(boxes) >= 2, [t.get_text() for t in axes.xaxis.get_ticklabels()]
        assert all(left.x1 < right.x0 for left, right in zip(boxes, boxes[1:], strict=False)), \
            [t.get_text() for t in axes.xaxis.get_ticklabels()]
