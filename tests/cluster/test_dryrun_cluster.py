"""``bootstrap dryrun`` against the cluster on one machine: what it predicts for 3 nodes equals what the ranks
report, field by field, rank by rank, under a real ``srun`` and under torchrun across nodes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster import jobs
from conftest import ROOT, STUB, clean_env

from bootstrap.dryrun.world import compare

SMALL = ("train.steps=4", "train.hidden=64", "train.batch_size=32")
CPUS = len(os.sched_getaffinity(0))  # each node's ranks run on this machine's CPUs


@pytest.mark.parametrize("launcher", ("torchrun", "slurm"))
def test_three_nodes_run_as_the_dry_run_predicts(request, cluster, launcher, tmp_path):
    run_dir = tmp_path / "run"
    script = [sys.executable, str(STUB), f"hydra.run.dir={run_dir}", *SMALL]
    if launcher == "torchrun":
        finished = jobs.torchrun(cluster, script, work=tmp_path, env=clean_env())
    else:
        finished = jobs.srun(request.getfixturevalue("slurm"), script, work=tmp_path, env=clean_env())
    assert all(f.returncode == 0 for f in finished), "\n".join(f.output[-3000:] for f in finished)
    reports = jobs.rank_reports(run_dir, 3)
    out = tmp_path / "dryrun"
    done = subprocess.run([str(Path(sys.executable).parent / "bootstrap"), "dryrun", "--world", "3", "--nodes", "3",
                           "--launcher", launcher, "--nodelist", "node[1-3]", "--cpus-per-node", str(CPUS),
                           "--out", str(out), "--config-path", str(ROOT / "conf"), "--config-name", "config", *SMALL],
                          env=clean_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    predicted = json.loads((out / "dryrun.json").read_text())
    entries = {entry["distributed"]["rank"]: entry for entry in predicted["ranks"]}
    for rank, report in enumerate(reports):
        assert compare(entries[rank], report, str(run_dir), predicted["summary"]["fingerprints"]) == [], rank
