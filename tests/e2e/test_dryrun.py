"""``bootstrap dryrun`` tells the truth: what it predicts for every rank equals what real runs report, field by
field, rank by rank (torchrun 2 x 2 on one host; Lightning DDP with 2 processes), and submitit's own
``JobEnvironment()`` reads a rank's variables as the dry run does."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, STUB, clean_env, free_port, run_together

from bootstrap.dryrun.world import compare

BIN = Path(sys.executable).parent
TIMEOUT = 240
CPUS = len(os.sched_getaffinity(0))  # what each real rank's node offers it


def _dryrun(tmp_path: Path, *args: str, code: int = 0) -> dict:
    out = tmp_path / "dryrun"
    done = subprocess.run([str(BIN / "bootstrap"), "dryrun", "--out", str(out), "--cpus-per-node", str(CPUS), *args],
                          cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == code, done.stdout + done.stderr
    return json.loads((out / "dryrun.json").read_text())


def _assert_predicted(predicted: dict, reports: dict, run_dir: Path) -> None:
    entries = {entry["distributed"]["rank"]: entry for entry in predicted["ranks"]}
    assert sorted(entries) == sorted(reports)
    for rank, report in reports.items():
        assert compare(entries[rank], report, str(run_dir), predicted["summary"]["fingerprints"]) == [], rank


def test_torchrun_two_nodes_of_two_ranks_on_one_host_as_predicted(tmp_path):
    overrides = ["train.steps=2", "env.threads.intra_op=1"]
    agent = [str(BIN / "torchrun"), "--nnodes=2", "--nproc_per_node=2", "--rdzv-backend=c10d",
             f"--rdzv-endpoint=127.0.0.1:{free_port()}", "--rdzv-id=dryrun2", "--local-addr=127.0.0.1", str(STUB),
             *overrides]
    for code, _out, err in run_together([agent, agent], tmp_path, [clean_env()] * 2, TIMEOUT):
        assert code == 0, err[-3000:]
    (run_dir,) = {p.parent for p in (tmp_path / "outputs").glob("*/*/bootstrap.rank0.json")}
    reports = {rank: json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text()) for rank in range(4)}
    predicted = _dryrun(tmp_path, "--world", "4", "--nodes", "2", "--launcher", "torchrun",
                        "--config-path", str(ROOT / "conf"), "--config-name", "config", *overrides)
    _assert_predicted(predicted, reports, run_dir)
    assert {r["distributed"]["node_rank"] for r in reports.values()} == {0, 1}  # two nodes, really


def test_lightning_ddp_two_processes_as_predicted(tmp_path):
    pytest.importorskip("lightning", reason="the lightning extra runs this test")
    app = ROOT / "tests" / "lightning_app" / "app.py"
    run_dir = tmp_path / "run"
    overrides = ["+env=cpu_debug", "trainer.strategy=ddp", "trainer.devices=2"]
    (result,) = run_together([[sys.executable, str(app), f"hydra.run.dir={run_dir}", "hydra/callbacks=bootstrap",
                               *overrides]], tmp_path, [clean_env()], TIMEOUT)
    assert result[0] == 0, result[2][-3000:]
    reports = {0: json.loads((run_dir / "bootstrap.json").read_text()),
               1: json.loads((run_dir / "bootstrap.rank1.json").read_text())}
    predicted = _dryrun(tmp_path, "--world", "2", "--launcher", "lightning", "--config-path",
                        str(app.parent / "conf"), "--config-name", "train", *overrides, code=1)
    # rank 0 plans as one process, with every CPU, before Lightning starts rank 1: true, and found
    assert [f["kind"] for f in predicted["summary"]["findings"]] == ["threads"]
    # rank 0 is rank 0 of Lightning's world once the world exists, its report says at the job's end (issue 45)
    assert [reports[r]["distributed"]["launcher"] for r in (0, 1)] == ["lightning", "lightning"]
    _assert_predicted(predicted, reports, run_dir)


def test_submitit_reads_a_ranks_variables_as_the_dry_run_does(tmp_path):
    """submitit.JobEnvironment() in a process whose environment is a dry-run rank's (no scontrol here)."""
    pytest.importorskip("submitit", reason="the submitit launcher's extra runs this test")
    from bootstrap.distributed import rankvars

    layout = rankvars.Layout("submitit", 3, 4, ("gpu007", "gpu008", "gpu010"), job_id="777")
    environ = rankvars.rank_vars(layout, 9)
    script = ("import json, submitit; j = submitit.JobEnvironment(); print(json.dumps([j.job_id, j.global_rank, "
              "j.local_rank, j.num_tasks, j.num_nodes, list(j.hostnames), j.node]))")
    done = subprocess.run([sys.executable, "-c", script], env={**clean_env(), **environ}, capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    job = rankvars.submitit_answer(environ, list(layout.hosts))
    assert job is not None
    assert json.loads(done.stdout) == [job.job_id, job.global_rank, job.local_rank, job.num_tasks, job.num_nodes,
                                       list(job.hostnames), job.node] == ["777", 9, 1, 12, 3, list(layout.hosts), 2]
