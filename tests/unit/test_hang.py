"""Hang forensics: a real 2-rank torchrun job (gloo, CPU) that hangs on purpose (tests/hang_app), the
dumps it leaves, and what the report, torchrun's summary and `bootstrap hang` make of them.

The diagnosis itself is pure and is also fed hand-made dumps; a dump found on disk is read
without running code.
"""
import json
import pickle

import pytest

from bootstrap.distributed import dumps, hang


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
    return [dumps.Reader().from_data(data, f"{hang.DUMP_PREFIX}{rank}") for rank, data in raw.items()]


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


@pytest.mark.parametrize("preset, fragment", [
    ({"distributed": {"init": "always", "flight_recorder": {"buffer_size": 0}}},
     "env.distributed.flight_recorder.buffer_size=0 must be a count of collectives"),
    ({"distributed": {"init": "always"}, "vars": {"TORCH_FR_BUFFER_SIZE": "abc"}},
     "TORCH_FR_BUFFER_SIZE='abc' (from env.vars.TORCH_FR_BUFFER_SIZE) is not a count of collectives"),
])
def test_a_size_torch_would_choke_on_is_refused(preset, fragment):
    import bootstrap
    from bootstrap.doors.errors import ConfigError

    with pytest.raises(ConfigError) as refused:
        bootstrap.initialize(preset).apply()
    assert fragment in str(refused.value)


def test_a_shell_value_torch_would_choke_on_is_refused(monkeypatch):
    import bootstrap
    from bootstrap.doors.errors import ConfigError

    # torch would keep every collective, forever. Set in this process, so its source is the process (a shell's
    # value reads "from the shell" and is refused alike).
    monkeypatch.setenv("TORCH_FR_BUFFER_SIZE", "-5")
    with pytest.raises(ConfigError, match=r"TORCH_FR_BUFFER_SIZE='-5' \(from the process\)"):
        bootstrap.initialize({"distributed": {"init": "always"}}).apply()


# -- the recorder's settings: a plan's variables (the hang tests in tests/e2e find the dumps in the job's directory)
def _recorder_vars(preset: dict) -> dict:
    from bootstrap.core.plan import make_plan
    from bootstrap.core.schema import load
    from bootstrap.distributed.launcher import Launch, Launcher
    from bootstrap.variables.readers import ProcessState

    plan = make_plan(load(preset), environ_now={}, env_set={}, explicit_vars=(), launch=Launch(Launcher.single),
                     state=ProcessState(cuda_initialized=False, process_group_initialized=False), cpus=2,
                     machine_cpus=2, output_dir="/runs/x")
    return {d.name: d.value for d in plan.vars if d.name.startswith("TORCH_FR_")}


def test_the_recorder_is_sized_by_the_preset_and_its_dumps_go_to_the_job():
    sized = _recorder_vars({"distributed": {"init": "always", "flight_recorder": {"buffer_size": 64}}})
    assert sized == {"TORCH_FR_BUFFER_SIZE": "64", "TORCH_FR_DUMP_TEMP_FILE": f"/runs/x/{hang.DUMP_PREFIX}"}
    off = _recorder_vars({"distributed": {"init": "always", "flight_recorder": {"enabled": False}}})
    assert off == {"TORCH_FR_BUFFER_SIZE": "0"}  # and no dump file


def test_one_process_without_a_group_exports_nothing_for_the_recorder():
    assert _recorder_vars({}) == {}
