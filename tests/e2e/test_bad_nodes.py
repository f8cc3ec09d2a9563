"""Bad nodes under real torchrun (issue 39): a rank made slow for real (tests/preflight_app/pinned.sh: taskset and
busy loops on its core) is named, its node recorded in bad_nodes.jsonl, exclude.txt and the shared exclusion
file; the next job on that host stops before the process group, naming the entry; env.nodes.ignore overrides it.
And two processes appending to one shared file at once lose nothing."""

import json
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import clean_env, cores

pytestmark = pytest.mark.e2e

APP_DIR = Path(__file__).parents[1] / "preflight_app"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--no-python",
            str(APP_DIR / "pinned.sh"), sys.executable, str(APP_DIR / "app.py")]
SLOW = "8"  # busy loops on rank 1's core: 8x to 15x slower (tests/e2e/test_preflight.py)


def _torchrun(tmp_path, run: str, *overrides, loops="0"):
    run_dir = tmp_path / run
    with cores():  # the ranks are timed against each other: no other test meanwhile
        proc = subprocess.run([*TORCHRUN, f"hydra.run.dir={run_dir}", "env.threads.intra_op=1",
                               "env.preflight.max_skew=3", "env.preflight.mode=error",
                               f"env.nodes.exclude_file={tmp_path / 'shared' / 'bad_nodes.jsonl'}", *overrides],
                              capture_output=True, text=True, cwd=tmp_path, env=clean_env(BUSY_LOOPS=loops),
                              timeout=300)
    reports = [json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text()) for rank in (0, 1)]
    return proc, reports, run_dir


def test_a_slow_rank_names_its_node_and_the_next_job_on_it_stops_before_the_group(tmp_path):
    host = socket.gethostname()
    (tmp_path / "shared").mkdir()
    proc, reports, run_dir = _torchrun(tmp_path, "slow", loops=SLOW)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "trained with" not in output, output[-3000:]
    assert f"bad nodes: {host} (exclude.txt in the job's directory)" in output
    for report in reports:
        check = report["preflight"]
        assert [(b["node"], b["reason"], b["ranks"]) for b in check["bad_nodes"]] == [(host, "slow", [1])]
        assert check["on_bad"] == "stopped" and report["job"]["status"] == "check_failed"
    (record,) = [json.loads(line) for line in (run_dir / "bad_nodes.jsonl").read_text().splitlines()]
    assert (record["type"], record["node"], record["reason"], record["ranks"]) == ("observation", host, "slow", [1])
    assert record["figures"][0]["rank"] == 1 and record["against"]["max_skew"] == 3
    # the verdict compares a rank with the *other* ranks' median (with 2 ranks: the other rank), which its message
    # states; against.median_tflops is the world's median, the slow rank included
    assert float(re.search(r"is ([0-9.]+)x slower than the other ranks' median", record["message"]).group(1)) > 3
    assert record["figures"][0]["tflops"] < record["against"]["median_tflops"]
    assert (run_dir / "exclude.txt").read_text() == f"{host}\n"
    shared = [json.loads(line) for line in (tmp_path / "shared" / "bad_nodes.jsonl").read_text().splitlines()]
    assert [entry["node"] for entry in shared] == [host]  # rank 0 alone appended

    again, reports, _ = _torchrun(tmp_path, "listed")
    output = again.stdout + again.stderr
    assert again.returncode != 0 and "trained with" not in output
    assert f"Error: env.nodes.exclude_file lists this host {host}: slow at {record['observed_at']}" in output
    for report in reports:
        assert report["job"]["status"] == "check_failed" and report["distributed"]["process_group"] == "none"
        assert report["preflight"] is None or report["preflight"]["status"] == "skipped"

    ignored, reports, _ = _torchrun(tmp_path, "ignored", f"env.nodes.ignore=[{host}]")
    assert ignored.returncode == 0, (ignored.stdout + ignored.stderr)[-3000:]
    assert {r["job"]["status"] for r in reports} == {"completed"}


WRITER = textwrap.dedent("""\
    import sys
    from datetime import datetime, timezone
    from pathlib import Path
    from bootstrap.core import nodes
    from bootstrap.distributed import badnodes
    now = datetime.now(timezone.utc)
    stamp = badnodes.stamp(now)
    for i in range(int(sys.argv[3])):
        entry = badnodes.Entry(f"{sys.argv[2]}n{i}", "slow", stamp, stamp.replace(stamp[:4], str(int(stamp[:4]) + 1)))
        failed = nodes.append_shared(Path(sys.argv[1]), [entry.to_json()], now, 24, 60)
        assert failed is None, failed
    """)


def test_two_jobs_appending_at_once_lose_nothing(tmp_path):
    shared, each = tmp_path / "bad_nodes.jsonl", 40
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(shared), name, str(each)], env=clean_env())
               for name in ("a", "b")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    nodes = [json.loads(line)["node"] for line in shared.read_text().splitlines()]
    assert sorted(nodes) == sorted(f"{name}n{i}" for name in "ab" for i in range(each))
    assert [n for n in nodes if n.startswith("a")] == [f"an{i}" for i in range(each)]  # each writer's order kept


def test_a_job_whose_exclusions_cannot_be_read_is_stopped_not_requeued(tmp_path, monkeypatch):
    # `scontrol update ExcNodeList=` replaces the job's list: without it, a requeue would drop the user's own
    # --exclude. No scontrol on PATH is the real failure show_job meets when SLURM's tools are missing.
    from bootstrap.core import nodes, schema
    from bootstrap.doors import records
    from bootstrap.doors.errors import PreflightError, RequeuedError

    monkeypatch.setenv("PATH", str(tmp_path))
    preset = schema.load({"nodes": {"on_bad": "requeue"}, "distributed": {"timeout_s": 5},
                          "provenance": {"seconds": 5}})
    checked = records.Preflight(status="slow")
    error = nodes._requeue(preset, checked, "preflight: node node3 is slow", ["node3"], "slow", "env", [], "12")
    assert isinstance(error, PreflightError) and not isinstance(error, RequeuedError)
    assert "`scontrol show job -o 12` gave no answer" in str(error) and "--exclude=node3" in str(error)
    assert checked.on_bad == "stopped (the job's ExcNodeList could not be read)"
