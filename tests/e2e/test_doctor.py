"""`python -m bootstrap doctor` and `bootstrap-doctor`: in this process (``doctor_here``), and for
real in subprocesses where the process itself matters (exit status, entry point, a closed pipe)."""
import json
import subprocess
import sys
from pathlib import Path

from conftest import clean_env

DOCTOR = [sys.executable, "-m", "bootstrap", "doctor"]


def doctor(*args, cwd=None, env=None, command=DOCTOR):
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=cwd,
                          env=env or clean_env(), timeout=120)


def test_json_uses_the_bootstrap_json_schema(doctor_here, run_stub, tmp_path):
    run = run_stub("train.steps=0")
    proc = doctor_here("--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    preview = json.loads(proc.stdout)
    assert set(preview) == set(run.report)
    for key in ("found", "distributed", "torch", "threads", "seed"):
        assert set(preview[key]) == set(run.report[key]), key
    assert preview["vars"] == run.report["vars"] and preview["checks"] == run.report["checks"]


def test_console_script():
    script = Path(sys.executable).with_name("bootstrap-doctor")
    proc = doctor("--json", command=[str(script)])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["preset"] == "cpu_debug"


def test_a_reader_that_goes_away_early_gets_no_traceback(tmp_path):
    # `bootstrap doctor | head -1`: the pipe's reader is gone when the doctor writes.
    proc = subprocess.Popen(DOCTOR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env=clean_env())
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr
