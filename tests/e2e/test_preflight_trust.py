"""The preflight under real torchrun (2 ranks on CPU, gloo) when a peer sends what no measurement gives, when the
sizes do not fit the budget, and the links between torchrun nodes on one machine (issues 37 and 38).

Rank 1 sends crafted bytes through the package's own collectives: tests/preflight_app/crafted.py, told what to
send by the job's ``+craft=NAME`` (an override only that test app reads). Every craft is one finding naming rank
1 on every rank, never a gloo abort (exit 134, ``op.preamble.length``): all of them in one torchrun world, one job
each, under warn (the group still trains after each); under error, one clean ``Error:`` line on every rank, and
rank 0's report."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import STUB, clean_env
from cpu_groups import rank_groups
from e2e.test_engines import BIN, free_port, one_run_dir, reports, run_all
from e2e.test_preflight import APP_DIR, TORCHRUN, UNJUDGED_SECONDS, UNJUDGED_SKEW, _torchrun

GB = 2**30


PEAK_RSS = Path(__file__).parents[1] / "peak_rss.py"


def _peak_rss(tmp_path: Path) -> tuple:
    """A command prefix that runs a job under tests/peak_rss.py, and the file its peak resident set lands in."""
    out = tmp_path / "peak_rss"
    return (sys.executable, str(PEAK_RSS), str(out)), out


CRAFTS = {  # craft: (the finding's kind, its message)
    "nan": ("invalid", "rank 1 ({host}) sent tflops=nan (not a number)"),
    "inf": ("invalid", "rank 1 ({host}) sent tflops=inf (not a number)"),
    "zero": ("invalid", "rank 1 ({host}) sent tflops=0 (a measured figure is above 0)"),
    "long": ("invalid", "rank 1 ({host}) sends record version 2 of 123 bytes, and this rank version 2 of 115 bytes"),
    "version": ("invalid", "rank 1 ({host}) sends record version 3 of 115 bytes, and this rank version 2 of 115 bytes"),
    "v1": ("invalid", "rank 1 (?) sent no header this version knows"),
    "wrong": ("faulty", "rank 1 ({host}): a wrong answer in a matmul checked against float64"),
}
NO_FIGURES = ("long", "version", "v1")  # a peer of another version sent only its header: it names no node


def _no_abort(output: str) -> None:
    """No rank aborted inside gloo (SIGABRT: -6, or 134 through a shell; ``op.preamble.length``)."""
    codes = set(re.findall(r"exitcode\s*: (-?\d+)", output))
    assert not codes & {"-6", "134"} and "op.preamble" not in output and "terminate called" not in output, \
        output[-3000:]


@pytest.fixture(scope="module")
def crafted_sweep(tmp_path_factory):
    """One torchrun world, one job per craft (a one-process multirun on each rank: every job makes its own group
    and checks again), under warn: each crafted record is judged, and the group still trains after it. Each job
    keeps its own bad-node ledger (in its own directory), so that one job's hard evidence keeps no later job of the
    sweep off this machine."""
    tmp_path = tmp_path_factory.mktemp("crafted")
    sweep = tmp_path / "sweep"
    with rank_groups(tmp_path.name) as groups:  # pinned.sh's
        proc = subprocess.run([*TORCHRUN, str(APP_DIR / "crafted.py"), "-m", f"+craft={','.join(CRAFTS)}",
                               f"hydra.sweep.dir={sweep}", "env.threads.intra_op=1", "env.preflight.mode=warn",
                               f"env.preflight.max_skew={UNJUDGED_SKEW}", f"env.preflight.seconds={UNJUDGED_SECONDS}",
                               "env.preflight.min_tflops=0.000001",
                               "env.nodes.exclude_file=${hydra:runtime.output_dir}/ledger.jsonl"],
                              capture_output=True, text=True, cwd=tmp_path, env=clean_env(RANK_GROUPS=str(groups)),
                              timeout=300)
    jobs = {}
    for job in sorted(p for p in sweep.iterdir() if p.is_dir()):
        overrides = (job / ".hydra" / "overrides.yaml").read_text()
        craft = next(name for name in CRAFTS if f"+craft={name}" in overrides)
        jobs[craft] = [json.loads((job / f"bootstrap.rank{rank}.json").read_text()) for rank in (0, 1)], job
    return proc, jobs


@pytest.mark.parametrize("craft", list(CRAFTS))
def test_a_crafted_record_is_one_clean_finding_on_every_rank(crafted_sweep, craft):
    proc, jobs = crafted_sweep
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and sorted(jobs) == sorted(CRAFTS), output[-3000:]
    _no_abort(output)
    runs, job = jobs[craft]
    host = next(rank["host"] for rank in runs[0]["preflight"]["ranks"] if rank["rank"] == 0)  # one machine
    kind, said = CRAFTS[craft][0], CRAFTS[craft][1].format(host=host)
    for report in runs:  # every rank judged the same bytes, and the job trained on: the group survived the craft
        check = report["preflight"]
        assert (report["job"]["status"], check["status"]) == ("completed", "faulty"), check
        (finding,) = check["findings"]
        assert (finding["kind"], finding["ranks"]) == (kind, [1])
        assert finding["message"].startswith(said), finding["message"]
        assert f"preflight: {finding['message']}" in report["warnings"]
        # figures no measurement gives, or a wrong answer: hard evidence, under warn as under error, its node
        # excluded at once; a peer of another version sent no figures: it names no node (a build to fix)
        named = [(b["node"], b["evidence"], b["excluded"]) for b in check["bad_nodes"]]
        assert named == ([] if craft in NO_FIGURES else [(host, "hard", True)]), check
    if craft not in NO_FIGURES:  # the ledger: the next job on this node stops before its group
        assert (job / "exclude.txt").read_text() == f"{host}\n"
        from bootstrap.core import nodes, schema

        preset = schema.load({"nodes": {"exclude_file": str(job / "ledger.jsonl")}})
        refusal = nodes.at_start(preset, "env", [], host)
        assert refusal is not None and f"this node {host} is excluded: {kind} in job " in refusal.message


def test_under_error_a_crafted_record_stops_every_rank_with_one_clean_line(tmp_path):
    proc, runs = _torchrun(tmp_path, "env.preflight.mode=error", "+craft=long",
                           f"env.preflight.seconds={UNJUDGED_SECONDS}", script=APP_DIR / "crafted.py")
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "trained with" not in output, output[-3000:]
    # each rank left with its Error: line (1), or was stopped by torchrun once the other had (SIGTERM: -15, or 143
    # through pinned.sh); none aborted inside gloo
    codes = set(re.findall(r"exitcode\s*: (-?\d+)", output))
    assert "1" in codes and codes <= {"1", "-15", "143"}, output[-3000:]
    _no_abort(output)
    host = next(rank["host"] for rank in runs[0]["preflight"]["ranks"] if rank["rank"] == 0)
    said = CRAFTS["long"][1].format(host=host)
    for report in runs:  # rank 0's report first: it is always written
        check = report["preflight"]
        assert report["job"]["status"] == "check_failed" and check["status"] == "faulty", check
        assert check["findings"][0]["message"].startswith(said)
    assert output.count(f"Error: preflight: {said}") >= 2  # one line from each rank


def test_a_size_no_cpu_could_all_reduce_in_the_budget_is_refused_before_anything_is_allocated(tmp_path):
    # Refused when the preset is validated, before any rank or group exists: one process shows it (a world's
    # ranks validate the same preset), and its peak memory shows the 4 GB were never allocated.
    prefix, peak = _peak_rss(tmp_path)
    proc = subprocess.run([*prefix, sys.executable, str(STUB), f"hydra.run.dir={tmp_path / 'run'}",
                           "env.preflight.seconds=0.1", "env.preflight.sizes_mb=[4096]"],
                          capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=120)
    assert proc.returncode != 0 and "step 0" not in proc.stdout + proc.stderr
    assert "Error: env.preflight.sizes_mb=[4096.0] cannot be all_reduced 6 times each within " \
           "env.preflight.seconds=0.1" in proc.stderr, proc.stderr[-3000:]
    assert 0 < int(peak.read_text()) < GB  # 4 GB never held


def test_a_size_the_measured_speed_says_would_not_fit_is_skipped_by_every_rank_with_a_note(tmp_path):
    prefix, peak = _peak_rss(tmp_path)
    proc, runs = _torchrun(tmp_path, "env.preflight.mode=error", "env.preflight.seconds=1",
                           "env.preflight.sizes_mb=[1,1024]", prefix=prefix)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    for report in runs:
        check = report["preflight"]
        assert [size["size_mb"] for size in check["collective"]] == [1.0] and check["status"] == "ok"
        assert "env.preflight.sizes_mb: 1024 MB not measured: its all_reduces would take " in check["note"]
    assert 0 < int(peak.read_text()) < GB  # 1 GB was never allocated


def test_torchrun_nodes_measure_the_links_between_them_and_report_each(tmp_path):
    port = free_port()
    agent = [str(BIN / "torchrun"), "--nnodes=3", "--nproc_per_node=1", "--rdzv-backend=c10d",
             f"--rdzv-endpoint=127.0.0.1:{port}", "--rdzv-id=preflight-links", "--local-addr=127.0.0.1",
             str(STUB), "train.steps=1", "env.threads.intra_op=1", "env.preflight.mode=error",
             f"env.preflight.max_skew={UNJUDGED_SKEW}", f"env.preflight.seconds={UNJUDGED_SECONDS}"]  # no speed judged
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
