"""Hang forensics: a real 2-rank torchrun job (gloo, CPU) that hangs on purpose (tests/hang_app), the
dumps it leaves, and what the report, torchrun's summary and `bootstrap hang` make of them.

The diagnosis itself is pure and is also fed hand-made dumps; a dump found on disk is read
without running code.
"""
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest

from bootstrap.distributed import dumps, hang

from conftest import ROOT, clean_env

APP = ROOT / "tests" / "hang_app" / "app.py"
TORCHRUN = [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc_per_node=2"]
# The job's own timeout: short, so a hang ends quickly, yet long enough for the start-up waits it bounds too
# (the ranks' comparison, rank 0's run directory), which a busy machine or a fresh clone (both ranks compile
# their bytecode at once) can stretch by seconds.
TIMEOUT_S = 15
DEADLINE = TIMEOUT_S + 30  # the issue's bound for a hung job to end, once it hangs (its dumps' times show it)
# The harness's own bound on a job, far from any load's effect and far below the 600 s timeout that a job whose
# signal or timeout did not end it would wait out: a job that ends before it was ended by what the test did.
HARNESS_S = 300
TRACEBACK = "Traceback (most recent call last)"
SKIPPED = "rank 1 never entered collective #2 (all_reduce on default_pg); rank 0 waited in it for"


def start(run_dir: Path, *overrides: str) -> subprocess.Popen:
    return subprocess.Popen([*TORCHRUN, str(APP), f"hydra.run.dir={run_dir}", *overrides], cwd=run_dir.parent,
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finish(proc: subprocess.Popen, deadline: float = HARNESS_S):
    """(exit status, stdout + stderr, seconds it took); the job and its ranks are killed at the deadline."""
    started = time.monotonic()
    try:
        out, err = proc.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"the job did not end within {deadline} s:\n{err[-3000:]}") from None
    return proc.returncode, out + err, time.monotonic() - started


LOGS = ("app.log", "app.rank1.log")


def log_sizes(run_dir: Path) -> dict:
    """How far the ranks' logs go now: a second run in the same directory appends to them."""
    return {name: (run_dir / name).stat().st_size for name in LOGS if (run_dir / name).exists()}


def wait_until_hung(run_dir: Path, proc: subprocess.Popen, after: Optional[dict] = None) -> None:
    """Poll the ranks' logs (past ``after``: a previous run's lines) until rank 0 waits in collective 2
    and rank 1 has skipped it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = ""
        for name in LOGS:
            if (run_dir / name).exists():
                with open(run_dir / name, "rb") as log:
                    log.seek((after or {}).get(name, 0))
                    text += log.read().decode("utf-8", "replace")
        if "rank 0 enters collective 2" in text and "rank 1 skips collective 2" in text:
            return
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        time.sleep(0.05)
    raise AssertionError("the job never reached its hang")


def reports(run_dir: Path) -> list:
    return [json.loads((run_dir / f"bootstrap.rank{rank}.json").read_text()) for rank in (0, 1)]


def bootstrap_hang(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bootstrap", "hang", *map(str, args)], capture_output=True,
                          text=True, env=clean_env(), timeout=120)


def assert_dumps_and_diagnosis(run_dir: Path, finding: str, output: str = "") -> None:
    assert sorted(p.name for p in run_dir.glob(f"{hang.DUMP_PREFIX}*")) == [
        f"{hang.DUMP_PREFIX}0", f"{hang.DUMP_PREFIX}1"], output[-3000:]  # one per rank, in the job's own directory
    proc = bootstrap_hang(run_dir)
    assert proc.returncode == 1 and finding in proc.stdout and TRACEBACK not in proc.stderr, proc.stdout + proc.stderr
    for report in reports(run_dir):
        recorded = report["distributed"]["hang"]
        assert finding in recorded["finding"] and recorded["dumps"] == [f"{hang.DUMP_PREFIX}0", f"{hang.DUMP_PREFIX}1"]


# -- real hangs ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def skipped(tmp_path_factory):
    """One real hang, read by more than one test: rank 1 never enters all_reduce #2, and the job ends at its
    timeout. (run directory, exit status, output, seconds it took)."""
    run_dir = tmp_path_factory.mktemp("skipped") / "run"
    return (run_dir, *finish(start(run_dir, f"env.distributed.timeout_s={TIMEOUT_S}")))


def test_a_rank_that_never_enters_a_collective_is_named(skipped):
    run_dir, code, output, _ = skipped
    assert code != 0
    assert_dumps_and_diagnosis(run_dir, SKIPPED, output)
    # Rank 0 failed first and asked for every dump: its own request does not make it re-dump as if asked.
    assert dumps.read(run_dir / f"{hang.DUMP_PREFIX}0").reason.startswith("job failed")
    first, second = reports(run_dir)
    assert first["job"]["status"] == "failed" and SKIPPED in first["job"]["error"]
    root_cause = output.split("Root Cause")[1]  # torchrun's summary names the rank and what the dumps show
    assert "rank 0 failed" in root_cause and SKIPPED in root_cause


def test_a_real_hang_s_timeline_shows_who_never_entered_and_who_waits(skipped, tmp_path):
    run_dir, code, output, _ = skipped
    assert code != 0, output[-3000:]
    proc = bootstrap_hang(run_dir, "--plot")
    picture = run_dir / "hang_timeline.png"
    assert proc.returncode == 1 and SKIPPED in proc.stdout and proc.stderr == "", proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == f"bootstrap hang: timeline drawn into {picture}"  # one line: where
    assert picture.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    # Its data: the lanes of this run's diagnosis, as an SVG of the same run keeps every label and bar
    lanes = hang.diagnose_dir(run_dir, dumps.run_started_ns(run_dir), timeline=True)[0].timeline.lanes
    # the job's group first, where the ranks diverge (the preflight's own group, all alike, comes after)
    assert [(lane.group, lane.ranks, lane.completed, lane.completed_op, lane.waiting, lane.waiting_op)
            for lane in lanes[:2]] == [("default_pg", "rank 1", 1, "all_reduce", None, ""),
                                       ("default_pg", "rank 0", 1, "all_reduce", 2, "all_reduce")]
    assert all(lane.group != "default_pg" and lane.waiting is None for lane in lanes[2:])
    assert TIMEOUT_S - 1 < lanes[1].waited_s < DEADLINE  # rank 0 waited in #2 until the job's timeout
    svg = tmp_path / "timeline.svg"
    assert bootstrap_hang(run_dir, f"--plot={svg}").returncode == 1
    drawn = svg.read_text()
    texts = re.findall(r"<!-- (.*?) -->", drawn)
    assert [text for text in texts if text.startswith("default_pg: ")] == ["default_pg: rank 1", "default_pg: rank 0"]
    assert "#1 all_reduce; never entered #2" in texts
    assert f"#1 all_reduce; waits in #2 all_reduce, {lanes[1].waited_s:.1f} s" in texts
    assert all(f'id="{gid}"' in drawn for gid in ("completed-0", "never-0", "completed-1", "waiting-1"))
    # Without matplotlib: the same answer, and one line on how to get the picture
    hidden = subprocess.run([sys.executable, "-c", "import sys; sys.modules['matplotlib'] = None; from bootstrap.cli."
                             "commands import main; sys.exit(main(sys.argv[1:]))", "hang", str(run_dir), "--plot",
                             str(tmp_path / "none.png")], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert hidden.returncode == 1 and SKIPPED in hidden.stdout and not (tmp_path / "none.png").exists()
    assert hidden.stderr == "bootstrap hang: no picture: matplotlib is not installed (pip install " \
                            "'hydra-train-bootstrap[plot]')\n"


def test_sigterm_to_the_job_while_it_hangs(tmp_path):
    run_dir = tmp_path / "run"
    proc = start(run_dir, "env.distributed.timeout_s=600")  # no timeout to rescue it: only the signal
    wait_until_hung(run_dir, proc)
    proc.send_signal(signal.SIGTERM)  # torchrun forwards it to both ranks, as a scheduler's kill does
    code, output, _ = finish(proc)  # with no timeout to end it within HARNESS_S: the signal did
    assert code != 0
    assert_dumps_and_diagnosis(run_dir, SKIPPED, output)
    assert [r["job"]["status"] for r in reports(run_dir)] == ["interrupted", "interrupted"]


def test_sigterm_to_a_rank_blocked_in_a_collective(tmp_path):
    # Rank 0 is blocked in C++ (gloo's wait): Python runs no handler there until the wait returns,
    # up to timeout_s. The watcher thread dumps, asks rank 1 for its dump and ends the job itself.
    run_dir = tmp_path / "run"
    proc = start(run_dir, "env.distributed.timeout_s=600")
    wait_until_hung(run_dir, proc)
    rank0 = json.loads((run_dir / "bootstrap.rank0.json").read_text())
    os.kill(_pid_of_rank(proc.pid, 0), signal.SIGTERM)
    code, output, _ = finish(proc)  # with no timeout to end it within HARNESS_S: the signal did
    assert code != 0
    assert rank0["job"]["status"] == "running"  # it was in its task when the signal came
    assert_dumps_and_diagnosis(run_dir, SKIPPED, output)
    first = reports(run_dir)[0]
    assert first["job"]["status"] == "interrupted"
    assert first["job"]["error"].startswith("rank 0 stopped by SIGTERM while blocked in a collective")
    assert "exitcode  : 143" in output


def test_a_reused_run_dir_blames_no_rank_with_an_earlier_runs_dump(skipped, tmp_path):
    # A fixed hydra.run.dir, run twice. The first run (the module's hang, copied with its files' times) left both
    # ranks' dumps. In the second, rank 1 is killed with SIGKILL and leaves none: its dump from the first run is
    # stale, and rank 1 is missing.
    run_dir = tmp_path / "run"
    shutil.copytree(skipped[0], run_dir)
    dump0, dump1 = f"{hang.DUMP_PREFIX}0", f"{hang.DUMP_PREFIX}1"
    assert sorted(p.name for p in run_dir.glob(f"{hang.DUMP_PREFIX}*")) == [dump0, dump1]
    earlier = (run_dir / dump1).read_bytes()
    proc = start(run_dir, "env.distributed.timeout_s=600")
    wait_until_hung(run_dir, proc, after=log_sizes(run_dir))
    os.kill(_pid_of_rank(proc.pid, 1), signal.SIGKILL)
    code, output, _ = finish(proc)
    assert code != 0
    assert (run_dir / dump1).read_bytes() == earlier  # left in place, untouched
    recorded = reports(run_dir)[0]["distributed"]["hang"]
    assert recorded["dumps"] == [dump0] and recorded["ranks"] == [0], recorded
    assert recorded["stale"] == [dump1] and recorded["missing"] == "rank 1", recorded
    assert recorded["findings"] == ["no dump from rank 1: it ended without one (killed with SIGKILL, or crashed "
                                    "inside a collective)"], recorded
    proc = bootstrap_hang(run_dir)  # this run's start, from the run's reports
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr, proc.stdout + proc.stderr
    assert "(dumps from rank 0)" in proc.stdout and "no dump from rank 1: it ended without one" in proc.stdout
    assert f"1 stale dump, from an earlier run (older than this run's start; left in place, not analysed): {dump1}" \
        in proc.stdout, proc.stdout


def _pid_of_rank(torchrun_pid: int, rank: int) -> int:
    """The worker torchrun (the agent, with --standalone) started for ``rank``: its child with RANK=<rank>."""
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        try:
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if parent == torchrun_pid and f"RANK={rank}".encode() in environ:
            return pid
    raise AssertionError(f"torchrun ({torchrun_pid}) has no worker of rank {rank}")


def test_ranks_that_disagree_on_the_operation(tmp_path):
    run_dir = tmp_path / "run"
    code, _, _ = finish(start(run_dir, "fault=mismatch", f"env.distributed.timeout_s={TIMEOUT_S}"))
    assert code != 0
    assert_dumps_and_diagnosis(run_dir, "collective #2 on default_pg: the ranks disagree on the operation: "
                                        "rank 0 all_reduce [[8]] ['Float'], rank 1 broadcast [[8]] ['Float']")


def test_a_healthy_run_writes_no_dump(tmp_path):
    run_dir = tmp_path / "run"
    code, output, _ = finish(start(run_dir, "fault=none"))
    assert code == 0, output[-3000:]
    assert not list(run_dir.glob(f"{hang.DUMP_PREFIX}*"))
    assert all(r["distributed"]["hang"] is None for r in reports(run_dir))
    proc = bootstrap_hang(run_dir)
    assert proc.returncode == 2 and "holds no flight-recorder dump" in proc.stderr


# -- dumps on disk are untrusted ---------------------------------------------------------------------
class Exploit:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


def test_a_dump_that_holds_code_is_not_run_and_not_a_dump(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / f"{hang.DUMP_PREFIX}0").write_bytes(pickle.dumps({"entries": [], "x": Exploit()}))
    (run_dir / f"{hang.DUMP_PREFIX}1").write_bytes(b"\x80\x02garbage")
    (run_dir / f"{hang.DUMP_PREFIX}2").mkdir()
    (run_dir / f"{hang.DUMP_PREFIX}x").write_bytes(pickle.dumps({"entries": []}))
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "hang", str(run_dir)], capture_output=True, text=True,
                          cwd=tmp_path, env=clean_env(), timeout=120)
    assert not (tmp_path / "PWNED").exists()
    assert proc.returncode == 2 and TRACEBACK not in proc.stderr


def test_hang_usage_errors():
    proc = bootstrap_hang("/no/such/run/dir")
    assert proc.returncode == 2 and "no such directory" in proc.stderr
