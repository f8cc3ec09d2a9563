"""Tests that need an optional part say so (tests/conftest.py, ``@pytest.mark.extra``): the unit tests that draw
pictures, run in a python where matplotlib cannot be imported (the `plot` extra missing), are skipped naming the
extra; under CI=true the same skips are failures. The whole fast subset with `.[test]` alone is checked in a venv of
its own (CONTRIBUTING.md, "Running the tests")."""
import subprocess
import sys

from conftest import ROOT, clean_env

PICTURES = ["tests/unit/test_canvas.py", "tests/unit/test_sweep_picture.py", "tests/unit/test_preflight_picture.py",
            "tests/unit/test_timeline.py"]
# Imported first by python (site), it makes every import of matplotlib fail, as if it were not installed.
HIDE = """
import sys
class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r} (hidden by tests/e2e/test_extras.py)")
        return None
sys.meta_path.insert(0, _Hidden())
"""


def _pytest_without_matplotlib(tmp_path, **env):
    (tmp_path / "sitecustomize.py").write_text(HIDE)
    return subprocess.run([sys.executable, "-m", "pytest", *PICTURES, "-q", "-n", "0", "-p", "no:cacheprovider",
                           "-rs", "-m", "not e2e"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=clean_env(PYTHONPATH=str(tmp_path), **env))


def test_without_the_plot_extra_the_picture_tests_skip_naming_it(tmp_path):
    proc = _pytest_without_matplotlib(tmp_path, CI="false")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "skipped" in proc.stdout and "needs the 'plot' extra" in proc.stdout
    assert "pip install -e '.[test,plot]'" in proc.stdout


def test_under_ci_a_test_that_needs_a_missing_extra_fails(tmp_path):
    proc = _pytest_without_matplotlib(tmp_path, CI="true")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "CI=true: a test that needs an extra must run" in proc.stdout and "skipped" not in proc.stdout
