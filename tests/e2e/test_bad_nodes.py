"""Bad nodes under real torchrun (issues 39 and 47): evidence before exclusion. A rank made slow for real
(tests/preflight_app/pinned.sh: busy loops in its CPU group) is observed; the first job's observation is soft
evidence that keeps its node in (that job, under warn, trains), the second job's excludes the node, named with both
jobs; the next job there stops before its process group naming them; ``bootstrap nodes`` lists, explains and clears
the node, written by those real jobs, and a cleared node runs again. Two processes adding to one ledger at once lose
nothing."""

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import clean_env, cores
from cpu_groups import rank_groups

pytestmark = pytest.mark.e2e

APP_DIR = Path(__file__).parents[1] / "preflight_app"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--no-python",
            str(APP_DIR / "pinned.sh"), sys.executable, str(APP_DIR / "app.py")]
SLOW = "8"  # busy loops in rank 1's CPU group: 9x slower (tests/e2e/test_preflight.py)


def _torchrun(tmp_path, run: str, *overrides, loops="0"):
    run_dir = tmp_path / run
    with cores(), rank_groups(f"{tmp_path.name}-{run}") as groups:  # timed against each other: no other test meanwhile
        proc = subprocess.run([*TORCHRUN, f"hydra.run.dir={run_dir}", "env.threads.intra_op=1",
                               "env.preflight.max_skew=3", f"env.nodes.exclude_file={_ledger(tmp_path)}", *overrides],
                              capture_output=True, text=True, cwd=tmp_path, timeout=300,
                              env=clean_env(BUSY_LOOPS=loops, RANK_GROUPS=str(groups)))
    reports = [json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text()) for rank in (0, 1)]
    return proc, reports, run_dir


def _ledger(tmp_path: Path) -> Path:
    return tmp_path / "shared" / "bad_nodes.jsonl"


def _nodes(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bootstrap", "nodes", *map(str, args)], capture_output=True,
                          text=True, env=clean_env(), timeout=120)


def _observed(run_dir: Path) -> list:
    return [json.loads(line) for line in (run_dir / "bad_nodes.jsonl").read_text().splitlines()]


def test_a_node_slowed_in_two_jobs_is_excluded_at_the_second_named_with_both_and_runs_again_once_cleared(tmp_path):
    host = socket.gethostname()
    _ledger(tmp_path).parent.mkdir()

    # job 1, under warn: it trains; its observation is soft evidence, recorded everywhere, and excludes nothing
    first, reports, run_dir = _torchrun(tmp_path, "first", "env.preflight.mode=warn", loops=SLOW)
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    for report in reports:
        check = report["preflight"]
        assert [(b["node"], b["reason"], b["ranks"], b["evidence"], b["excluded"]) for b in check["bad_nodes"]] == \
            [(host, "slow", [1], "soft", False)], check
        assert check["on_bad"] == "recorded" and report["job"]["status"] == "completed"
    (one,) = _observed(run_dir)
    assert (one["type"], one["node"], one["reason"], one["evidence"]) == ("observation", host, "slow", "soft")
    assert not (run_dir / "exclude.txt").exists()

    # job 2, under error: it stops; with job 1's, its observation excludes the node, named with both jobs
    second, reports, run_dir = _torchrun(tmp_path, "second", "env.preflight.mode=error", loops=SLOW)
    output = second.stdout + second.stderr
    assert second.returncode != 0 and "trained with" not in output, output[-3000:]
    (two,) = _observed(run_dir)
    jobs = f"({one['job_id']}, {two['job_id']})"
    assert one["job_id"] != two["job_id"]
    assert f"bad nodes: {host} excluded: slow in 2 jobs {jobs} in the last 1 h (exclude.txt in the job's " \
           "directory)" in output
    assert (run_dir / "exclude.txt").read_text() == f"{host}\n"
    for report in reports:
        assert [(b["node"], b["excluded"]) for b in report["preflight"]["bad_nodes"]] == [(host, True)]
        assert report["preflight"]["on_bad"] == "stopped" and report["job"]["status"] == "check_failed"
    # the verdict compares a rank with the *other* ranks' median, which its message states, and so does the entry
    assert two["against"]["others_median_tflops"] == two["figures"][0]["others_median_tflops"]
    assert two["figures"][0]["tflops"] * 3 < two["against"]["others_median_tflops"]
    assert f"against {two['against']['others_median_tflops']:.3g})" in two["message"]
    assert [entry["job_id"] for entry in map(json.loads, _ledger(tmp_path).read_text().splitlines())] == \
        [one["job_id"], two["job_id"]]  # rank 0 alone added each job's

    # job 3: stops before its process group, naming the evidence
    third, reports, _ = _torchrun(tmp_path, "third")
    output = third.stdout + third.stderr
    assert third.returncode != 0 and "trained with" not in output
    assert f"Error: env.nodes.exclude_file: this node {host} is excluded: slow in 2 jobs {jobs} in the last 1 h; " \
           "kept out until " in output, output[-3000:]
    for report in reports:
        assert report["job"]["status"] == "check_failed" and report["distributed"]["process_group"] == "none"

    # the person who runs the cluster: why the node is out, every observation, then the node cleared
    listed = _nodes(_ledger(tmp_path), "--json")
    assert listed.returncode == 0, listed.stderr
    (node,) = json.loads(listed.stdout)["nodes"]
    assert (node["node"], node["state"], node["jobs"], node["kinds"]) == \
        (host, "excluded", [one["job_id"], two["job_id"]], ["slow"])
    explained = _nodes(_ledger(tmp_path), "--explain", host)
    assert explained.stdout.count(": counts\n") == 2 and two["message"][:60] in explained.stdout
    cleared = _nodes(_ledger(tmp_path), "--clear", host, "--why", "the neighbour's loops were stopped")
    assert cleared.returncode == 0 and f"{host} cleared by " in cleared.stdout, cleared.stderr
    assert _nodes(_ledger(tmp_path), "--exclude-list").stdout == "\n"

    # job 4: the cleared node runs again
    fourth, reports, _ = _torchrun(tmp_path, "fourth")
    assert fourth.returncode == 0, (fourth.stdout + fourth.stderr)[-3000:]
    assert {r["job"]["status"] for r in reports} == {"completed"}


WRITER = textwrap.dedent("""\
    import sys
    from datetime import datetime, timedelta, timezone
    from pathlib import Path
    from bootstrap.core import nodes
    from bootstrap.distributed import ledger
    now = datetime.now(timezone.utc)
    for i in range(int(sys.argv[3])):
        seen = ledger.Observation(f"{sys.argv[2]}n{i}", "slow", ledger.stamp(now),
                                  ledger.stamp(now + timedelta(hours=24)), f"job{sys.argv[2]}{i}")
        failed = nodes.add(Path(sys.argv[1]), [seen.to_json()], now, ledger.Rule(), 60, "ledger")
        assert failed == [], failed
    """)


def test_two_jobs_adding_at_once_lose_nothing(tmp_path):
    shared, each = tmp_path / "bad_nodes.jsonl", 40
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(shared), name, str(each)], env=clean_env())
               for name in ("a", "b")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    names = [json.loads(line)["node"] for line in shared.read_text().splitlines()]
    assert sorted(names) == sorted(f"{name}n{i}" for name in "ab" for i in range(each))
    assert [n for n in names if n.startswith("a")] == [f"an{i}" for i in range(each)]  # each writer's order kept


def test_a_job_whose_exclusions_cannot_be_read_is_stopped_not_requeued(tmp_path, monkeypatch):
    # `scontrol update ExcNodeList=` replaces the job's list: without it, a requeue would drop the user's own
    # --exclude. No scontrol on PATH is the real failure show_job meets when SLURM's tools are missing.
    from bootstrap.core import nodes, schema
    from bootstrap.doors.errors import PreflightError, RequeuedError

    monkeypatch.setenv("PATH", str(tmp_path))
    preset = schema.load({"nodes": {"on_bad": "requeue"}, "distributed": {"timeout_s": 5},
                          "provenance": {"seconds": 5}})
    outcome = nodes.Outcome()
    error = nodes._requeue(preset, outcome, "preflight: node node3 is slow", ["node3"], "slow", "env", [], ("12", 0))
    assert isinstance(error, PreflightError) and not isinstance(error, RequeuedError)
    assert "`scontrol show job -o 12` gave no answer" in str(error) and "--exclude=node3" in str(error)
    assert outcome.on_bad == "stopped (the job's ExcNodeList could not be read)"
