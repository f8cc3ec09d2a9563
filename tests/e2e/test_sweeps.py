"""Multirun sweeps under each launcher, with the third-party app's own presets and callback."""
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import clean_env

APP = Path(__file__).parents[1] / "third_party_app"
LAUNCHERS = {
    "basic": [],
    "joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
    "submitit_local": ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5"],
}


def sweep(tmp_path, *overrides, config="both_callbacks"):
    app_dir = tmp_path / "app"
    shutil.copytree(APP, app_dir)
    sweep_dir = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, str(app_dir / "app.py"), "-m", f"--config-name={config}", f"hydra.sweep.dir={sweep_dir}",
         *overrides],
        capture_output=True, text=True, cwd=app_dir, env=clean_env(), timeout=240)
    return proc, sweep_dir


def jobs(sweep_dir: Path) -> dict:
    """job number -> (overrides, observed, report) for every job that ran its task."""
    result = {}
    for report_file in sweep_dir.glob("*/bootstrap.json"):
        report = json.loads(report_file.read_text())
        observed_file = report_file.parent / "observed.json"
        observed = json.loads(observed_file.read_text()) if observed_file.exists() else None
        result[report["job"]["num"]] = (report["overrides"], observed, report)
    return result


def summary_rows(sweep_dir: Path):
    with open(sweep_dir / "sweep_summary.csv") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_each_job_sees_exactly_its_own_settings(tmp_path, launcher):
    proc, sweep_dir = sweep(tmp_path, *LAUNCHERS[launcher], "env=probe,cpu_debug", "env.threads.intra_op=1,2")
    assert proc.returncode == 0, proc.stderr

    ran = jobs(sweep_dir)
    assert sorted(ran) == [0, 1, 2, 3]
    for overrides, observed, report in ran.values():
        intra_op = int(next(o for o in overrides if o.startswith("env.threads.intra_op=")).split("=")[1])
        assert observed["threads"] == intra_op == report["threads"]["intra_op"]
        expected_probe = "from_probe" if "env=probe" in overrides else None
        assert observed["probe"] == expected_probe, (launcher, overrides)  # nothing leaks from a probe job

    before = json.loads((sweep_dir / "environ_before.json").read_text())
    after = json.loads((sweep_dir / "environ_after.json").read_text())
    assert after == before

    rows = summary_rows(sweep_dir)
    assert [r["overrides"] for r in rows] == [
        "env=probe env.threads.intra_op=2", "env=cpu_debug env.threads.intra_op=2",
        "env=probe env.threads.intra_op=1", "env=cpu_debug env.threads.intra_op=1"]
    assert [float(r["samples_per_s"]) for r in rows] == [205.0, 200.0, 105.0, 100.0]
    assert [r["best"] for r in rows] == ["yes", "", "", ""]  # samples_per_s, higher is better, by default
    assert {r["status"] for r in rows} == {"completed"}
    assert [r["intra_op"] for r in rows] == ["2", "2", "1", "1"]
    assert list(rows[0])[:9] == ["job", "overrides", "status", "intra_op", "inter_op", "env", "env.threads.intra_op",
                                 "samples_per_s", "final_loss"]  # a column per swept key, beside the metrics
    assert [(r["env"], r["env.threads.intra_op"]) for r in rows] == [("probe", "2"), ("cpu_debug", "2"),
                                                                     ("probe", "1"), ("cpu_debug", "1")]
    assert list(rows[0])[-1] == "best"
    markdown = (sweep_dir / "sweep_summary.md").read_text()
    assert markdown.splitlines()[2].startswith("| **") and markdown in proc.stdout  # printed, best in bold
    assert "![samples_per_s against each swept value](sweep_summary.png)" in markdown  # every launcher draws it
    assert (sweep_dir / "sweep_summary.png").read_bytes().startswith(b"\x89PNG")


def test_a_sweep_over_a_variable(tmp_path):
    proc, sweep_dir = sweep(tmp_path, "+env.vars.PROBE_VAR=a,b", config="config")
    assert proc.returncode == 0, proc.stderr
    seen = {tuple(o): obs["probe"] for o, obs, _ in jobs(sweep_dir).values()}
    assert seen == {("+env.vars.PROBE_VAR=a",): "a", ("+env.vars.PROBE_VAR=b",): "b"}
    assert all(r["vars"]["PROBE_VAR"]["source"] == "override" for _, _, r in jobs(sweep_dir).values())


def test_inter_op_in_a_one_process_sweep_is_recorded_not_fatal(tmp_path):
    proc, sweep_dir = sweep(tmp_path, "env.threads.inter_op=1,2", config="config")
    assert proc.returncode == 0, proc.stderr
    ran = jobs(sweep_dir)
    assert ran[0][2]["threads"]["inter_op"] == 1 and not ran[0][2]["warnings"]
    second = ran[1][2]
    assert second["threads"]["inter_op"] == 1 and second["threads"]["requested"]["inter_op"] == 2
    assert any("torch sets inter-op threads once per process" in w for w in second["warnings"])
    assert proc.stderr.count("torch sets inter-op threads once per process") + \
        proc.stdout.count("torch sets inter-op threads once per process") == 1  # warned once


def test_a_failing_task_still_gets_a_row_and_the_sweep_fails(tmp_path):
    proc, sweep_dir = sweep(tmp_path, "fail=false,true", config="config")
    assert proc.returncode != 0
    assert "the task failed on purpose" in proc.stderr
    rows = {r["overrides"]: r for r in summary_rows(sweep_dir)}  # Hydra spells the sweep's bools False/True
    assert rows["fail=False"]["status"] == "completed" and rows["fail=False"]["best"] == "yes"
    assert rows["fail=True"]["status"] == "failed" and rows["fail=True"]["samples_per_s"] == ""


def test_a_failed_check_with_warn_runs_and_its_row_says_so(tmp_path):
    proc, sweep_dir = sweep(tmp_path, "env=cpu_debug,h100", "env.on_mismatch=warn", config="config")
    assert proc.returncode == 0, proc.stderr
    rows = {r["overrides"].split()[0]: r["status"] for r in summary_rows(sweep_dir)}
    assert rows == {"env=cpu_debug": "completed", "env=h100": "completed, check failed"}


def test_a_failed_check_with_error_stops_the_sweep_and_names_the_job(tmp_path):
    proc, sweep_dir = sweep(tmp_path, "env=cpu_debug,h100,a100", config="config")
    assert proc.returncode != 0
    assert "(in the multirun job with overrides: env=h100)" in proc.stderr
    assert "Traceback" not in proc.stderr
    rows = {r["overrides"]: r["status"] for r in summary_rows(sweep_dir)}
    assert rows == {"env=cpu_debug": "completed", "env=h100": "check_failed"}  # a100 never started
