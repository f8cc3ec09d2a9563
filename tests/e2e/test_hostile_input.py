"""Hostile input, secrets and faults, second pass: never skipped, never leaked, never a traceback.

In-process where the behaviour is pure or needs only the real callback object; real
processes where it involves Hydra's hooks or its logging.
"""
import json
import subprocess
import sys

from conftest import STUB, clean_env

TRACEBACK = "Traceback (most recent call last)"
TOKEN = "hf_PlantedSecretValue0123456789"


def run(args, env=None, cwd=None, timeout=120):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=env or clean_env())


# -- 1. the bootstrap is never skipped silently ----------------------------------------------
def test_an_override_that_cannot_be_resolved_from_the_hydra_node_still_runs_the_checks(tmp_path):
    # Reading hydra.overrides.task resolves interpolations inside the strings; ${.lr} fails
    # there. That read used to happen outside the guard: Hydra warned and ran the task.
    proc = run([str(STUB), f"hydra.run.dir={tmp_path}", "env.requires.python='<3'", "+train.lr_copy=${.lr}",
                "train.steps=1"])
    assert proc.returncode == 1 and "needs Python <3" in proc.stderr
    assert "trained" not in proc.stdout + proc.stderr and TRACEBACK not in proc.stderr
    report = json.loads((tmp_path / "bootstrap.json").read_text())
    assert report["job"]["status"] == "check_failed"
    assert "+train.lr_copy=${.lr}" in report["overrides"]  # recorded as typed


def test_a_secret_from_an_interpolation_is_recorded_as_typed_never_resolved(doctor_here, tmp_path):
    proc = run([str(STUB), f"hydra.run.dir={tmp_path}", "train.steps=0", "+train.hub=${oc.env:HF_TOKEN}"],
               env=clean_env(HF_TOKEN=TOKEN))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "bootstrap.json").read_text())["overrides"][-1] == "+train.hub=${oc.env:HF_TOKEN}"
    doctor = doctor_here("--json", "+train.hub=${oc.env:HF_TOKEN}", env=clean_env(HF_TOKEN=TOKEN), cwd=tmp_path)
    assert doctor.returncode == 0 and TOKEN not in doctor.stdout + doctor.stderr


def test_hydras_multirun_log_lines_are_masked(tmp_path):
    proc = run([str(STUB), "-m", f"hydra.sweep.dir={tmp_path}", "train.steps=0",
                f"+env.vars.MY_API_KEY=k_{TOKEN},k2_{TOKEN}", "+db.url=postgres://u:pw_PLANTED@h/db"])
    assert proc.returncode == 0, proc.stderr
    # Hydra's own records (.hydra/*.yaml, multirun.yaml) hold what was typed, before any callback runs.
    written = "".join(p.read_text() for p in tmp_path.rglob("*")
                      if p.is_file() and ".hydra" not in p.parts and p.name != "multirun.yaml")
    for text in (proc.stdout + proc.stderr, written):
        assert TOKEN not in text and "pw_PLANTED" not in text
    assert "#0 : " in proc.stdout + proc.stderr and "+env.vars.MY_API_KEY=***" in proc.stdout + proc.stderr


def test_hydras_message_for_a_failed_task_is_masked(tmp_path):
    proc = run([str(STUB), f"hydra.run.dir={tmp_path}", "train.batch_size=-1", f"+env.vars.MY_API_KEY=k_{TOKEN}"])
    assert proc.returncode != 0
    assert "Error executing job with overrides:" in proc.stderr and "+env.vars.MY_API_KEY=***" in proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    assert json.loads((tmp_path / "bootstrap.json").read_text())["job"]["status"] == "failed"


def test_env_auto_takes_a_variable_with_or_without_plus(tmp_path):
    # the free-form map takes a new key without '+' on every preset, env=auto's included (issue 45)
    for form in ("env.vars.MY_FLAG=1", "+env.vars.MY_FLAG=1"):
        ok = run([str(STUB), f"hydra.run.dir={tmp_path}", "env=auto", form, "train.steps=0"])
        assert ok.returncode == 0, ok.stderr
        assert json.loads((tmp_path / "bootstrap.json").read_text())["vars"]["MY_FLAG"]["source"] == "override"
