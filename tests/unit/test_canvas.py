"""The way a picture leaves: its texts cleaned as every output is, its bytes written whole."""

import sys

import pytest

from bootstrap.doors import outbound
from bootstrap.pictures import canvas

SECRET = "hunter2-planted-value-91"


@pytest.fixture
def planted_secret():
    outbound.remember(SECRET)
    yield SECRET


@pytest.mark.extra("plot")
@pytest.mark.parametrize("suffix", [".svg", ".png"])
def test_a_picture_s_texts_are_masked_and_escaped(tmp_path, planted_secret, suffix):
    figure = canvas.new_figure((4, 3))
    axes = figure.add_subplot()
    axes.plot([1, 2], [3, 4], label=f"token={planted_secret}")
    axes.set_title(f"run {planted_secret} \x1b[31mred")
    axes.set_xticks([1, 2], [planted_secret, "b"])
    axes.legend()
    canvas.save(figure, tmp_path / f"p{suffix}")
    figure.draw_without_rendering()  # the tick labels as saved
    shown = [text.get_text() for text in canvas.texts(figure)]
    assert not any(planted_secret in text or "\x1b" in text for text in shown)
    assert any(text.startswith("run ") for text in shown)  # the title is kept, masked
    data = (tmp_path / f"p{suffix}").read_bytes()
    assert planted_secret.encode() not in data and len(data) > 1000
    if suffix == ".svg":
        assert b"<svg" in data


def test_only_png_and_svg(tmp_path):
    with pytest.raises(ValueError, match="png or .svg"):
        canvas.save(canvas.new_figure((1, 1)), tmp_path / "p.jpg")


def test_without_matplotlib_there_is_no_figure_and_one_line_says_how(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # what an import of a missing package raises
    assert canvas.available() is False and canvas.new_figure((1, 1)) is None
    assert "\n" not in canvas.MISSING and "pip install 'hydra-train-bootstrap[plot]'" in canvas.MISSING
