"""Multi-process start-up on the engines users run: real torchrun and submitit_local, gloo on CPU."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import STUB, clean_env, trained_as_one

APP = Path(__file__).parents[1] / "third_party_app"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]


def run(cmd, cwd, timeout=240):
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=clean_env(), timeout=timeout)


def test_torchrun_two_ranks_share_one_directory_and_all_reduce(tmp_path):
    proc = run([*TORCHRUN, str(STUB), "train.steps=20"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = [p for p in (tmp_path / "outputs").glob("*/*") if p.is_dir()]  # one output directory
    reports = [json.loads((run_dir / f"bootstrap.rank{r}.json").read_text()) for r in (0, 1)]
    assert not (run_dir / "bootstrap.json").exists()
    for rank, report in enumerate(reports):
        agreement = report["distributed"]["agreement"]  # compared through torchrun's store before the group
        assert (agreement["status"], agreement["via"], agreement["when"]) == (
            "agreed", "store", "before the process group")
        assert report["distributed"] | {"master_port": None, "job_id": None, "agreement": None} == {
            "launcher": "torchrun", "rank": rank, "local_rank": rank, "world_size": 2, "local_world_size": 2,
            "node_rank": 0, "job_id": None,
            "master_addr": "localhost", "master_port": None, "backend": "gloo", "process_group": "created",
            "teardown": "destroyed", "mesh": {"dp": 2}, "hang": None, "agreement": None,  # a healthy run: no dumps
            "group_at_end": {"owner": "bootstrap", "backend": "gloo", "world_size": 2, "rank": rank}}
        assert not list(run_dir.glob("comm_lib_trace_rank_*"))
        assert report["threads"]["intra_op"] == max(1, len(os.sched_getaffinity(0)) // 2)
        assert report["job"]["status"] == "completed"
    assert reports[0]["seed"]["data_seed"] != reports[1]["seed"]["data_seed"]  # each rank its own data
    assert trained_as_one(reports)  # different data, same weights: the gradients were all-reduced
    assert (run_dir / "train_stub.log").exists() and (run_dir / "train_stub.rank1.log").exists()
    assert "rank(s)" in (run_dir / "train_stub.log").read_text()  # rank 0 logs the aggregate
    assert "rank(s)" not in (run_dir / "train_stub.rank1.log").read_text()


def test_accelerate_launch_is_recognised_as_torchrun(tmp_path):
    # `accelerate launch --multi_gpu` starts its workers through torch.distributed.run; on a
    # machine without a GPU they train on the CPU.
    accelerate = Path(sys.executable).with_name("accelerate")
    proc = run([str(accelerate), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                "--mixed_precision", "no", "--dynamo_backend", "no", str(STUB), f"hydra.run.dir={tmp_path / 'run'}",
                "train.steps=10"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [json.loads((tmp_path / "run" / f"bootstrap.rank{r}.json").read_text()) for r in (0, 1)]
    assert [(r["distributed"]["launcher"], r["distributed"]["rank"], r["distributed"]["world_size"],
             r["job"]["status"]) for r in reports] == [("torchrun", 0, 2, "completed"), ("torchrun", 1, 2, "completed")]
    assert trained_as_one(reports)


def test_submitit_local_two_tasks_per_job(tmp_path):
    sweep_dir = tmp_path / "sweep"
    proc = run([sys.executable, str(STUB), "-m", "hydra/launcher=submitit_local", "hydra.launcher.tasks_per_node=2",
                "hydra.launcher.timeout_min=5", "env.threads.intra_op=1,2", "train.steps=10",
                f"hydra.sweep.dir={sweep_dir}"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for job in ("0", "1"):
        reports = [json.loads((sweep_dir / job / f"bootstrap.rank{r}.json").read_text()) for r in (0, 1)]
        assert [(r["distributed"]["launcher"], r["distributed"]["world_size"], r["distributed"]["process_group"],
                 r["distributed"]["teardown"]) for r in reports] == [("submitit", 2, "created", "destroyed")] * 2
        assert trained_as_one(reports)
    rows = (sweep_dir / "sweep_summary.csv").read_text().splitlines()
    assert len(rows) == 3 and all(",completed," in row for row in rows[1:])
    assert {row.split(",")[3] for row in rows[1:]} == {"1", "2"}  # intra_op per job


def test_one_process_multirun_creates_and_tears_down_a_group_per_job(tmp_path):
    # Under torchrun every job of each rank's one-process sweep makes its group on the agent's one store, and torch
    # names every default group alike: the third job's group hung on the second's keys until each job's group got
    # its own (bootstrap.core.agreement).
    sweep_dir = tmp_path / "sweep"
    proc = run([*TORCHRUN, str(STUB), "-m", "env.seed=1,2,3", "train.steps=2", f"hydra.sweep.dir={sweep_dir}"],
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "already initialized" not in proc.stderr
    reports = [json.loads((sweep_dir / job / f"bootstrap.rank{rank}.json").read_text())
               for job in ("0", "1", "2") for rank in (0, 1)]
    assert [(r["distributed"]["process_group"], r["distributed"]["teardown"], r["job"]["status"]) for r in reports] \
        == [("created", "destroyed", "completed")] * 6  # made, then torn down, in every job
    assert [r["seed"]["value"] for r in reports] == [1, 1, 2, 2, 3, 3]


def test_a_failing_rank_does_not_hang_the_others(tmp_path):
    app_dir = tmp_path / "app"
    shutil.copytree(APP, app_dir)
    timeout_s = 20
    started = time.monotonic()
    proc = run([*TORCHRUN, str(app_dir / "app.py"), "fail_rank=1", f"env.distributed.timeout_s={timeout_s}"],
               cwd=app_dir, timeout=timeout_s + 60)
    elapsed = time.monotonic() - started
    assert proc.returncode != 0
    assert elapsed < timeout_s + 30
    root_cause = proc.stderr.split("Root Cause (first observed failure):", 1)[1]
    assert "rank      : 1 (local_rank: 1)" in root_cause  # torchrun's summary names the rank that raised
    assert "rank 1 failed: RuntimeError: rank 1 failed on purpose" in root_cause
    (run_dir,) = [p for p in (app_dir / "outputs").glob("*/*") if p.is_dir()]
    reports = [json.loads((run_dir / f"bootstrap.rank{r}.json").read_text())["job"] for r in (0, 1)]
    assert [job["status"] for job in reports] == ["failed", "failed"]
    assert "because rank 1 failed first" in reports[0]["error"]


def test_a_mesh_that_does_not_fit_the_world_fails_clearly(tmp_path):
    proc = run([*TORCHRUN, str(STUB), "train.steps=2", "env.distributed.mesh={dp:3}"], cwd=tmp_path, timeout=120)
    assert proc.returncode != 0
    assert "env.distributed.mesh: dp(3) = 3 != WORLD_SIZE(2)" in proc.stderr
    # The only traceback is torchrun's own report; the ranks print the message alone.
    assert proc.stderr.count("Traceback") == 1 and "ChildFailedError" in proc.stderr
    assert "traceback : Error: env.distributed.mesh" in proc.stderr  # and torchrun's summary quotes it


def test_the_group_vocabulary_comes_without_torch():
    # GroupState and Teardown sit with the process group that makes them (distributed/ is below core/);
    # the report and the sweep summary read them from there and must still start without torch.
    code = ("import sys; import bootstrap.core.report, bootstrap.sweep.summary; "
            "from bootstrap.distributed.group import GroupState, Teardown; "
            "print(GroupState.CREATED, Teardown.LEFT, 'torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), timeout=60)
    assert proc.stdout.split() == ["created", "left", "False"], proc.stderr[-2000:]
