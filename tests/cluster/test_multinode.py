"""The multi-node promises on a real network: three nodes with their own hostnames, each rank's traffic over
its node's veth, launched by torchrun (c10d rendezvous, one agent per node) and by a real ``srun``.

- one run directory for every node's ranks, each rank's files naming its host; provenance: one node has an extra
  package, and ``bootstrap diff`` and the sweep summary name it (one healthy job per launcher shows both);
- drift: one node exports another NCCL_ALGO, and the job stops naming that node's rank and host;
- a node cut off mid-job: the others stop within ``env.distributed.timeout_s`` (plus the flight recorder's
  wait for the peers' dumps), their reports name the node's rank absent, and ``bootstrap hang`` names it.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster import jobs
from conftest import STUB, clean_env

SMALL = ("train.steps=10", "train.hidden=64", "train.batch_size=32", "train.log_every=5")
LAUNCHERS = ("torchrun", "srun")


def launch(request, cluster, launcher: str, script, work: Path, **kwargs):
    if launcher == "torchrun":
        return jobs.torchrun(cluster, script, work=work, env=clean_env(), **kwargs)
    return jobs.srun(request.getfixturevalue("slurm"), script, work=work, env=clean_env(), **kwargs)


def stub(run_dir: Path, *overrides: str) -> list:
    return [sys.executable, str(STUB), f"hydra.run.dir={run_dir}", *overrides]


@pytest.fixture(scope="module", params=LAUNCHERS)
def healthy(request, cluster, tmp_path_factory):
    """One job on the three nodes per launcher, read by the tests below: it trains, and node3 has one more package
    than the others (its PYTHONPATH holds an extra distribution), which the ranks' agreement only warns of.
    (launcher, work directory, run directory, what each node's launch printed)."""
    launcher, work = request.param, tmp_path_factory.mktemp(f"healthy-{request.param}")
    site = work / "site" / "fakepkg-1.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: fakepkg\nVersion: 1.0\n")
    run_dir = work / "sweep" / "run"
    finished = launch(request, cluster, launcher, stub(run_dir, *SMALL, "env.distributed.agree=warn"), work,
                      exports={"node3": {"PYTHONPATH": str(site.parent)}})
    return launcher, work, run_dir, finished


def test_ranks_on_three_nodes_share_one_run_directory_and_each_names_its_host(healthy):
    launcher, _, run_dir, finished = healthy
    assert all(f.returncode == 0 for f in finished), "\n".join(f.output[-3000:] for f in finished)
    reports = jobs.rank_reports(run_dir, 3)
    assert [r["distributed"]["launcher"] for r in reports] == [{"torchrun": "torchrun", "srun": "slurm"}[launcher]] * 3
    assert [r["provenance"]["host"] for r in reports] == ["node1", "node2", "node3"]
    assert [r["distributed"]["node_rank"] for r in reports] == [0, 1, 2]
    assert [r["distributed"]["agreement"]["host"] for r in reports] == ["node1", "node2", "node3"]
    assert {r["job"]["status"] for r in reports} == {"completed"}
    # every node's files are in the one directory, one set per rank
    for rank in range(3):
        assert (run_dir / f"packages.rank{rank}.txt").exists()
    assert (run_dir / "train_stub.log").exists() and (run_dir / "train_stub.rank2.log").exists()


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_node_that_exports_another_nccl_algo_stops_the_job_naming_its_rank_and_host(request, cluster,
                                                                                    launcher, tmp_path):
    run_dir = tmp_path / "run"
    finished = launch(request, cluster, launcher, stub(run_dir, *SMALL), tmp_path,
                      exports={"node2": {"NCCL_ALGO": "Tree"}})
    assert all(f.returncode != 0 for f in finished)
    reports = jobs.rank_reports(run_dir, 3)
    assert {r["job"]["status"] for r in reports} == {"check_failed"}
    for r in reports:
        assert "odd one out: rank 1 (node2)" in r["job"]["error"]
        assert "NCCL_ALGO=Tree" in r["job"]["error"]
        (difference,) = r["distributed"]["agreement"]["differences"]
        assert difference["name"] == "var.NCCL_ALGO"
        odd = [v for v in difference["values"] if v["value"] == "Tree"]
        assert odd == [{"value": "Tree", "ranks": [1], "hosts": ["node2"], "others": 0}]
    # the ranks print no C++ frames (torchrun's agents may, closing their rendezvous: jobs._log_dir)
    output = "\n".join(f.ranks_output for f in finished)
    assert "odd one out: rank 1 (node2)" in output and "frame #0" not in output, output[-4000:]


def test_a_node_with_an_extra_package_is_named_by_diff_and_the_summary(healthy):
    _, work, run_dir, finished = healthy
    assert all(f.returncode == 0 for f in finished), "\n".join(f.output[-3000:] for f in finished)
    reports = jobs.rank_reports(run_dir, 3)
    assert "fakepkg==1.0" in (run_dir / "packages.rank2.txt").read_text().splitlines()
    assert "fakepkg==1.0" not in (run_dir / "packages.rank1.txt").read_text().splitlines()
    diff = subprocess.run([sys.executable, "-m", "bootstrap", "diff", str(run_dir), str(run_dir), "--rank", "2"],
                          capture_output=True, text=True, env=clean_env(), timeout=120)
    assert "packages differ from rank 0's on rank 2 (node3)" in diff.stdout, diff.stdout + diff.stderr
    summary = subprocess.run([sys.executable, "-m", "bootstrap", "summary", str(work / "sweep"), "--no-plot"],
                             capture_output=True, text=True, env=clean_env(), timeout=120)
    assert summary.returncode == 0, summary.stderr
    assert "- job run: rank 2 (node3)" in summary.stdout, summary.stdout
    assert reports[2]["provenance"]["packages"] == reports[0]["provenance"]["packages"] + 1


TIMEOUT_S = 20
DUMP_WAIT_S = 5  # the flight recorder's wait for the peers' dumps (bootstrap/distributed/flightrec.py PEERS_S)


@pytest.mark.slow  # about 60-80 s each on 2 busy cores: a real timeout, then the dumps' wait
@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_node_cut_off_mid_job_is_named_absent_and_the_others_stop_in_time(request, cluster, launcher, tmp_path):
    run_dir = tmp_path / "run"
    cut_node = cluster.nodes[2]
    timing = {}

    def cut_when_training(processes):
        deadline = time.monotonic() + 180
        while not all("step 5 " in _read(run_dir / name) for name in LOGS):
            assert time.monotonic() < deadline, "the ranks never trained"
            assert all(p.poll() is None for p in processes.values()), "the job ended before the cut"
            time.sleep(0.2)
        cluster.cut(cut_node)
        cut_at = time.monotonic()
        try:
            while not all(_status(run_dir, rank) not in (None, "running") for rank in (0, 1)):
                assert time.monotonic() - cut_at < TIMEOUT_S + DUMP_WAIT_S + 60, "ranks 0 and 1 never stopped"
                time.sleep(0.2)
            timing["stopped_s"] = time.monotonic() - cut_at
            # the forensics while the node is still cut off (once mended, its rank may still write its dump)
            timing["hang"] = subprocess.run([sys.executable, "-m", "bootstrap", "hang", str(run_dir)],
                                            capture_output=True, text=True, env=clean_env(), timeout=120)
        finally:
            cluster.mend(cut_node)
            # the cut node's rank waits in a TCPStore call that the kernel retries with growing back-off (minutes):
            # it is ended here, as the scheduler or the user would, so that srun returns
            for pid in cluster.pids_on(cut_node):
                if str(STUB) in _cmdline(pid):
                    os.kill(pid, signal.SIGKILL)

    launch(request, cluster, launcher, stub(run_dir, "train.steps=100000", "train.hidden=64", "train.batch_size=32",
                                            "train.log_every=5", f"env.distributed.timeout_s={TIMEOUT_S}"),
           tmp_path, during=cut_when_training, timeout=300)
    print(f"{launcher}: ranks 0 and 1 stopped {timing['stopped_s']:.1f} s after node3 was cut off")
    # gloo's timeout is the group's (env.distributed.timeout_s); the flight recorder then waits for dumps
    assert timing["stopped_s"] < TIMEOUT_S + DUMP_WAIT_S + 10
    reports = [json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text()) for rank in (0, 1)]
    # the first to time out (gloo's "Timed out waiting ... for recv") closes its connections: the other may read
    # "Connection closed by peer" first
    assert any("Timed out waiting" in report["job"]["error"] for report in reports), reports[0]["job"]["error"]
    for report in reports:
        assert report["job"]["status"] == "failed"
        assert report["distributed"]["hang"]["missing"] == "rank 2"
        assert "no dump from rank 2" in report["distributed"]["hang"]["finding"]
    hang = timing["hang"]
    assert "(dumps from ranks 0, 1)" in hang.stdout and "no dump from rank 2" in hang.stdout, hang.stdout + hang.stderr


LOGS = ("train_stub.log", "train_stub.rank1.log", "train_stub.rank2.log")


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return ""


def _status(run_dir: Path, rank: int):
    try:
        return json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text())["job"]["status"]
    except (OSError, ValueError, KeyError):
        return None
