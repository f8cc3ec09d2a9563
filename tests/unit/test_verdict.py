"""The doctor agrees with the job (issue 20): on the same input, ``bootstrap doctor`` exits 1 exactly
where the real job stops, and 0 where it starts.

The job is train_stub.py run for real (``train.steps=0``: the bootstrap, then a task that only logs);
the doctor is ``doctor.main`` in this process with the same overrides and environment. Both take
their verdict from bootstrap.verdict; the test holds them to the real outcome, not to each other only.
"""
import pytest

from bootstrap.core import verdict


def test_the_json_verdict_keeps_the_report_schema_and_holds_the_reason(doctor_here, tmp_path):
    import json

    plain = json.loads(doctor_here("--json", cwd=tmp_path).stdout)
    answer = doctor_here("--json", "+env.vars.TORCH_DISTRIBUTED_DEBUG=1", cwd=tmp_path)
    stopped = json.loads(answer.stdout)
    assert answer.returncode == 1 and set(stopped) == set(plain)
    assert stopped["job"]["status"] == "preview"
    assert stopped["job"]["error"].startswith("TORCH_DISTRIBUTED_DEBUG='1' is not a debug level torch accepts")


# -- the pieces the verdict is made of ---------------------------------------------------------
@pytest.mark.parametrize("value", ["OFF", "off", "Info", "DETAIL", "detail", "1", "0", "", " INFO", "INFO ",
                                   "LOUD", "\u0131nfo", "INFO\n", "DETAILS"])
def test_the_debug_level_check_agrees_with_torch(monkeypatch, value):
    import torch.distributed as dist

    before = dist.get_debug_level()
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", value)
    try:
        dist.set_debug_level_from_env()
        accepted = True
    except ValueError:
        accepted = False
    finally:
        dist.set_debug_level(before)
    assert (verdict.debug_level_problem("TORCH_DISTRIBUTED_DEBUG", value) is None) == accepted


def test_every_variable_torch_is_made_to_reread_has_a_value_check():
    from bootstrap.core.runtime import APPLY_NOW

    assert set(APPLY_NOW) <= set(verdict.LATE_VALUE_CHECKS)


def test_the_value_that_counts_is_the_one_in_place_after_the_plan():
    from bootstrap.variables.environ import plan_vars
    from bootstrap.variables.readers import ProcessState

    state = ProcessState(cuda_initialized=False, process_group_initialized=False)
    shell = {"TORCH_DISTRIBUTED_DEBUG": "LOUD"}
    overridden = plan_vars({"TORCH_DISTRIBUTED_DEBUG": "INFO"}, shell, {}, {"TORCH_DISTRIBUTED_DEBUG"}, state)
    assert verdict.late_value_problems(overridden, shell) == []  # the command line replaces LOUD
    kept = plan_vars({"TORCH_DISTRIBUTED_DEBUG": "INFO"}, shell, {}, set(), state)  # the shell's LOUD wins
    assert [p.split(" is ")[0] for p in verdict.late_value_problems(kept, shell)] == \
        ["TORCH_DISTRIBUTED_DEBUG='LOUD'"]
    assert verdict.late_value_problems([], shell) and not verdict.late_value_problems([], {})


# -- one verdict: every reason a job stops, through the job, the doctor and the dry run (issue 45) ---------------
def _listed_here(tmp_path):
    """A ledger whose hard evidence (a faulty rank) excludes this machine's node (as the job names it) and gpu002."""
    import json
    from datetime import datetime, timedelta, timezone

    from bootstrap.core.agreement import host

    now = datetime.now(timezone.utc)
    stamp = lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    path = tmp_path / "bad_nodes.jsonl"
    path.write_text("".join(json.dumps({"node": node, "reason": "faulty", "job_id": "41", "observed_at": stamp(now - timedelta(hours=1)),
                                        "valid_until": stamp(now + timedelta(hours=23))}) + "\n"
                            for node in (host(), "gpu002")))
    return path


from bad_inputs import KUBEFLOW_POD_OF_TWO  # noqa: E402 - beside the walk that uses it

# reason (verdict.STOP_REASONS) -> (the job's and the doctor's overrides, their environment, the dry run's flags and
# overrides (None: the dry run plans a target it is not on, and lists the check as the target's), the words every
# one of them says)
WALK = {
    "a preset value the schema refuses": (["env.threads.intra_op=abc"], {}, ["env.threads.intra_op=abc"],
                                          "env.threads.intra_op='abc' is not a thread count"),
    "launcher variables that do not add up": ([], KUBEFLOW_POD_OF_TWO, ["--launcher", "kubeflow", "--nodes", "2"],
                                              "this PyTorchJob runs 2 processes per pod (PET_NPROC_PER_NODE)"),
    "a plan that cannot hold (threads, mesh, flight recorder)": (
        ["env.distributed.mesh={dp: 3}", "env.distributed.init=always"], {}, ["env.distributed.mesh={dp: 3}"],
        "env.distributed.mesh: dp(3) = 3 != WORLD_SIZE"),
    "a lint finding under env.lint=error": (["+env.vars.NCCL_NOT_A_SETTING=1", "env.lint=error"], {},
                                            ["+env.vars.NCCL_NOT_A_SETTING=1", "env.lint=error"],
                                            "env.lint=error: the preset sets variables that are read by nothing"),
    "a value torch would refuse (TORCH_DISTRIBUTED_DEBUG)": (["+env.vars.TORCH_DISTRIBUTED_DEBUG=1"], {},
                                                            ["+env.vars.TORCH_DISTRIBUTED_DEBUG=1"],
                                                            "TORCH_DISTRIBUTED_DEBUG='1' is not a debug level"),
    "a requirement the machine fails, under on_mismatch=error": (["env=h100"], {}, None, "env=h100 needs CUDA"),
    "a node env.nodes.exclude_file excludes": (["env.nodes.exclude_file=LISTED"], {},
                                            ["env.nodes.exclude_file=LISTED", "--nodelist", "gpu[001-002]"],
                                            "is excluded: faulty in job 41"),
}


def test_every_stop_reason_has_a_walk():
    from bootstrap.core import verdict

    shell_only = {"a value import torch refuses, in the shell"}  # before any code: its own test, below
    assert set(WALK) == set(verdict.STOP_REASONS) - shell_only


@pytest.mark.parametrize("reason", list(WALK))
def test_the_job_the_doctor_and_the_dry_run_reach_one_verdict(reason, tmp_path, monkeypatch, doctor_here, capsys):
    import json

    from bootstrap.cli import dryrun

    from bad_inputs import job_refusal
    from conftest import clean_env

    overrides, environ, flags, words = WALK[reason]
    listed = str(_listed_here(tmp_path))
    overrides = [o.replace("LISTED", listed) for o in overrides]
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    job = job_refusal(tmp_path, overrides)
    assert job.startswith("job start: Error: ") and words in job, job
    (record,) = (tmp_path / "out").glob("bootstrap*.json")  # the job's record of its refusal
    assert words in json.loads(record.read_text())["job"]["error"]

    doctor = doctor_here(*overrides, cwd=tmp_path, env=clean_env(**environ))
    assert doctor.returncode == 1 and words in doctor.stdout + doctor.stderr, doctor.stderr  # every reason: stdout

    if flags is None:  # decided on the target: the dry run names it among the target's checks
        monkeypatch.chdir(tmp_path)
        code = dryrun.main(["--out", str(tmp_path / "dry"), "--no-mesh", "--world", "2", *overrides])
        checked = json.loads((tmp_path / "dry" / "dryrun.json").read_text())["summary"]
        assert code == 0 and "CUDA present (device=cuda)" in checked["checked_at_start_on_the_target"]
        return
    capsys.readouterr()
    code = dryrun.main(["--out", str(tmp_path / "dry"), "--no-mesh", "--world", "4", "--cpus-per-node", "4",
                        *[f.replace("LISTED", listed) for f in flags]])
    out, err = capsys.readouterr()
    if code == 2:  # the preset itself refused: every rank's plan, said once as bad input
        assert words in err, err
        return
    findings = json.loads((tmp_path / "dry" / "dryrun.json").read_text())["summary"]["findings"]
    assert code == 1 and any(words in finding["what"] for finding in findings), findings
    if "--nodelist" in flags:  # only the listed node's ranks: gpu002 holds ranks 2 and 3
        assert [f["ranks"] for f in findings if words in f["what"]] == ["ranks 2, 3"]


def test_a_value_import_torch_refuses_in_the_shell_is_said_by_the_doctor_and_the_dry_run(doctor_here, capsys,
                                                                                         tmp_path):
    from bootstrap.cli import dryrun

    from conftest import clean_env

    doctor = doctor_here(env=clean_env(TORCH_DISTRIBUTED_DEBUG="1"), cwd=tmp_path)
    assert doctor.returncode == 1 and "import torch` raises ValueError" in doctor.stderr, doctor.stderr
    assert "Traceback" not in doctor.stderr and doctor.stdout == ""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCH_DISTRIBUTED_DEBUG", "1")
        code = dryrun.main(["--out", str(tmp_path / "dry"), "--world", "2"])
    assert code == 1 and "import torch` raises ValueError" in capsys.readouterr().err


def test_a_compose_error_exits_1_in_the_doctor_as_in_the_job_with_hydras_reason_and_the_nearest_setting(
        doctor_here, tmp_path):
    seed = doctor_here("env.seed=abc", cwd=tmp_path)
    assert seed.returncode == 1, seed.stderr  # the job's own Hydra exits 1 (tests/e2e/test_verdict.py)
    assert "Error merging override env.seed=abc" in seed.stderr
    assert "Value 'abc' of type 'str' could not be converted to Integer" in seed.stderr  # the cause, kept
    typo = doctor_here("env.threds.intra_op=2", cwd=tmp_path)
    assert typo.returncode == 1 and "Did you mean env.threads?" in typo.stderr, typo.stderr
    assert "To append to your config use +" not in typo.stderr  # Hydra's advice adds the key for the job to refuse
    usage = doctor_here("--config-path", str(tmp_path / "absent"), cwd=tmp_path)
    assert usage.returncode == 2 and "no such directory" in usage.stderr  # the doctor's own flag


def test_a_fabric_whose_network_cannot_be_proven_here_is_said_by_the_job_and_the_doctor(doctor_here, tmp_path):
    from bootstrap.core import schema, verdict

    preset = schema.load({"fabric": {"name": "ib", "network": "ib"}})  # as conf/env/fabric/ib.yaml sets it
    said = verdict.unproven_network(preset, None)
    assert said and "cannot be proven here" in said and verdict.unproven_network(preset, "2.21.5") is None
    assert verdict.unproven_network(schema.load({}), None) is None  # nothing expected, nothing to prove
    doctor = doctor_here("env/fabric=ib", cwd=tmp_path)  # this torch is a CPU build: no NCCL
    assert doctor.returncode == 0, doctor.stderr
    assert "env/fabric=ib expects NCCL to choose ib" in doctor.stdout and "1 warning (above)" in doctor.stdout


def test_the_dry_runs_thread_fix_never_repeats_the_preset_nor_gives_the_same_finding(tmp_path, capsys):
    import json

    from bootstrap.cli import dryrun

    def fix(*args):
        code = dryrun.main(["--out", str(tmp_path), "--no-mesh", *args])
        capsys.readouterr()
        (finding,) = json.loads((tmp_path / "dryrun.json").read_text())["summary"]["findings"]
        return code, finding["fix"]

    code, said = fix("--world", "8", "--cpus-per-node", "4", "env=cpu_debug")  # auto, 8 ranks on 4 CPUs
    assert code == 1 and "intra_op=auto" not in said and "intra_op=1" not in said and "at most 4 ranks" in said
    code, said = fix("--world", "4", "--cpus-per-node", "8", "env=cpu_debug", "env.threads.intra_op=4")
    assert "env.threads.intra_op=2" in said and "or env.threads.intra_op=auto" in said


def test_the_dry_run_on_a_config_without_a_preset_says_what_the_doctor_says(tmp_path, capsys, doctor_here):
    from bootstrap.cli import dryrun

    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "app.yaml").write_text("lr: 0.1\n")
    code = dryrun.main(["--out", str(tmp_path), "--world", "2", "--config-path", str(conf), "--config-name", "app"])
    err = capsys.readouterr().err
    doctor = doctor_here("--config-path", str(conf), "--config-name", "app", cwd=tmp_path)
    assert code == 2 and "The composed config has no preset: add +env=cpu_debug" in err, err
    assert "hydra/callbacks=bootstrap is enabled" not in err  # the app never enabled it
    assert "The composed config has no preset: add +env=cpu_debug" in doctor.stderr
