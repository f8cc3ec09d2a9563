"""Every Hydra app style and launcher plugin: a hydra-zen app whose primary config is a dataclass,
enabled from the command line alone, and hydra-ray-launcher's workers.

The apps are real: tests/zen_app (hydra-zen's builds/store/zen, no YAML) and train_stub.py under
``hydra/launcher=ray`` on a local Ray cluster of 2 CPUs.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bootstrap.core import presets
from bootstrap.sweep import plotted, rank, read, swept, walk

from conftest import ROOT, STUB, clean_env

ZEN_APP = ROOT / "tests" / "zen_app" / "app.py"
CALLBACK_FORM = ["hydra/callbacks=bootstrap", "+env@hydra.callbacks.bootstrap.env=cpu_debug"]
TRACEBACK = "Traceback (most recent call last)"


def run(cmd, cwd: Path, timeout: int = 180, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, cmd)], cwd=cwd, text=True, capture_output=True,
                          env=clean_env(**env), timeout=timeout)


def test_a_dataclass_primary_config_takes_the_preset_beneath_the_callback(tmp_path):
    out = tmp_path / "out"
    proc = run([ZEN_APP, f"hydra.run.dir={out}", *CALLBACK_FORM, "hydra.callbacks.bootstrap.env.threads.intra_op=1",
                "lr=0.25"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "bootstrap.json").read_text())
    assert report["preset"] == "cpu_debug" and report["job"]["status"] == "completed"
    assert report["job"]["metrics"] == {"return": 0.5}
    # Hydra files `+env@...` with the task's overrides (its key is the group `env`), the rest with its own
    assert report["overrides"] == ["+env@hydra.callbacks.bootstrap.env=cpu_debug", "lr=0.25",
                                   "hydra.callbacks.bootstrap.env.threads.intra_op=1"]
    observed = json.loads((out / "observed.json").read_text())
    assert observed["threads"] == 1 and observed["omp"] == "1"  # torch and OpenMP agree on the override


def test_the_callback_form_refuses_a_bad_value_and_a_gpu_preset_naming_its_own_keys(tmp_path):
    proc = run([ZEN_APP, f"hydra.run.dir={tmp_path / 'a'}", *CALLBACK_FORM,
                "hydra.callbacks.bootstrap.env.threads.intra_op=abc"], tmp_path)
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr
    assert "hydra.callbacks.bootstrap.env.threads.intra_op" in proc.stderr
    proc = run([ZEN_APP, f"hydra.run.dir={tmp_path / 'b'}", "hydra/callbacks=bootstrap",
                "+env@hydra.callbacks.bootstrap.env=h100"], tmp_path)
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr
    # the suggested command works in this app: the callback form, not +env=cpu_debug
    assert "Fix: run with +env@hydra.callbacks.bootstrap.env=cpu_debug," in proc.stderr
    assert not (tmp_path / "b" / "observed.json").exists()  # the task did not run


def test_a_dataclass_app_without_a_preset_is_told_the_form_that_works_for_it(tmp_path):
    proc = run([ZEN_APP, f"hydra.run.dir={tmp_path}", "hydra/callbacks=bootstrap"], tmp_path)
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr
    assert "primary config is a dataclass" in proc.stderr
    assert "'+env@hydra.callbacks.bootstrap.env=cpu_debug'" in proc.stderr


def test_two_presets_in_one_job_are_refused_naming_both(tmp_path):
    proc = run([STUB, f"hydra.run.dir={tmp_path}", "train.steps=0", "+env@hydra.callbacks.bootstrap.env=cpu_debug"],
               tmp_path)
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr
    assert f"Two presets in one job: {presets.CALLBACK_KEY} and env" in proc.stderr


def test_hydra_zen_launch_from_python_with_the_callback_form(tmp_path):
    overrides = [*CALLBACK_FORM, f"hydra.run.dir={tmp_path / 'z'}"]
    code = f"""
import json, sys
sys.path.insert(0, {str(ZEN_APP.parent)!r})
from hydra_zen import launch, store, zen
import app
store.add_to_hydra_store()
job = launch(store[None, "train"], zen(app.train), overrides={overrides!r},
             version_base="1.3", to_dictconfig=True)
print(json.dumps({{"ret": job.return_value}}))
"""
    proc = run(["-c", code], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"ret": 0.2}
    assert json.loads((tmp_path / "z" / "bootstrap.json").read_text())["job"]["status"] == "completed"


def test_a_zen_app_with_the_preset_in_its_defaults_sweeps_it(tmp_path):
    sweep = tmp_path / "sweep"
    proc = run([ZEN_APP, "--config-name", "train_with_env", "-m", f"hydra.sweep.dir={sweep}",
                "env.threads.intra_op=1,2"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    observed = [json.loads((sweep / str(n) / "observed.json").read_text()) for n in (0, 1)]
    assert [o["threads"] for o in observed] == [1, 2] and [o["omp"] for o in observed] == ["1", "2"]
    assert (sweep / "sweep_summary.md").exists()


# -- hydra-ray-launcher -------------------------------------------------------------------------
RAY = ["hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2"]


@pytest.fixture(scope="module")
def ray_launcher():
    import hydra_plugins.hydra_ray_launcher  # noqa: F401 - the ray extra installs it: absent fails, never skips


def test_a_failed_check_under_the_ray_launcher_runs_once_with_one_message(tmp_path, ray_launcher):
    sweep = tmp_path / "sweep"
    proc = run([STUB, "-m", *RAY, f"hydra.sweep.dir={sweep}", "train.steps=1", "env=h100"], tmp_path, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.count("env=h100 does not fit this machine") == 1  # once: Ray did not retry the job
    assert "WorkerCrashedError" not in proc.stderr and "retries" not in proc.stderr
    assert TRACEBACK not in proc.stderr  # Hydra prints the message, not its own traceback
    reports = list(sweep.rglob("bootstrap.json"))
    assert len(reports) == 1 and json.loads(reports[0].read_text())["job"]["status"] == "check_failed"


@pytest.fixture(scope="module")
def ray_sweep(tmp_path_factory, ray_launcher):
    """One sweep on one local Ray cluster, read by two tests: two thread counts (auto, 2) by two secret values
    of a variable whose name says secret (each job's own, in the launcher's own log line per job)."""
    tmp_path = tmp_path_factory.mktemp("ray")
    sweep = tmp_path / "sweep"
    proc = run([STUB, "-m", *RAY, f"hydra.sweep.dir={sweep}", "train.steps=1", "env.threads.intra_op=auto,2",
                "+env.vars.MY_API_KEY=k_PLANTED_one,k_PLANTED_two"], tmp_path, timeout=300)
    return proc, sweep


def test_ray_launcher_jobs_report_rays_values_as_rays_and_an_explicit_count_rules_every_library(ray_sweep):
    proc, sweep = ray_sweep
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the jobs in the sweep's order: (auto, one), (auto, two), (2, one), (2, two)
    auto, two = (json.loads((sweep / str(n) / "bootstrap.json").read_text()) for n in (0, 2))
    assert auto["distributed"]["launcher"] == two["distributed"]["launcher"] == "ray_task"
    # Ray set OMP_NUM_THREADS=1 (the task's one CPU): Ray's, not the user's shell
    assert auto["vars"]["OMP_NUM_THREADS"]["source"] == "launcher" and auto["vars"]["OMP_NUM_THREADS"]["value"] == "1"
    assert auto["threads"]["intra_op"] == 1
    # an explicit count on the command line is an override: torch, OpenMP and MKL agree on it
    assert two["threads"]["intra_op"] == 2
    assert {name: (two["vars"][name]["value"], two["vars"][name]["source"])
            for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")} == \
        {"OMP_NUM_THREADS": ("2", "override"), "MKL_NUM_THREADS": ("2", "override")}


def test_a_secret_override_under_the_ray_launcher_is_masked(ray_sweep):
    proc, sweep = ray_sweep
    assert proc.returncode == 0, proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    assert "#0 : " in output and "+env.vars.MY_API_KEY=***" in output  # hydra_ray_launcher's own log line
    assert "PLANTED" not in output
    written = {p: p.read_text("utf-8", "replace") for p in sweep.rglob("*")  # but Hydra's records of the command
               if p.is_file() and ".hydra" not in p.parts and p.name != "multirun.yaml"}
    for path, text in written.items():
        assert "PLANTED" not in text, path


# -- hydra-optuna-sweeper: the sweeper's own direction ------------------------------------------
OPTUNA = ["hydra/sweeper=optuna", "hydra.sweeper.n_trials=5", "hydra.sweeper.n_jobs=1",
          "hydra.sweeper.sampler.seed=1", "lr=interval(0.1,1.0)"]


def _best_row(markdown: str) -> str:
    return next(line for line in markdown.splitlines() if line.startswith("| **"))


def test_an_optuna_sweep_that_maximises_marks_optunas_best_as_best(tmp_path):
    import yaml

    sweep = tmp_path / "sweep"
    proc = run([ZEN_APP, "--config-name", "train_with_env", "-m", f"hydra.sweep.dir={sweep}", *OPTUNA,
                "hydra.sweeper.direction=maximize"], tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    best_value = yaml.safe_load((sweep / "optimization_results.yaml").read_text())["best_value"]
    values = [json.loads(p.read_text())["job"]["metrics"]["return"] for p in sweep.glob("*/bootstrap.json")]
    assert len(values) == 5 and best_value == max(values) != min(values)
    markdown = (sweep / "sweep_summary.md").read_text()
    best = _best_row(markdown)
    assert f"**{best_value:.4g}**" in best  # the summary's best is Optuna's, not the lowest return
    # the searched key is a column and a panel of the picture, whose star is Optuna's best trial
    header = next(line for line in markdown.splitlines() if line.startswith("| job |"))
    assert header.endswith(" | lr | return | best |")
    assert "![return against each swept value](sweep_summary.png)" in markdown
    directions = read.sweepers_directions(Path(job) for job, _ in walk.latest(sweep)[0])
    rows = rank.rank([read.row_of(job, names) for job, names in walk.latest(sweep)[0]], directions=directions)
    (panel,) = plotted.panels(rows, swept.split(rows), rank.objective_for(rows, directions=directions))
    best_lr = yaml.safe_load((sweep / "optimization_results.yaml").read_text())["best_params"]["lr"]
    assert panel.key == "lr" and len(panel.points) == 5 and panel.best == (pytest.approx(best_lr), best_value)


def test_a_multi_objective_optuna_sweep_names_each_return_and_marks_no_single_best(tmp_path):
    sweep = tmp_path / "sweep"
    proc = run([ZEN_APP, "--config-name", "train_with_env", "-m", f"hydra.sweep.dir={sweep}", *OPTUNA,
                "hydra.sweeper.direction=[minimize,maximize]", "two_objectives=true"], tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(next(sweep.glob("*/bootstrap.json")).read_text())
    assert set(report["job"]["metrics"]) == {"return/0", "return/1"} and "metrics_skipped" not in report["job"]
    markdown = (sweep / "sweep_summary.md").read_text()
    assert "| return/0 | return/1 |" in markdown and "| **" not in markdown
    assert "No single best: the sweeper optimises 2 objectives (min, max)" in markdown


# -- first impressions ----------------------------------------------------------------------------
def test_a_sweep_with_no_job_gets_a_one_line_note_not_an_empty_table(tmp_path):
    sweep = tmp_path / "sweep"
    proc = run([STUB, "-m", f"hydra.sweep.dir={sweep}", "train.stepz=1,2"], tmp_path)  # no job composes
    assert proc.returncode == 1
    assert "No job of this sweep left a directory" in proc.stdout and "| job |" not in proc.stdout


def test_the_readme_run_prints_no_warning_the_user_did_not_cause(tmp_path):
    # torch's CPU wheel does not depend on numpy; without it, `import torch` warns. Run train_stub as
    # README command 1 does on a fresh machine, with numpy made unimportable and every warning shown.
    code = (f"import sys, runpy; sys.modules['numpy'] = None; "
            f"sys.argv = ['train_stub.py', 'hydra.run.dir={tmp_path / 'out'}', 'train.steps=2']; "
            f"runpy.run_path({str(STUB)!r}, run_name='__main__')")
    proc = run(["-W", "default", "-c", code], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stdout + proc.stderr, proc.stderr


# -- the doctor on any app ---------------------------------------------------------------------
def doctor(*args: str) -> subprocess.CompletedProcess:
    return run(["-m", "bootstrap", "doctor", *args], ZEN_APP.parent)


def test_the_doctor_diagnoses_an_app_whose_configs_live_in_python():
    proc = doctor("--module", "app", "--config-name", "train", *CALLBACK_FORM,
                  "hydra.callbacks.bootstrap.env.threads.intra_op=1")
    assert proc.returncode == 0, proc.stderr
    assert "hydra-train-bootstrap doctor: preset cpu_debug" in proc.stdout and "intra_op 1," in proc.stdout
    proc = doctor("--module", "app", "--config-name", "train", "hydra/callbacks=bootstrap",
                  "+env@hydra.callbacks.bootstrap.env=h100")
    assert proc.returncode == 1 and "Fix: run with +env@hydra.callbacks.bootstrap.env=cpu_debug" in proc.stdout
    proc = doctor("--module", "app", "--config-name", "train_with_env", "env.threads.intra_op=2")
    assert proc.returncode == 0 and "intra_op 2," in proc.stdout


def test_the_doctor_names_what_is_missing_without_a_doubled_period():
    proc = doctor("--config-name", "train")  # the app's configs are in Python: without --module, none is found
    assert proc.returncode == 2 and TRACEBACK not in proc.stderr
    assert "no primary config 'train'" in proc.stderr and "add --module <its module>" in proc.stderr
    proc = doctor("--module", "app", "--config-name", "train_with_env", "env=no_such_preset")
    assert proc.returncode == 1 and "unknown preset 'no_such_preset'. Presets that exist: " in proc.stderr  # as the job
    for text in (doctor("--config-name", "train").stderr, proc.stderr):
        assert ".." not in text
    proc = doctor("--module", "no_such_module")
    assert proc.returncode == 2 and "--module no_such_module: cannot import it" in proc.stderr
