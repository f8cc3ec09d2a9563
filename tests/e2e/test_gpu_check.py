"""bench/gpu_check.sh, as far as a CPU machine can run it: its assertions (bench/check_report.py)
read real reports, so the fields it relies on exist and mean what it assumes."""
import subprocess
import sys

from conftest import ROOT

CHECK = ROOT / "bench" / "check_report.py"


def check(report, *expectations):
    return subprocess.run([sys.executable, str(CHECK), str(report), *expectations], capture_output=True, text=True,
                          timeout=60)


def test_a_group_made_and_destroyed_passes_the_group_check(run_stub):
    run = run_stub("env.distributed.init=always", "train.steps=6")
    assert run.returncode == 0, run.output
    proc = check(run.out_dir / "bootstrap.json", "--device", "cpu", "--backend", "gloo", "--group", "--trained")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_gpu_expectations_fail_on_a_cpu_report_naming_each_field(run_stub):
    run = run_stub("env=h100", "env.on_mismatch=warn", "env.distributed.init=always", "train.steps=6")
    assert run.returncode == 0, run.output
    proc = check(run.out_dir / "bootstrap.json", "--device", "cuda", "--backend", "nccl", "--group", "--tf32",
                 "--trained")
    assert proc.returncode == 1
    for field in ("checks failed: ['device', 'cuda', 'compute_capability', 'gpus']", "device is 'cpu'",
                  "('created', 'destroyed', 'gloo')"):
        assert field in proc.stderr, proc.stderr
    assert "matmul_precision" not in proc.stderr  # h100's own setting is applied on the CPU too


def test_the_flight_recorder_check_on_gloo(tmp_path):
    # bench/gpu_check.sh runs it with h100 (NCCL); the same check, on this machine's backend.
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_flight_recorder.py"), str(tmp_path / "fr"),
                           "cpu_debug"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gloo:all_reduce; bootstrap hang: no divergence" in proc.stdout


def test_the_preflight_expectations_read_a_real_check(run_stub):
    # gpu_check.sh asks for a TF32 matmul above h100's floor and NCCL's network; on the CPU the same fields,
    # with a floor this machine reaches, and gloo, where there is no NCCL log to read
    run = run_stub("env.torch.matmul_precision=high", "env.preflight.min_tflops=0.0001", "env.distributed.init=always",
                   "train.steps=2")
    assert run.returncode == 0, run.output
    proc = check(run.out_dir / "bootstrap.json", "--device", "cpu", "--trained", "--preflight")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = check(run.out_dir / "bootstrap.json", "--device", "cpu", "--preflight", "--network")
    assert proc.returncode == 1 and "preflight timed 1 all_reduce sizes and read network None" in proc.stderr
    unreachable = run_stub("env.preflight.min_tflops=1000", "train.steps=2")
    proc = check(unreachable.out_dir / "bootstrap.json", "--device", "cpu", "--preflight")
    assert proc.returncode == 1 and "not status ok" in proc.stderr
