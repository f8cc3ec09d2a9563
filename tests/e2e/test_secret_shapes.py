"""One masking rule for every output kind, walked with ONE catalogue of secret shapes (tests/secret_shapes.py, after
gitleaks' rules) by real jobs (tests/shapes_app): the task logs every shape, passes the one-line ones on the command
line and raises with all of them; nothing the bootstrap writes may hold one.

- a job with its trackers: bootstrap.json (job.error included) and every file of the run, the terminal, MLflow's
  tags, params and artifact (SQLite store, read back with MlflowClient), the W&B offline run's files, TensorBoard's
  event file (read back with tensorboard's own reader);
- two torchrun ranks, one failing: what rank 1 sent rank 0 (rank 0's job.error), both reports, torchrun's summary;
- a sweep: the summary's files, and its picture's texts (drawn again as SVG, whose text matplotlib keeps).
"""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, clean_env
from secret_shapes import CATALOGUE, MARK

for _part in ("mlflow", "wandb", "tensorboard", "lightning", "matplotlib"):  # missing, every test here fails
    assert importlib.util.find_spec(_part) is not None, f"pip install -e '.[test,lightning,mlflow,wandb,tensorboard,plot]'"

APP = ROOT / "tests" / "shapes_app" / "app.py"
# The one-line shapes without quotes travel on the command line too (Hydra's quoted value), into the report's
# overrides and so into every tracker's flat view. Each is said differently ("typed: ...") from the task's text: the
# bootstrap remembers a secret override's whole value and masks it anywhere, which would hide the task's lines
# whole, and the test is that each shape is found by its shape.
TYPED = [f"+shape{i}='typed: {s.text}'" for i, s in enumerate(CATALOGUE) if s.one_line and "'" not in s.text]


def hydras_own_report(stderr: str) -> str:
    """stderr without what Hydra prints of the task's exception itself (docs/errors.md: that is the app's output,
    not the bootstrap's): from its "Error executing job" line on."""
    return stderr.split("Error executing job with overrides:")[0]


def assert_no_secret(text: str, where: str) -> None:
    for shape in CATALOGUE:
        for secret in shape.secrets:
            assert secret not in text, f"{shape.rule}: {secret!r} in {where}"
    assert MARK not in text and MARK.upper() not in text, f"part of a secret in {where}"


def assert_nothing_written_holds_a_secret(directory: Path) -> int:
    """Every file under ``directory`` but Hydra's records of the command line, as bytes (the W&B and TensorBoard
    files are protobuf records: a string in them is its UTF-8 bytes). Returns how many files were read."""
    files = [p for p in directory.rglob("*") if p.is_file() and ".hydra" not in p.parts and p.name != "multirun.yaml"]
    for path in files:
        assert_no_secret(path.read_bytes().decode("utf-8", "replace"), str(path.relative_to(directory)))
    return len(files)


@pytest.fixture(scope="module")
def tracked_job(tmp_path_factory):
    import mlflow

    work = tmp_path_factory.mktemp("shapes")
    uri = f"sqlite:///{work / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    mlflow.create_experiment("shapes", artifact_location=(work / "artifacts").as_uri())
    proc = subprocess.run([sys.executable, str(APP), f"hydra.run.dir={work / 'run'}", "trackers=true", *TYPED],
                          cwd=work, capture_output=True, text=True, timeout=600,
                          env=clean_env(MLFLOW_TRACKING_URI=uri, MLFLOW_EXPERIMENT_NAME="shapes", WANDB_MODE="offline",
                                        WANDB_SILENT="true"))
    return proc, work, mlflow.search_runs(experiment_names=["shapes"], output_format="list")


def test_a_failed_job_s_files_and_terminal_hold_no_secret(tracked_job):
    proc, work, _ = tracked_job
    assert proc.returncode == 1, proc.stderr[-3000:]
    report = json.loads((work / "run" / "bootstrap.json").read_text())
    assert report["job"]["status"] == "failed" and report["job"]["error"].startswith("RuntimeError: login refused")
    assert "API_KEY=***" in report["job"]["error"] and "PRIVATE KEY-----***-----END" in report["job"]["error"]
    assert any(o.startswith("+shape0=") for o in report["overrides"])
    assert assert_nothing_written_holds_a_secret(work / "run") >= 4  # bootstrap.json, app.log, W&B's, TensorBoard's
    assert "about to fail" in proc.stdout + proc.stderr  # the task's own log line reached the terminal, masked
    assert_no_secret(proc.stdout + hydras_own_report(proc.stderr), "the terminal")


def test_mlflow_tags_params_and_artifact_hold_no_secret(tracked_job):
    from mlflow import MlflowClient

    _, work, runs = tracked_job
    (run,) = runs
    tags, params = run.data.tags, run.data.params
    assert tags["bootstrap/job/status"] == "failed" and "API_KEY=***" in tags["bootstrap/job/error"]
    assert_no_secret(json.dumps([tags, params]), "MLflow tags and params")
    artifact = Path(MlflowClient().download_artifacts(run.info.run_id, "bootstrap.json", str(work)))
    assert json.loads(artifact.read_text())["job"]["status"] == "failed"
    assert assert_nothing_written_holds_a_secret(work / "artifacts") >= 1


def test_wandb_and_tensorboard_hold_no_secret(tracked_job):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata

    _, work, _ = tracked_job
    assert list((work / "run" / "wandb").rglob("run-*.wandb")), "no W&B offline run"
    (events,) = (work / "run" / "tb").rglob("events.out.tfevents.*")
    accumulator = EventAccumulator(str(events))
    accumulator.Reload()
    content = accumulator.PluginTagToContent(metadata.PLUGIN_NAME)[metadata.SESSION_START_INFO_TAG]
    hparams = metadata.parse_session_start_info_plugin_data(content).hparams
    shown = {key: value.string_value for key, value in hparams.items()}
    assert "+shape0=" in shown["bootstrap/overrides"]  # the typed shapes reached TensorBoard, masked
    assert_no_secret(json.dumps(shown), "TensorBoard's hparams")


def test_what_a_failing_rank_sends_the_others_holds_no_secret(tmp_path):
    run_dir = tmp_path / "run"
    torchrun = [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc_per_node=2"]
    proc = subprocess.run([*torchrun, str(APP), f"hydra.run.dir={run_dir}", "fail_rank=1",
                           "env.distributed.timeout_s=30"], cwd=tmp_path, text=True, capture_output=True,
                          env=clean_env(), timeout=300)
    assert proc.returncode != 0
    reports = [json.loads((run_dir / f"bootstrap.rank{r}.json").read_text()) for r in (0, 1)]
    assert "rank 1 failed first" in reports[0]["job"]["error"]  # the peer's error travelled, masked
    assert "API_KEY=***" in reports[0]["job"]["error"]
    assert_nothing_written_holds_a_secret(run_dir)
    assert "Root Cause" in proc.stdout + proc.stderr
    assert_no_secret((proc.stdout + proc.stderr).split("Root Cause")[1], "torchrun's summary")


def test_a_sweep_s_summary_and_its_picture_hold_no_secret(tmp_path, monkeypatch):
    # Shapes whose text names no secret around them: each job's value is masked in part ("aws says *** is not
    # allowed"), so the jobs' values still differ and the summary shows the swept column and draws its panel. (A
    # value that names one, "db password: ...", is masked whole: every job would show the same "***".)
    notes = [s.text for s in CATALOGUE if s.rule in ("aws-access-token", "github-pat", "gcp-api-key")]
    sweep = tmp_path / "sweep"
    proc = subprocess.run([sys.executable, str(APP), "-m", f"hydra.sweep.dir={sweep}", "fail_rank=-1",
                           "note=" + ",".join(f"'{n}'" for n in notes)], cwd=tmp_path, capture_output=True, text=True,
                          env=clean_env(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = (sweep / "sweep_summary.md").read_text()
    assert "| note |" in summary and summary.count("***") >= 3 and "sweep_summary.png" in summary
    assert_nothing_written_holds_a_secret(sweep)
    assert_no_secret(proc.stdout + proc.stderr, "the terminal")
    from bootstrap.sweep import summary as sweep_summary

    monkeypatch.setattr(sweep_summary, "PNG_NAME", "again.svg")  # the same picture, as SVG: its texts are kept
    sweep_summary.write(sweep, standalone=True)
    svg = (sweep / "again.svg").read_text()
    assert "note" in svg
    assert_no_secret(svg, "the sweep's picture")
