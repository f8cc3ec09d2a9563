"""The watch under real torchrun, 2 ranks of DDP on CPU (gloo), both on CPU 0 each in a CPU group of its own
(tests/preflight_app/pinned.sh, tests/cpu_groups.py; issue 48). One world proves both halves of the verdict: it
trains healthy for HEALTHY_WINDOWS windows under cpu_debug's thresholds (no finding), then rank 1 starts 3 busy
processes in its group, which share its budget of the CPU (its own work then takes 4x rank 0's, for real), and the
watch names it, while every rank's wall time a step stays the same.

The margins: cpu_debug names a rank whose own work takes twice the fastest rank's (threshold 0.5) for 3 windows in a
row; the slowed rank's takes about 4x (0.25); two healthy ranks on one CPU with equal budgets differ by noise
alone, which holding the cores (``cores()``) keeps well under 2x.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import STUB, clean_env, cores, end_listed
from cpu_groups import rank_groups

APP_DIR = Path(__file__).parents[1] / "watch_app"
PINNED = Path(__file__).parents[1] / "preflight_app" / "pinned.sh"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--no-python",
            str(PINNED), sys.executable]
HEALTHY_WINDOWS = 4
WINDOW_S = 2.0  # cpu_debug's
CONSECUTIVE = 3  # cpu_debug's


def _run(tmp_path, script, *overrides, timeout=300):
    """torchrun's 2 ranks through pinned.sh, with the cores held; the busy loops the app started ended by PID."""
    run_dir, pids = tmp_path / "run", tmp_path / "loops.pids"
    started = time.monotonic()
    with cores(), rank_groups(tmp_path.name) as groups:
        try:
            proc = subprocess.run([*TORCHRUN, str(script), f"hydra.run.dir={run_dir}", "env.threads.intra_op=1",
                                   *overrides], capture_output=True, text=True, cwd=tmp_path,
                                  env=clean_env(RANK_GROUPS=str(groups)), timeout=timeout)
        finally:
            end_listed(pids)
    reports = [json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text()) for rank in (0, 1)
               if (run_dir / f"bootstrap.rank{rank}.json").exists()]
    return proc, reports, time.monotonic() - started, run_dir


@pytest.fixture(scope="module")
def slowed(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("slowed")
    proc, reports, _, run_dir = _run(tmp_path, APP_DIR / "app.py", f"slow.after_s={HEALTHY_WINDOWS * WINDOW_S}",
                                     f"slow.pids={tmp_path / 'loops.pids'}", "slow.windows_after=1")
    assert proc.returncode == 0 and len(reports) == 2, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout + proc.stderr, reports, run_dir


def named(watch: dict) -> dict:
    """The first finding, checking that every finding names rank 1 alone and is of a kind a slow rank makes: ``slow``
    (relative: slower than the other) or ``slowed`` (individual: slower than it was). Rank 0's budget of the CPU is
    the same before and after, so nothing names it."""
    findings = watch["findings"]
    assert findings and all(f["ranks"] == [1] and f["kind"] in ("slow", "slowed") for f in findings), findings
    return findings[0]


def test_a_rank_slowed_mid_run_is_named_within_consecutive_plus_one_windows_while_every_step_takes_the_same_time(
        slowed):
    output, reports, _ = slowed
    watch = reports[0]["watch"]
    finding = named(watch)
    assert finding["hosts"] == [reports[1]["provenance"]["host"]]
    slowed_at = reports[1]["job"]["metrics"]["slowed_at_s"]
    slowed_window = int(slowed_at // WINDOW_S)
    windows = finding["window"] - slowed_window + 1  # the window it began in counts as one
    # the app's clock starts a step before the watch's, and a starved rank measures its window late: the window
    # before the one the slowing began in may already see it
    assert finding["since_window"] >= slowed_window - 1 and windows <= CONSECUTIVE + 1, (slowed_at, finding)
    kept = {w["window"]: {r["rank"]: r for r in w["ranks"]} for w in watch["kept"]}
    judged = kept[finding["window"]]
    # the trap: every rank's wall time a step is the same, and only the own work tells the slow rank
    assert judged[1]["step_s"] == pytest.approx(judged[0]["step_s"], rel=0.2)
    assert judged[1]["own_s"] > judged[0]["own_s"] and judged[0]["relative"] == 1.0
    metrics = [report["job"]["metrics"] for report in reports]
    assert metrics[1]["wall_after_s"] == pytest.approx(metrics[0]["wall_after_s"], rel=0.2)
    assert metrics[0]["wall_after_s"] > 2 * metrics[0]["wall_before_s"]  # rank 0 waited for rank 1 every step
    ended = (finding["window"] + 1) * WINDOW_S
    print(f"named ({finding['kind']}) after {windows} windows, {ended - slowed_at:.1f} s after the slowing began "
          f"(window {WINDOW_S} s, consecutive {CONSECUTIVE}); the watch's own time: "
          f"{[r['watch']['seconds'] for r in reports]} s over {[r['watch']['windows'] for r in reports]} windows, "
          f"{watch['exchange_bytes']} bytes a window at rank 0")
    # one line at rank 0, in the preflight's style
    lines = [line for line in output.splitlines() if "watch: rank 1 (" in line]
    assert lines and all("relative 0." in line and "individual 0." in line for line in lines), output[-3000:]


def test_the_healthy_windows_before_it_named_nobody_and_every_rank_followed_the_verdict(slowed):
    _, reports, run_dir = slowed
    watch = reports[0]["watch"]
    slowed_window = int(reports[1]["job"]["metrics"]["slowed_at_s"] // WINDOW_S)
    assert slowed_window >= HEALTHY_WINDOWS - 1 and watch["judged"] > slowed_window
    assert all(f["since_window"] >= slowed_window - 1 for f in watch["findings"])  # no false finding before
    assert watch["kept"][0]["window"] == 0 and all(r["relative"] >= 0.5 for r in watch["kept"][0]["ranks"])
    assert reports[1]["watch"]["findings"] == watch["findings"] and reports[1]["watch"]["kept"] == []
    finding = named(watch)
    for report in reports:
        seen = report["watch"]
        assert (seen["status"], seen["mode"], seen["measured"]) == ("slow", "warn", "flight_recorder")
        assert report["job"]["status"] == "completed"
        assert f"watch: {finding['message']}" in report["warnings"]
    observed = [json.loads(line) for line in (run_dir / "bad_nodes.jsonl").read_text().splitlines()]
    assert [(e["reason"], e["ranks"]) for e in observed] == [(f"watch_{finding['kind']}", [1])]


@pytest.mark.extra("plot")
def test_rank_0_draws_every_rank_s_scores_over_time(slowed):
    output, _, run_dir = slowed
    assert output.count(f"watch: drawing every rank's scores into {run_dir / 'watch.png'}") >= 1
    assert (run_dir / "watch.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_a_rank_that_dies_mid_run_ends_the_job_within_the_timeout_and_the_watch_adds_no_hang(tmp_path):
    timeout_s = 60
    proc, reports, seconds, _ = _run(tmp_path, APP_DIR / "app.py", "die.after_s=5",
                                     f"env.distributed.timeout_s={timeout_s}")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "rank 1 exits at" in output, output[-3000:]
    report, dead = reports
    assert dead["job"]["status"] == "running"  # rank 1 died before it could write its end
    assert report["job"]["status"] in ("interrupted", "failed"), report["job"]
    assert report["watch"]["windows"] >= 1  # what the watch saw, recorded though the job was stopped
    assert seconds < 5 + timeout_s + 30  # rank 0 ended within the timeout of its peer's death (start-up aside)


def test_train_stub_marks_its_steps_through_session_watch_and_a_healthy_run_names_nobody(tmp_path):
    proc, reports, _, _ = _run(tmp_path, STUB, "train.steps=300", "train.hidden=512", "env.watch.window_s=0.5")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    for report in reports:
        watch = report["watch"]
        assert (watch["status"], watch["findings"], watch["steps"]) == ("ok", [], 300)
        assert watch["windows"] >= 1 and watch["window_s"] == 0.5


def test_under_error_a_finding_stops_the_job_in_one_line_and_the_report_records_it(tmp_path):
    proc, reports, _, _ = _run(tmp_path, APP_DIR / "app.py", f"slow.after_s={2 * WINDOW_S}",
                               f"slow.pids={tmp_path / 'loops.pids'}", "env.watch.mode=error")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Error: watch: rank 1 (" in output, output[-3000:]
    report = reports[0]
    finding = named(report["watch"])
    assert report["job"]["status"] == "check_failed" and finding["message"] in report["job"]["error"]
    assert report["watch"]["on_bad"] == "stopped" and report["distributed"]["teardown"] is not None
