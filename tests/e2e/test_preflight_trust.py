"""The preflight under real torchrun (2 ranks on CPU, gloo) when a peer sends what no measurement gives, when the
sizes do not fit the budget, and the links between torchrun nodes on one machine (issues 37 and 38).

Rank 1 sends crafted bytes through the package's own collectives: tests/preflight_app/crafted.py, told what to
send by ``CRAFTED_RECORD`` (a variable only that test app reads). Every case must end in one clean ``Error:`` line
on every rank, naming rank 1, and rank 0's report, never a gloo abort (exit 134, ``op.preamble.length``)."""
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import STUB, clean_env
from e2e.test_engines import BIN, free_port, one_run_dir, reports, run_all
from e2e.test_preflight import APP_DIR, _torchrun

GB = 2**30


PEAK_RSS = Path(__file__).parents[1] / "peak_rss.py"


def _peak_rss(tmp_path: Path) -> tuple:
    """A command prefix that runs a job under tests/peak_rss.py, and the file its peak resident set lands in."""
    out = tmp_path / "peak_rss"
    return (sys.executable, str(PEAK_RSS), str(out)), out


@pytest.mark.parametrize("craft, kind, said", [
    ("nan", "invalid", "rank 1 ({host}) sent tflops=nan (not a number)"),
    ("inf", "invalid", "rank 1 ({host}) sent tflops=inf (not a number)"),
    ("zero", "invalid", "rank 1 ({host}) sent tflops=0 (a measured figure is above 0)"),
    ("long", "invalid", "rank 1 ({host}) sends record version 2 of 123 bytes, and this rank version 2 of 115 bytes"),
    ("version", "invalid", "rank 1 ({host}) sends record version 3 of 115 bytes, and this rank version 2 of 115 bytes"),
    ("v1", "invalid", "rank 1 (?) sent no header this version knows"),
    ("wrong", "faulty", "rank 1 ({host}): a wrong answer in a matmul checked against float64"),
])
def test_a_crafted_record_is_one_clean_finding_on_every_rank(tmp_path, craft, kind, said):
    ledger = tmp_path / "shared" / "bad_nodes.jsonl"
    ledger.parent.mkdir()
    proc, runs, _ = _torchrun(tmp_path, "env.preflight.mode=error", "env.preflight.min_tflops=0.000001",
                              f"env.nodes.exclude_file={ledger}", script=APP_DIR / "crafted.py", CRAFTED_RECORD=craft)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "trained with" not in output, output[-3000:]
    # each rank left with its Error: line (1), or was stopped by torchrun once the other had (SIGTERM: -15, or 143
    # through pinned.sh); none aborted inside gloo (SIGABRT: -6, or 134 through a shell)
    codes = set(re.findall(r"exitcode\s*: (-?\d+)", output))
    assert "1" in codes and codes <= {"1", "-15", "143"}, output[-3000:]
    assert "op.preamble" not in output and "terminate called" not in output, output[-3000:]
    host = next(rank["host"] for rank in runs[0]["preflight"]["ranks"] if rank["rank"] == 0)  # one machine
    for report in runs:  # rank 0's report first: it is always written
        check = report["preflight"]
        assert report["job"]["status"] == "check_failed" and check["status"] == "faulty", check
        (finding,) = check["findings"]
        assert (finding["kind"], finding["ranks"]) == (kind, [1])
        assert finding["message"].startswith(said.format(host=host)), finding["message"]
        # figures no measurement gives, or a wrong answer: hard evidence, its node excluded at once; a peer of another
        # version sent no figures (only its header): it names no node (a build to fix, not a node to keep out)
        named = [(b["node"], b["evidence"], b["excluded"]) for b in check["bad_nodes"]]
        assert named == ([] if craft in ("long", "version", "v1") else [(host, "hard", True)]), check
    assert output.count(f"Error: preflight: {said.format(host=host)}") >= 2  # one line from each rank
    if craft in ("nan", "wrong"):  # the ledger: the next job on this node stops before its group
        assert (tmp_path / "run" / "exclude.txt").read_text() == f"{host}\n"
        from bootstrap.core import nodes, schema

        preset = schema.load({"nodes": {"exclude_file": str(ledger)}})
        refusal = nodes.at_start(preset, "env", [], host)
        assert refusal is not None and f"this node {host} is excluded: {kind} in job " in refusal.message


def test_under_warn_a_crafted_record_is_recorded_and_the_job_trains(tmp_path):
    proc, runs, _ = _torchrun(tmp_path, "env.preflight.mode=warn", script=APP_DIR / "crafted.py",
                              CRAFTED_RECORD="long")
    assert proc.returncode == 0 and "trained with 2 ranks" in proc.stdout + proc.stderr, proc.stderr[-3000:]
    assert [r["preflight"]["findings"][0]["kind"] for r in runs] == ["invalid", "invalid"]


def test_a_size_no_cpu_could_all_reduce_in_the_budget_is_refused_before_anything_is_allocated(tmp_path):
    prefix, peak = _peak_rss(tmp_path)
    started = time.monotonic()
    proc = subprocess.run(
        [*prefix, sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(STUB),
         f"hydra.run.dir={tmp_path / 'run'}", "env.preflight.seconds=0.1", "env.preflight.sizes_mb=[4096]"],
        capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=120)
    took = time.monotonic() - started
    assert proc.returncode != 0 and "step 0" not in proc.stdout + proc.stderr
    assert "Error: env.preflight.sizes_mb=[4096.0] cannot be all_reduced 6 times each within " \
           "env.preflight.seconds=0.1" in proc.stderr, proc.stderr[-3000:]
    # the start-up of torchrun and two Pythons with torch and Hydra (about 10 s on this loaded machine), no more
    assert took < 40, took
    assert 0 < int(peak.read_text()) < 2 * GB  # no rank held 4 GB (two would be 8 GB on this machine)


def test_a_size_the_measured_speed_says_would_not_fit_is_skipped_by_every_rank_with_a_note(tmp_path):
    prefix, peak = _peak_rss(tmp_path)
    proc, runs, _ = _torchrun(tmp_path, "env.preflight.mode=error", "env.preflight.seconds=1",
                              "env.preflight.sizes_mb=[1,1024]", prefix=prefix)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    for report in runs:
        check = report["preflight"]
        assert [size["size_mb"] for size in check["collective"]] == [1.0] and check["status"] == "ok"
        assert "env.preflight.sizes_mb: 1024 MB not measured: its all_reduces would take " in check["note"]
        assert check["seconds"] < 1 + 0.5  # the budget, and the slack of one poll and the group's teardown
    assert 0 < int(peak.read_text()) < GB  # 1 GB was never allocated


def test_torchrun_nodes_measure_the_links_between_them_and_report_each(tmp_path, judged_cores):
    port = free_port()
    agent = [str(BIN / "torchrun"), "--nnodes=3", "--nproc_per_node=1", "--rdzv-backend=c10d",
             f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=preflight-links", "--local-addr=127.0.0.1",
             str(STUB), "train.steps=1", "env.threads.intra_op=1", "env.preflight.mode=error"]
    for code, _out, err in run_all([agent] * 3, tmp_path, [clean_env()] * 3):
        assert code == 0, err[-3000:]
    runs = reports(one_run_dir(tmp_path / "outputs"), 3)
    for report in runs:
        check = report["preflight"]
        assert check["status"] == "ok" and check["findings"] == []
        measured = check["links"]
        assert sorted(link["ranks"] for link in measured) == [[0, 1], [1, 2], [2, 0]], measured
        assert all(0 < link["gbps"] < 1000 for link in measured), measured
    assert runs[0]["preflight"]["links"] == runs[2]["preflight"]["links"]  # every rank judged the same bytes
