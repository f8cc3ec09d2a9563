"""The report where users already look: real MLflow, Lightning and W&B runs made by a real Hydra job's task
(tests/tracker_app), read back with each tracker's own reader.

- MLflow: a SQLite backend store and a file artifact store; the tags of the task's ``mlflow.start_run()`` and the
  ``bootstrap.json`` artifact, read with ``MlflowClient``; every tag checked with MLflow's own validation.
- Lightning: ``Trainer.fit`` with ``CSVLogger`` and ``TensorBoardLogger``: ``hparams.yaml`` and the TensorBoard
  event file, read with tensorboard's own event reader (what its HParams dashboard reads).
- W&B: offline runs, whose ``run-<id>.wandb`` file is read record by record: the file is LevelDB's log format
  (wandb 0.31 ships no Python reader of it), each record wandb's own protobuf message, decoded with its class.
"""

import importlib.util
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import yaml

from conftest import clean_env

# Looked up, not imported: missing, they fail every test here rather than skipping them (the extras are part of
# the test command).
for _tracker in ("mlflow", "wandb", "tensorboard", "lightning"):
    assert importlib.util.find_spec(_tracker) is not None, \
        "pip install -e '.[test,lightning,mlflow,wandb,tensorboard]' runs these tests"

APP = Path(__file__).parents[1] / "tracker_app" / "app.py"
BOOTSTRAP = ("+env=cpu_debug", "hydra/callbacks=bootstrap")
HF_TOKEN = "hf_trackersecretabcdefghijklmnop"
DB_PASSWORD = "pw_tracker_secret_2718"
SECRETS = (f"+env.vars.HF_TOKEN={HF_TOKEN}", f"+db.password={DB_PASSWORD}")
STABLE = {"bootstrap/preset": "cpu_debug", "bootstrap/found/torch": None, "bootstrap/threads/intra_op": None,
          "bootstrap/vars/PYTHONHASHSEED": "0", "bootstrap/vars/HF_TOKEN": "***", "bootstrap/host": None}  # None: any


def run_app(out_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(APP), f"hydra.run.dir={out_dir}", *args], cwd=out_dir.parent,
                          env=clean_env(**env), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def assert_stable_keys(config: dict) -> None:
    for key, value in STABLE.items():
        assert key in config, f"{key} missing from {sorted(config)[:20]}..."
        assert value is None or str(config[key]).strip('"') == value, (key, config[key])


def assert_no_secret(*texts: str) -> None:
    for text in texts:
        assert HF_TOKEN not in text and DB_PASSWORD not in text


# -- MLflow ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mlflow_job(tmp_path_factory):
    """One job whose task calls mlflow.start_run(), then one run started after the job, with no session."""
    import mlflow

    work = tmp_path_factory.mktemp("mlflow")
    uri, artifacts = f"sqlite:///{work / 'mlflow.db'}", work / "artifacts"
    mlflow.set_tracking_uri(uri)
    mlflow.create_experiment("tracker-app", artifact_location=artifacts.as_uri())
    proc = run_app(work / "out", "tracker=mlflow", *BOOTSTRAP, *SECRETS, MLFLOW_TRACKING_URI=uri,
                   MLFLOW_EXPERIMENT_NAME="tracker-app", TRACKER_APP_AFTER_JOB="1")
    runs = {run.info.run_name: run for run in mlflow.search_runs(experiment_names=["tracker-app"],
                                                                 output_format="list")}
    return proc, runs, work


def _docs_snippet(starts: str) -> str:
    """docs/trackers.md's python block that starts with ``starts``, as written."""
    page = (Path(__file__).parents[2] / "docs" / "trackers.md").read_text()
    (block,) = [b.split("\n```", 1)[0] for b in page.split("```python\n")[1:] if b.startswith(starts)]
    return block


def _run_snippet(code: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=clean_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_docs_mlflow_read_back_runs_as_written_on_an_apps_own_experiment(mlflow_job):
    # the app's runs are in its own experiment ("tracker-app", as lightning-hydra-template's MLFlowLogger makes one),
    # not in the default experiment 0 the snippet once read (IndexError) (issue 45)
    _, _, work = mlflow_job
    done = _run_snippet(_docs_snippet("from mlflow import MlflowClient"), work)
    assert "bootstrap/preset = cpu_debug" in done.stdout and "['bootstrap.json']" in done.stdout, done.stdout


def test_mlflow_is_told_of_the_provider_by_the_installed_package():
    from importlib.metadata import entry_points

    found = [e.value for e in entry_points(group="mlflow.run_context_provider") if e.name == "bootstrap"]
    assert found == ["bootstrap.integrations.mlflow:BootstrapContext"], "pip install -e . registers it"


def test_a_run_the_task_starts_gets_the_report_as_tags(mlflow_job):
    _, runs, _ = mlflow_job
    tags = runs["train"].data.tags
    assert_stable_keys(tags)
    assert tags["bootstrap/job/status"] == "completed"  # running when the run began; updated at the job's end
    assert tags["bootstrap/overrides"] == "tracker=mlflow +env=cpu_debug +env.vars.HF_TOKEN=*** +db.password=***"
    assert runs["train"].data.params == {"lr": "0.01"} and runs["train"].data.metrics == {"loss": 0.5}


def test_the_runs_tags_say_where_and_from_which_commit_the_job_ran(mlflow_job):
    _, runs, work = mlflow_job
    tags, provenance = runs["train"].data.tags, json.loads((work / "out" / "bootstrap.json").read_text())["provenance"]
    assert tags["bootstrap/host"] == provenance["host"]
    # collected in a thread while the task runs: at the latest, the job's end tags what it found
    git = provenance.get("git") or {}
    assert tags.get("bootstrap/git/commit") == git.get("commit") and tags.get("bootstrap/git/dirty") == \
        (None if not git else str(git["dirty"]).lower())


def test_the_job_end_adds_bootstrap_json_as_an_artifact(mlflow_job):
    from mlflow import MlflowClient

    _, runs, work = mlflow_job
    run_id = runs["train"].info.run_id
    assert [a.path for a in MlflowClient().list_artifacts(run_id)] == ["bootstrap.json"]
    stored = work / "artifacts" / run_id / "artifacts" / "bootstrap.json"  # the file artifact store
    assert stored.read_bytes() == (work / "out" / "bootstrap.json").read_bytes()
    assert json.loads(stored.read_text())["job"]["status"] == "completed"


def test_every_tag_is_masked_and_valid_for_mlflow(mlflow_job):
    from mlflow.utils.validation import _validate_tag

    proc, runs, _ = mlflow_job
    tags = runs["train"].data.tags
    assert_no_secret(*tags, *tags.values(), proc.stdout, proc.stderr)
    for key, value in tags.items():
        _validate_tag(key, value)  # raises on a key MLflow refuses; a value too long is cut, so check it too
        assert len(value) <= 5000


def test_a_run_started_with_no_session_gets_nothing_and_no_word(mlflow_job):
    proc, runs, _ = mlflow_job
    assert not [key for key in runs["after"].data.tags if key.startswith("bootstrap/")]
    assert "bootstrap:" not in proc.stderr and "context provider" not in proc.stderr


# -- Lightning -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lightning_job(tmp_path_factory):
    """Trainer.fit with CSV, TensorBoard and MLflow loggers (MLFlowLogger makes its run with create_run, which
    MLflow's context providers never see)."""
    out = tmp_path_factory.mktemp("lightning") / "out"
    run_app(out, "tracker=lightning", "logger=[csv,tensorboard,mlflow]", *BOOTSTRAP, *SECRETS,
            MLFLOW_TRACKING_URI=f"sqlite:///{out.parent / 'mlflow.db'}")
    return out


def test_csv_logger_hparams_hold_the_report_and_the_models_own(lightning_job):
    hparams = yaml.safe_load((lightning_job / "csv" / "version_0" / "hparams.yaml").read_text())
    assert_stable_keys(hparams)
    assert hparams["hidden"] == 8 and hparams["lr"] == 0.01  # the model's save_hyperparameters()
    assert_no_secret(*map(str, hparams.values()))


def test_tensorboard_shows_the_report_beside_the_models_hparams(lightning_job):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata

    (events,) = (lightning_job / "tensorboard" / "version_0").glob("events.out.tfevents.*")
    accumulator = EventAccumulator(str(events))
    accumulator.Reload()
    content = accumulator.PluginTagToContent(metadata.PLUGIN_NAME)[metadata.SESSION_START_INFO_TAG]
    hparams = metadata.parse_session_start_info_plugin_data(content).hparams  # what the HParams dashboard shows
    shown = {key: value.string_value or value.number_value or value.bool_value for key, value in hparams.items()}
    assert_stable_keys(shown)
    assert shown["hidden"] == 8 and shown["lr"] == 0.01
    assert_no_secret(*map(str, shown.values()))
    printed = _run_snippet(_docs_snippet("from tensorboard.backend"), lightning_job).stdout  # docs/trackers.md's
    assert "'bootstrap/preset': 'cpu_debug'" in printed and "'lr': 0.01" in printed, printed


def test_tensorboard_shows_the_report_in_lightning_hydra_templates_order_of_calls(tmp_path):
    # The template logs its hparams before fit: the event file's first session_start_info, which the HParams view
    # shows, must hold the report too, beside the template's own keys.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata

    out = tmp_path / "out"
    run_app(out, "tracker=lightning", "template_order=true", "logger=[tensorboard]", *BOOTSTRAP, *SECRETS)
    (events,) = (out / "tensorboard" / "version_0").glob("events.out.tfevents.*")
    accumulator = EventAccumulator(str(events))
    accumulator.Reload()
    content = accumulator.PluginTagToContent(metadata.PLUGIN_NAME)[metadata.SESSION_START_INFO_TAG]
    hparams = metadata.parse_session_start_info_plugin_data(content).hparams  # the first set: the view's
    shown = {key: value.string_value or value.number_value or value.bool_value for key, value in hparams.items()}
    assert shown["task_name"] == "train" and shown["model/hidden"] == 8 and shown["seed"] == 12345, sorted(shown)
    assert_stable_keys(shown)
    assert_no_secret(*map(str, shown.values()))
    # docs/trackers.md's snippet on the template's keys: a key never logged says so, where it read 0.0 (issue 45)
    printed = _run_snippet(_docs_snippet("from tensorboard.backend"), out).stdout
    assert "'lr': '(not logged)'" in printed and "'bootstrap/preset': 'cpu_debug'" in printed, printed


def test_mlflow_logger_runs_get_params_then_tags_and_the_artifact(lightning_job):
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{lightning_job.parent / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("tracker-app-lightning").experiment_id])
    assert_stable_keys(run.data.params)  # Lightning's log_hyperparams: params, each cut to 250 characters by it
    assert run.data.params["hidden"] == "8"
    assert_stable_keys(run.data.tags)  # the job's end: the view as tags, and the report
    assert run.data.tags["bootstrap/job/status"] == "completed"
    assert "bootstrap/job/status" not in run.data.params  # written once, at the setup: it would say running
    assert [a.path for a in client.list_artifacts(run.info.run_id)] == ["bootstrap.json"]
    assert_no_secret(*run.data.params.values(), *run.data.tags.values())


# -- Weights & Biases ------------------------------------------------------------------------------------------
def wandb_records(run_file: Path):
    """The records of an offline run's ``run-<id>.wandb``: LevelDB's log format (a 7-byte header, then records
    of a CRC-32, a length and a type, in 32 KiB blocks), each record wandb's own protobuf ``Record``."""
    from wandb.proto.wandb_internal_pb2 import Record

    data = run_file.read_bytes()
    assert data[:7] == struct.pack("<4sHB", b":W&B", 0xBEE1, 0), "not a W&B transaction log"
    at, pending, records = 7, b"", []
    while at + 7 <= len(data):
        if 32768 - at % 32768 < 7:  # a block's tail too short for a header is padding
            at += 32768 - at % 32768
            continue
        checksum, length, kind = struct.unpack("<IHB", data[at:at + 7])
        chunk = data[at + 7:at + 7 + length]
        at += 7 + length
        if kind == 0:
            break
        assert zlib.crc32(chunk, zlib.crc32(bytes([kind]))) == checksum, "a record's checksum differs"
        pending = chunk if kind in (1, 2) else pending + chunk  # FULL, FIRST / MIDDLE, LAST
        if kind in (1, 4):
            record = Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def wandb_run(out: Path):
    """(config as the run's records set it, in order, the files the run saved) of the one offline run in ``out``."""
    (run_file,) = (out / "wandb").glob("offline-run-*/run-*.wandb")
    config, files = {}, []
    for record in wandb_records(run_file):
        kind = record.WhichOneof("record_type")
        items = record.run.config.update if kind == "run" else record.config.update if kind == "config" else ()
        config.update({item.key: json.loads(item.value_json) for item in items})
        files += [file.path for file in record.files.files] if kind == "files" else []
    return config, files, run_file.parent


@pytest.mark.parametrize("how", ["open", "passed"])
def test_a_wandb_run_gets_the_report_offline(tmp_path, how):
    """open: the task leaves its run active, and the job's end adds the report; passed: the task passes
    bootstrap.current().flat() to wandb.init and finishes the run itself."""
    proc = run_app(tmp_path / "out", "tracker=wandb", f"wandb={how}", *BOOTSTRAP, *SECRETS,
                   WANDB_MODE="offline", WANDB_SILENT="true")
    config, files, run_dir = wandb_run(tmp_path / "out")
    assert_stable_keys(config)
    assert config["lr"] == 0.01  # the task's own config stays
    assert_no_secret(*config, *map(str, config.values()), proc.stdout, proc.stderr)
    if how == "open":
        assert config["bootstrap/job/status"] == "completed" and "bootstrap.json" in files
        assert (run_dir / "files" / "bootstrap.json").read_bytes() == (tmp_path / "out" / "bootstrap.json").read_bytes()
    else:
        assert config["bootstrap/job/status"] == "running" and "bootstrap.json" not in files  # as the task passed it


# -- without them ----------------------------------------------------------------------------------------------
def test_the_callback_and_the_integrations_import_no_tracker():
    code = ("import sys, bootstrap.adapter.callback, bootstrap.integrations\n"
            "print(sorted(m for m in ('mlflow', 'wandb', 'lightning', 'pytorch_lightning', 'tensorboard') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_lightning_callback_without_lightning_says_how_to_get_it():
    code = ("import sys\nsys.modules.update(lightning=None, pytorch_lightning=None)  # as if not installed\n"
            "import bootstrap.integrations.lightning")
    out = subprocess.run([sys.executable, "-c", code], env=clean_env(), capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == \
        "ImportError: bootstrap.integrations.lightning needs Lightning: pip install lightning"
