"""Hang forensics: a real 2-rank torchrun job (gloo, CPU) that hangs on purpose (tests/hang_app), the
dumps it leaves, and what the report, torchrun's summary and `bootstrap hang` make of them.

The diagnosis itself is pure and is also fed hand-made dumps; a dump found on disk is read
without running code.
"""

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

import pytest

from bootstrap import dumps, hang

from conftest import ROOT, clean_env

APP = ROOT / "tests" / "hang_app" / "app.py"
TORCHRUN = [str(Path(sys.executable).with_name("torchrun")), "--standalone", "--nproc_per_node=2"]
TIMEOUT_S = 5  # the job's own collective timeout: short, so a hang ends quickly
DEADLINE = TIMEOUT_S + 30  # the bound for a hung job to end
TRACEBACK = "Traceback (most recent call last)"
SKIPPED = "rank 1 never entered collective #2 (all_reduce on default_pg); rank 0 waited in it for"


def start(run_dir: Path, *overrides: str) -> subprocess.Popen:
    return subprocess.Popen([*TORCHRUN, str(APP), f"hydra.run.dir={run_dir}", *overrides], cwd=run_dir.parent,
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finish(proc: subprocess.Popen, deadline: float = DEADLINE):
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


def assert_dumps_and_diagnosis(run_dir: Path, finding: str) -> None:
    assert sorted(p.name for p in run_dir.glob(f"{hang.DUMP_PREFIX}*")) == [
        f"{hang.DUMP_PREFIX}0", f"{hang.DUMP_PREFIX}1"]  # one per rank, in the job's own directory
    proc = bootstrap_hang(run_dir)
    assert proc.returncode == 1 and finding in proc.stdout and TRACEBACK not in proc.stderr, proc.stdout + proc.stderr
    for report in reports(run_dir):
        recorded = report["distributed"]["hang"]
        assert finding in recorded["finding"] and recorded["dumps"] == [f"{hang.DUMP_PREFIX}0", f"{hang.DUMP_PREFIX}1"]


# -- real hangs ---------------------------------------------------------------------------------
def test_a_rank_that_never_enters_a_collective_is_named(tmp_path):
    run_dir = tmp_path / "run"
    code, output, took = finish(start(run_dir, f"env.distributed.timeout_s={TIMEOUT_S}"))
    assert code != 0 and took < DEADLINE
    assert_dumps_and_diagnosis(run_dir, SKIPPED)
    # Rank 0 failed first and asked for every dump: its own request does not make it re-dump as if asked.
    assert dumps.read(run_dir / f"{hang.DUMP_PREFIX}0").reason.startswith("job failed")
    first, second = reports(run_dir)
    assert first["job"]["status"] == "failed" and SKIPPED in first["job"]["error"]
    root_cause = output.split("Root Cause")[1]  # torchrun's summary names the rank and what the dumps show
    assert "rank 0 failed" in root_cause and SKIPPED in root_cause


def test_sigterm_to_the_job_while_it_hangs(tmp_path):
    run_dir = tmp_path / "run"
    proc = start(run_dir, "env.distributed.timeout_s=600")  # no timeout to rescue it: only the signal
    wait_until_hung(run_dir, proc)
    proc.send_signal(signal.SIGTERM)  # torchrun forwards it to both ranks, as a scheduler's kill does
    code, output, took = finish(proc)
    assert code != 0 and took < 30
    assert_dumps_and_diagnosis(run_dir, SKIPPED)
    assert [r["job"]["status"] for r in reports(run_dir)] == ["interrupted", "interrupted"]


def test_sigterm_to_a_rank_blocked_in_a_collective(tmp_path):
    # Rank 0 is blocked in C++ (gloo's wait): Python runs no handler there until the wait returns,
    # up to timeout_s. The watcher thread dumps, asks rank 1 for its dump and ends the job itself.
    run_dir = tmp_path / "run"
    proc = start(run_dir, "env.distributed.timeout_s=600")
    wait_until_hung(run_dir, proc)
    rank0 = json.loads((run_dir / "bootstrap.rank0.json").read_text())
    os.kill(_pid_of_rank(proc.pid, 0), signal.SIGTERM)
    code, output, took = finish(proc)
    assert code != 0 and took < 30
    assert rank0["job"]["status"] == "running"  # it was in its task when the signal came
    assert_dumps_and_diagnosis(run_dir, SKIPPED)
    first = reports(run_dir)[0]
    assert first["job"]["status"] == "interrupted"
    assert first["job"]["error"].startswith("rank 0 stopped by SIGTERM while blocked in a collective")
    assert "exitcode  : 143" in output


def test_a_reused_run_dir_blames_no_rank_with_an_earlier_runs_dump(tmp_path):
    # A fixed hydra.run.dir, run twice. The first run leaves both ranks' dumps. In the second, rank 1 is
    # killed with SIGKILL and leaves none: its dump from the first run is stale, and rank 1 is missing.
    run_dir = tmp_path / "run"
    dump0, dump1 = f"{hang.DUMP_PREFIX}0", f"{hang.DUMP_PREFIX}1"
    code, output, _ = finish(start(run_dir, f"env.distributed.timeout_s={TIMEOUT_S}"))
    assert code != 0 and sorted(p.name for p in run_dir.glob(f"{hang.DUMP_PREFIX}*")) == [dump0, dump1], output[-3000:]
    earlier = (run_dir / dump1).read_bytes()
    proc = start(run_dir, "env.distributed.timeout_s=600")
    wait_until_hung(run_dir, proc, after=log_sizes(run_dir))
    os.kill(_pid_of_rank(proc.pid, 1), signal.SIGKILL)
    code, output, took = finish(proc)
    assert code != 0 and took < DEADLINE
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
    code, _, took = finish(start(run_dir, "fault=mismatch", f"env.distributed.timeout_s={TIMEOUT_S}"))
    assert code != 0 and took < DEADLINE
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


# -- the diagnosis, from hand-made dumps -----------------------------------------------------------
def entry(seq, op="all_reduce", group=("0", "default_pg"), created_s=100.0, sizes=((8,),), dtypes=("Float",)):
    return {"collective_seq_id": seq, "profiling_name": f"gloo:{op}", "process_group": group, "is_p2p": False,
            "record_id": seq, "time_created_ns": int(created_s * 1e9), "input_sizes": [list(s) for s in sizes],
            "output_sizes": [list(s) for s in sizes], "input_dtypes": list(dtypes), "output_dtypes": list(dtypes),
            "state": "scheduled", "retired": False, "frames": [], "pg_id": 0, "op_id": seq, "p2p_seq_id": 0,
            "thread_id": "1", "thread_name": "python", "time_discovered_started_ns": None,
            "time_discovered_completed_ns": None, "timeout_ms": 600000}


def dump_of(rank, entries, world=2, dumped_s=700.0, groups=None):
    groups = groups or {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(world)))}}
    return {"version": "2.10", "pg_config": groups, "pg_status": {}, "comm_lib_version": "", "entries": entries,
            "bootstrap": {"rank": rank, "world_size": world, "dump_time_ns": int(dumped_s * 1e9)}}


def typed(raw: dict) -> list:
    """Hand-made dumps (``{rank: plain data}``) as the reader makes them from files."""
    return [dumps.from_data(data, f"{hang.DUMP_PREFIX}{rank}") for rank, data in raw.items()]


def test_who_never_entered_and_how_long_the_others_waited():
    raw = {0: dump_of(0, [entry(1), entry(2, created_s=100.0)]), 1: dump_of(1, [entry(1)]),
           2: dump_of(2, [entry(1), entry(2)], world=4), 3: dump_of(3, [entry(1)], world=4)}
    for rank in raw:
        raw[rank]["bootstrap"]["world_size"] = 4
        raw[rank]["pg_config"]["0"]["ranks"] = "[0, 1, 2, 3]"
    result = hang.diagnose(typed(raw))
    assert result.findings == ["ranks 1, 3 never entered collective #2 (all_reduce on default_pg); ranks 0, 2 "
                               "waited in it for 600.0 s"]
    assert result.groups == ["default_pg (ranks 0-3): last collective every rank entered: #1 (all_reduce)"]


def test_a_missing_dump_and_a_second_group():
    tp = ("1", "tp")
    groups = {"0": {"desc": "default_pg", "ranks": "[0, 1, 2]"}, "1": {"desc": "tp", "ranks": "[0, 1]"}}
    raw = {0: dump_of(0, [entry(1), entry(1, group=tp), entry(2, group=tp)], world=3, groups=groups),
           1: dump_of(1, [entry(1), entry(1, group=tp)], world=3, groups=groups)}
    result = hang.diagnose(typed(raw))
    assert result.findings[0].startswith("no dump from rank 2: it ended without one") and result.missing == "rank 2"
    assert "rank 1 never entered collective #2 (all_reduce on tp); rank 0 waited in it for 600.0 s" in result.findings


def test_the_same_collectives_everywhere_is_no_finding():
    assert hang.diagnose(typed({r: dump_of(r, [entry(1), entry(2)]) for r in (0, 1)})).findings == []


def test_a_size_mismatch_by_torchs_analysers_rules():
    raw = {0: dump_of(0, [entry(1), entry(2, sizes=((8,),))]), 1: dump_of(1, [entry(1), entry(2, sizes=((5,),))])}
    (finding,) = hang.diagnose(typed(raw)).findings
    assert finding == ("collective #2 on default_pg: the ranks disagree on the sizes: rank 0 all_reduce [[8]] "
                       "['Float'], rank 1 all_reduce [[5]] ['Float']")


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


def test_the_doctor_says_where_the_dumps_are_and_what_they_show(doctor_here, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for rank, dump in {0: dump_of(0, [entry(1), entry(2)]), 1: dump_of(1, [entry(1)])}.items():
        (run_dir / f"{hang.DUMP_PREFIX}{rank}").write_bytes(pickle.dumps(dump))
    answer = doctor_here("--run-dir", str(run_dir), cwd=tmp_path)
    assert answer.returncode == 0, answer.stderr
    assert f"dumps in {run_dir}: {hang.DUMP_PREFIX}0, {hang.DUMP_PREFIX}1" in answer.stdout
    assert "rank 1 never entered collective #2 (all_reduce on default_pg)" in answer.stdout
    report = json.loads(doctor_here("--run-dir", str(run_dir), "--json", cwd=tmp_path).stdout)
    assert report["distributed"]["hang"]["findings"][0].startswith("rank 1 never entered collective #2")


# -- the recorder's settings --------------------------------------------------------------------------
def test_the_recorder_is_sized_by_the_preset_and_its_dumps_go_to_the_job(run_stub, tmp_path):
    run = run_stub("train.steps=0", "env.distributed.init=always", "env.distributed.flight_recorder.buffer_size=64")
    assert run.returncode == 0, run.output
    values = {name: v["value"] for name, v in run.report["vars"].items()}
    assert values["TORCH_FR_BUFFER_SIZE"] == "64"
    assert values["TORCH_FR_DUMP_TEMP_FILE"] == str(run.out_dir / hang.DUMP_PREFIX)  # NCCL's own dump on timeout
    off = run_stub("train.steps=0", "env.distributed.init=always", "env.distributed.flight_recorder.enabled=false")
    assert off.report["vars"]["TORCH_FR_BUFFER_SIZE"]["value"] == "0"
    assert "TORCH_FR_DUMP_TEMP_FILE" not in off.report["vars"]


def test_one_process_without_a_group_exports_nothing_for_the_recorder(run_stub):
    run = run_stub("train.steps=0")
    assert not {"TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"} & run.report["vars"].keys()


@pytest.mark.parametrize("preset, fragment", [
    ({"distributed": {"init": "always", "flight_recorder": {"buffer_size": 0}}},
     "env.distributed.flight_recorder.buffer_size=0 must be a count of collectives"),
    ({"distributed": {"init": "always"}, "vars": {"TORCH_FR_BUFFER_SIZE": "abc"}},
     "TORCH_FR_BUFFER_SIZE='abc' (from env.vars.TORCH_FR_BUFFER_SIZE) is not a count of collectives"),
])
def test_a_size_torch_would_choke_on_is_refused(preset, fragment):
    import bootstrap
    from bootstrap.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        bootstrap.initialize(preset).apply()
    assert fragment in str(refused.value)


def test_a_shell_value_torch_would_choke_on_is_refused(monkeypatch):
    import bootstrap
    from bootstrap.errors import ConfigError

    monkeypatch.setenv("TORCH_FR_BUFFER_SIZE", "-5")  # torch would keep every collective, forever
    with pytest.raises(ConfigError, match=r"TORCH_FR_BUFFER_SIZE='-5' \(from the shell\)"):
        bootstrap.initialize({"distributed": {"init": "always"}}).apply()
