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


def _section(text: str, title: str) -> str:
    return text.split(f"\n{title}\n", 1)[1].split("\n\n", 1)[0]


def test_preflight_measures_this_machine_and_puts_everything_back(tmp_path):
    proc = doctor("--preflight", "env.torch.matmul_precision=high", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    section = _section(proc.stdout, "Preflight")
    assert "status               ok" in section and "512x512 float32 at precision high" in section
    assert "one process: no collective" in section
    proc = doctor("--preflight", "--json", cwd=tmp_path)
    check = json.loads(proc.stdout)["preflight"]
    assert check["status"] == "ok" and check["ranks"][0]["tflops"] > 0 and check["mode"] == "warn"


def test_preflight_exits_1_where_the_job_would_stop(tmp_path):
    proc = doctor("--preflight", "env.preflight.mode=error", "env.preflight.min_tflops=1000", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "the job would stop: the preflight check found, under preflight.mode=error: rank 0 (" in proc.stderr
    assert "under the floor env.preflight.min_tflops=1000" in _section(proc.stdout, "Preflight")
    warned = doctor("--preflight", "env.preflight.min_tflops=1000", cwd=tmp_path)  # cpu_debug warns: it would train
    assert warned.returncode == 0 and "finding: rank 0 (" in warned.stdout


def test_preflight_under_torchrun_tests_the_network_too(tmp_path):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "bootstrap",
               "doctor"]
    # max_skew=50: the test is about the all_reduce; unpinned ranks on a busy 2-core machine swing 2x
    proc = doctor("--preflight", "env.threads.intra_op=1", "env.preflight.max_skew=50", cwd=tmp_path, command=command)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("\nPreflight\n") == 1  # rank 0 speaks for the world
    section = _section(proc.stdout, "Preflight")
    assert "status               ok" in section and "bus bandwidth" in section and "over 2 ranks" in section
