"""Faults: SIGKILL mid-write, SIGTERM/SIGINT mid-task, long sweeps, planted secrets."""
import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import STUB, clean_env

APP = Path(__file__).parents[1] / "third_party_app"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
WRITER = """
import sys
from pathlib import Path
from bootstrap.doors.outbound import write_json
path = Path(sys.argv[1])
payload = {"vars": {f"VAR_{i}": {"value": "x" * 200, "source": "preset"} for i in range(500)}}
print("writing", flush=True)
n = 0
while True:
    n += 1
    payload["n"] = n
    write_json(path, payload)
"""


def wait_for(predicate, timeout: float, what: str):
    """Poll for an event the test needs before acting (a file, a log line): not a stand-in for work."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_sigkill_in_the_middle_of_writing_never_leaves_a_broken_report(tmp_path):
    target = tmp_path / "bootstrap.json"
    rng = random.Random(1234)
    for _ in range(8):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "writing"
        time.sleep(rng.uniform(0.0, 0.3))  # a random point in the write loop: the thing under test
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if target.exists():
            data = json.loads(target.read_text())  # parses whatever is left
            assert len(data["vars"]) == 500 and data["n"] >= 1


def test_sigkill_of_a_real_job_leaves_parseable_records(tmp_path):
    rng = random.Random(99)
    for attempt in range(3):
        out = tmp_path / f"run{attempt}"
        proc = subprocess.Popen([sys.executable, str(STUB), "train.steps=100000", "train.log_every=1",
                                 f"hydra.run.dir={out}"], cwd=tmp_path, env=clean_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda out=out: (out / "bootstrap.json").exists(), 60, "the report")
        time.sleep(rng.uniform(0.0, 1.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        report = json.loads((out / "bootstrap.json").read_text())
        assert report["job"]["status"] == "running"  # SIGKILL cannot be caught: the last record stands


def started_training(log: Path):
    return lambda: log.exists() and "step 1  loss" in log.read_text()


@pytest.mark.parametrize("sig, exit_status", [(signal.SIGTERM, 143), (signal.SIGINT, None)])
def test_a_signal_during_the_task_still_closes_the_job(tmp_path, sig, exit_status):
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(STUB), "train.steps=100000", "train.log_every=1",
                             "env.distributed.init=always", f"hydra.run.dir={out}"],
                            cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(started_training(out / "train_stub.log"), 60, "training to start")
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode != 0 and (exit_status is None or proc.returncode == exit_status)
    report = json.loads((out / "bootstrap.json").read_text())
    assert report["job"]["status"] == "interrupted"
    assert (report["distributed"]["process_group"], report["distributed"]["teardown"]) == ("created", "destroyed")


def test_sigterm_under_torchrun_closes_every_rank(tmp_path):
    proc = subprocess.Popen([*TORCHRUN, str(STUB), "train.steps=100000", "train.log_every=1"], cwd=tmp_path,
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    logs = lambda: list((tmp_path / "outputs").glob("*/*/train_stub.rank1.log"))  # noqa: E731
    wait_for(lambda: logs() and started_training(logs()[0])(), 90, "both ranks to train")
    proc.send_signal(signal.SIGTERM)  # torchrun forwards it to its workers
    proc.communicate(timeout=90)
    assert proc.returncode != 0
    run_dir = logs()[0].parent
    for rank in (0, 1):
        report = json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text())
        assert report["job"]["status"] == "interrupted", rank
        assert (report["distributed"]["process_group"], report["distributed"]["teardown"]) == \
            ("created", "destroyed"), rank


PROBE_APP = """
import json, os, threading
from pathlib import Path
import hydra, torch
from hydra.core.hydra_config import HydraConfig

@hydra.main(config_path="conf", config_name="bare", version_base="1.3")
def main(cfg):
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    observed = {"rss_kb": int(status["VmRSS"].split()[0]), "threads": int(status["Threads"]),
                "python_threads": threading.active_count(), "fds": len(os.listdir("/proc/self/fd")),
                "num_threads": torch.get_num_threads()}
    Path(HydraConfig.get().runtime.output_dir, "observed.json").write_text(json.dumps(observed))

main()
"""


JOBS = 100  # a leak of 0.1 MB a job shows as 10 MB; the threshold below is per job


def long_sweeps(app: Path, sweeps: dict) -> dict:
    """Run one JOBS-job sweep per ``{sweep_dir: overrides}`` at the same time (each is one mostly
    single-threaded process); return each sweep's {job number: what the job observed}."""
    procs = {sweep_dir: subprocess.Popen(
        [sys.executable, str(app / "probe_app.py"), "-m", f"+seed_sweep=range(0,{JOBS})", "+env=cpu_debug",
         f"hydra.sweep.dir={sweep_dir}", *overrides], cwd=app, env=clean_env(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for sweep_dir, overrides in sweeps.items()}
    observed = {}
    try:
        for sweep_dir, proc in procs.items():
            _, stderr = proc.communicate(timeout=900)
            assert proc.returncode == 0, stderr[-3000:]
            observed[sweep_dir] = {int(d.name): json.loads((d / "observed.json").read_text())
                                   for d in sweep_dir.iterdir() if d.is_dir()}
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return observed


@pytest.mark.slow
def test_a_long_one_process_sweep_leaks_nothing(tmp_path):
    """Hydra's basic launcher keeps every job's result, config included, until the sweep
    ends (about 0.1 MB a job here), so the same sweep without the bootstrap is the baseline:
    what the bootstrap adds must stay under 0.1 MB a job (20 MB over 200 jobs, the bound this test had when it
    ran 200), and file descriptors and threads flat."""
    app = tmp_path / "app"
    shutil.copytree(APP, app)
    (app / "probe_app.py").write_text(PROBE_APP)
    sweeps = long_sweeps(app, {tmp_path / "ours": ["hydra/callbacks=bootstrap"], tmp_path / "baseline": []})
    ours, baseline = sweeps[tmp_path / "ours"], sweeps[tmp_path / "baseline"]
    assert sorted(ours) == sorted(baseline) == list(range(JOBS))

    first, last = 20, JOBS - 1  # past the first jobs' warm-up (imports, caches)
    growth = {name: (runs[last]["rss_kb"] - runs[first]["rss_kb"]) / 1024 for name, runs in
              (("ours", ours), ("baseline", baseline))}
    assert growth["ours"] - growth["baseline"] < 0.1 * (last - first), growth
    assert ours[last]["fds"] <= ours[first]["fds"], (ours[first], ours[last])
    assert (ours[last]["threads"], ours[last]["python_threads"]) <= (ours[first]["threads"],
                                                                     ours[first]["python_threads"])
    for num in range(JOBS):
        report = json.loads((tmp_path / "ours" / str(num) / "bootstrap.json").read_text())
        assert report["job"]["status"] == "completed"
        assert report["overrides"] == [f"+seed_sweep={num}", "+env=cpu_debug"]
        assert ours[num]["num_threads"] == report["threads"]["intra_op"]
    assert len((tmp_path / "ours" / "sweep_summary.csv").read_text().splitlines()) == JOBS + 1


SECRETS = {"HF_TOKEN": "hf_PLANTED_hub", "WANDB_API_KEY": "wandb_PLANTED_key",
           "AWS_SECRET_ACCESS_KEY": "aws_PLANTED_secret", "DB_PASSWORD": "db_PLANTED_pw"}


def test_planted_secrets_appear_in_no_file_and_no_output(doctor_here, tmp_path):
    user_conf = tmp_path / "user_conf" / "env"
    user_conf.mkdir(parents=True)
    # A preset that names the secret variables: the shell's values win, and must be masked everywhere.
    (user_conf / "with_secrets.yaml").write_text(
        "defaults:\n  - cpu_debug\n  - _self_\nvars:\n" + "".join(f"  {n}: placeholder\n" for n in SECRETS))
    env = clean_env(**SECRETS)
    searchpath = f"hydra.searchpath=[file://{user_conf.parent}]"
    runs = [
        [sys.executable, str(STUB), "env=with_secrets", "train.steps=2", searchpath, f"hydra.run.dir={tmp_path}/run"],
        [sys.executable, str(STUB), "-m", "env=with_secrets", "env.threads.intra_op=1,2", "train.steps=2", searchpath,
         f"hydra.sweep.dir={tmp_path}/sweep"],
    ]
    outputs = []
    for cmd in runs:
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout + proc.stderr)
    for fmt in ([], ["--json"]):  # the doctor, in this process
        answer = doctor_here("env=with_secrets", searchpath, *fmt, cwd=tmp_path, env=env)
        assert answer.returncode == 0, answer.stderr
        outputs.append(answer.stdout + answer.stderr)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "sweep_summary.md" for p in written) and any(p.name == "bootstrap.json" for p in written)
    for secret in SECRETS.values():
        for path in written:
            assert secret not in path.read_text(errors="replace"), path
        for output in outputs:
            assert secret not in output
    report = json.loads((tmp_path / "run" / "bootstrap.json").read_text())
    assert {n: report["vars"][n]["value"] for n in SECRETS} == {n: "***" for n in SECRETS}
