"""The sweep summary of a real train_stub thread sweep: the shared overrides once, a column per swept key, its
picture; and ``bootstrap summary SWEEP_DIR``, which writes it again for a sweep on disk."""
import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.pictures import canvas

from conftest import STUB, clean_env

pytestmark = pytest.mark.e2e
PNG = b"\x89PNG\r\n\x1a\n"
IMAGE = "![samples_per_s against each swept value](sweep_summary.png)"


def _run(args, cwd, timeout=180):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=clean_env(),
                          timeout=timeout)


@pytest.fixture(scope="module")
def thread_sweep(tmp_path_factory) -> Path:
    """A real two-job thread sweep of train_stub, as its process left it."""
    root = tmp_path_factory.mktemp("thread_sweep")
    sweep = root / "sweep"
    proc = _run([str(STUB), "-m", "env.threads.intra_op=1,2", "train.steps=20", "env=cpu_debug",
                 f"hydra.sweep.dir={sweep}"], root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return sweep


def _copy(sweep: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "sweep"
    shutil.copytree(sweep, copy)  # copy2: the files keep their times, so the latest sweep's jobs stay its own
    return copy


def _table(markdown: str) -> list:
    return [line for line in markdown.splitlines() if line.startswith("|")]


def test_a_thread_sweep_shows_its_shared_overrides_once_a_column_per_swept_key_and_its_picture(thread_sweep):
    markdown = (thread_sweep / "sweep_summary.md").read_text()
    assert markdown.startswith("Shared by all jobs: `train.steps=20 env=cpu_debug`\n\n")
    table = _table(markdown)
    assert table[0].startswith("| job | status | intra_op | inter_op | first_step_s | env.threads.intra_op | "
                               "samples_per_s |")
    assert "train.steps" not in "\n".join(table) and "env=cpu_debug" not in "\n".join(table)
    cells = [[cell.strip("* ") for cell in line.split(" | ")] for line in table[2:]]
    assert sorted(c[5] for c in cells) == ["1", "2"] and all(c[5] == c[2] for c in cells)  # swept = applied
    assert all(float(c[4]) > 0 for c in cells)  # each job's time to its first step (timings.first_step_s)
    assert f"\n{IMAGE}\n" in markdown and (thread_sweep / "sweep_summary.png").read_bytes().startswith(PNG)
    with open(thread_sweep / "sweep_summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["env.threads.intra_op"], r["overrides"]) for r in rows) == [
        ("1", "env.threads.intra_op=1 train.steps=20 env=cpu_debug"),
        ("2", "env.threads.intra_op=2 train.steps=20 env=cpu_debug")]


def test_bootstrap_summary_writes_it_again_for_a_sweep_whose_process_died_before_its_end(thread_sweep, tmp_path):
    sweep = _copy(thread_sweep, tmp_path)
    before = (sweep / "sweep_summary.md").read_text()
    for name in ("sweep_summary.md", "sweep_summary.csv", "sweep_summary.png"):
        (sweep / name).unlink()  # as if the launching process had died before on_multirun_end
    proc = _run(["-m", "bootstrap", "summary", str(sweep)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (sweep / "sweep_summary.md").read_text() == before  # what the sweep's end wrote
    assert proc.stdout == f"Sweep summary ({sweep / 'sweep_summary.md'}):\n{before}\n"
    assert (sweep / "sweep_summary.png").read_bytes().startswith(PNG) and (sweep / "sweep_summary.csv").is_file()


def test_bootstrap_summary_ranks_again_by_another_objective(thread_sweep, tmp_path):
    sweep = _copy(thread_sweep, tmp_path)
    proc = _run(["-m", "bootstrap", "summary", str(sweep), "--objective", "num_threads", "--mode", "min"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    markdown = (sweep / "sweep_summary.md").read_text()
    best = next(line for line in _table(markdown) if line.startswith("| **"))
    assert best.split(" | ")[5] == "**1**"  # one thread is now best
    assert "![num_threads against each swept value](sweep_summary.png)" in markdown
    proc = _run(["-m", "bootstrap", "summary", str(sweep), "--objective", "accuracy", "--no-plot"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "No job reported the objective `accuracy`, so none is best. The jobs reported: samples_per_s, " \
           "final_loss, steps, num_threads." in proc.stdout
    assert "sweep_summary.png" not in proc.stdout and "| **" not in proc.stdout


@pytest.mark.parametrize("what", ["missing", "a file", "no job"])
def test_bootstrap_summary_refuses_what_is_no_sweep_in_one_line(tmp_path, what):
    target = tmp_path / "target"
    if what == "a file":
        target.write_text("")
    elif what == "no job":
        (target / "0").mkdir(parents=True)
    proc = _run(["-m", "bootstrap", "summary", str(target)], tmp_path)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"bootstrap summary: SWEEP_DIR {target} ")
    assert proc.stderr.rstrip().endswith("give the sweep's directory, its hydra.sweep.dir "
                                         "(multirun/<date>/<time> by default).")
    assert not (tmp_path / "target" / "sweep_summary.md").exists()


def test_bootstrap_summary_that_cannot_write_says_so_in_one_line(thread_sweep, tmp_path):
    sweep = _copy(thread_sweep, tmp_path)
    (sweep / "sweep_summary.csv").unlink()
    (sweep / "sweep_summary.csv").mkdir()  # a directory where the summary goes
    proc = _run(["-m", "bootstrap", "summary", str(sweep)], tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"bootstrap summary: cannot write the sweep summary into {sweep}: ")


def test_without_matplotlib_the_command_writes_the_summary_and_one_line_says_how_to_get_the_picture(
        thread_sweep, tmp_path):
    sweep = _copy(thread_sweep, tmp_path)
    (sweep / "sweep_summary.png").unlink()
    proc = _run(["-c", "import sys; sys.modules['matplotlib'] = None; from bootstrap.cli.commands import main; "
                       f"sys.exit(main(['summary', {str(sweep)!r}]))"], tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    markdown = (sweep / "sweep_summary.md").read_text()
    assert [line for line in proc.stdout.splitlines() if "matplotlib" in line.replace(str(tmp_path), "")] == \
        [canvas.MISSING]
    assert f"\n{canvas.MISSING}\n" in markdown and IMAGE not in markdown and not (sweep / "sweep_summary.png").exists()
    assert _table(markdown)[0].startswith("| job | status | intra_op | inter_op | first_step_s | env.threads.intra_op |")


def test_bootstrap_summary_of_a_directory_holding_single_runs_and_a_sweep_exits_2_and_writes_nothing(
        thread_sweep, tmp_path):
    # lightning-hydra-template's logs/train: runs/<time> (single runs) beside multiruns/<time> (a sweep)
    logs = tmp_path / "logs"
    shutil.copytree(thread_sweep, logs / "multiruns" / "t1")
    single = _run([str(STUB), "train.steps=1", "env=cpu_debug", f"hydra.run.dir={logs / 'runs' / 't0'}"], tmp_path)
    assert single.returncode == 0, single.stderr[-3000:]
    proc = _run(["-m", "bootstrap", "summary", str(logs)], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"bootstrap summary: SWEEP_DIR {logs} is not one sweep's directory: it holds the "
                                  "jobs of 1 sweep(s) (multiruns/t1) and 1 single run(s): give the sweep's directory")
    assert not list(logs.glob("sweep_summary*")) and proc.stdout == ""
    # issue 45: a sweeper that writes no multirun.yaml (Optuna's), and a single run's own directory: Hydra's record
    (logs / "multiruns" / "t1" / "multirun.yaml").unlink()
    proc = _run(["-m", "bootstrap", "summary", str(logs)], tmp_path)
    assert proc.returncode == 2 and "and 1 single run (hydra.mode RUN)" in proc.stderr, proc.stderr
    proc = _run(["-m", "bootstrap", "summary", str(logs / "runs" / "t0")], tmp_path)
    assert proc.returncode == 2 and "is a single run's directory" in proc.stderr, proc.stderr
    assert not list(logs.glob("sweep_summary*")) and not list((logs / "runs" / "t0").glob("sweep_summary*"))
    shutil.copy(thread_sweep / "multirun.yaml", logs / "multiruns" / "t1")
    shutil.copytree(thread_sweep, logs / "multiruns" / "t2")  # two sweeps, no single run: refused as well
    shutil.rmtree(logs / "runs")
    proc = _run(["-m", "bootstrap", "summary", str(logs / "multiruns")], tmp_path)
    assert proc.returncode == 2 and "jobs of 2 sweep(s) (t1, t2)" in proc.stderr, proc.stderr
    assert _run(["-m", "bootstrap", "summary", str(logs / "multiruns" / "t2")], tmp_path).returncode == 0
