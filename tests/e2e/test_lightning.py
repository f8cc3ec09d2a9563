"""The bootstrap under a real Lightning app (tests/lightning_app), enabled from the command line.

The app knows nothing of the bootstrap: every run adds ``+env=cpu_debug hydra/callbacks=bootstrap``
as a new user would. Everything runs in real subprocesses. Each run has a deadline: a hang
(two ranks waiting on each other) fails the test, and the whole process group, the ranks
Lightning started included, is killed.

What Lightning does that matters here (design.md §5): ``strategy=ddp`` re-runs the script
for rank 1 with ``hydra.run.dir`` set to rank 0's run directory, so both ranks write into one
directory; rank 0 starts before Lightning has decided anything, so it sees a single process.
``strategy=ddp_spawn`` forks workers that do not run Hydra again.
"""
import csv
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conftest import clean_env, cores, end_listed
from cpu_groups import rank_groups

# Looked up, not imported (importing lightning costs seconds). Missing, it fails every test
# here rather than skipping them: the `lightning` extra is part of the test command.
assert importlib.util.find_spec("lightning") is not None, "pip install -e '.[test,lightning]' runs these tests"
APP = Path(__file__).parents[1] / "lightning_app" / "app.py"
BOOTSTRAP = ("+env=cpu_debug", "hydra/callbacks=bootstrap")
DDP = ("trainer.strategy=ddp", "trainer.devices=2")
TIMEOUT = 240  # each run takes 5-20 s on 2 cores; a hang ends here, not in CI's global timeout
RETURNS = re.compile(r"app returns (.+)$", re.MULTILINE)


@dataclass
class AppRun:
    args: tuple
    returncode: int  # None when the run was killed at the deadline
    stdout: str
    stderr: str
    out_dir: Path

    def tail(self) -> str:
        state = f"killed after {TIMEOUT} s" if self.returncode is None else f"exit status {self.returncode}"
        files = sorted(p.name for p in self.out_dir.iterdir()) if self.out_dir.is_dir() else "no directory"
        return (f"app.py {' '.join(self.args)}: {state}; {self.out_dir}: {files}\n"
                f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-5000:]}")

    def file(self, name: str) -> Path:
        path = self.out_dir / name
        assert path.is_file(), f"{name} was not written\n{self.tail()}"
        return path

    def report(self, name: str = "bootstrap.json") -> dict:
        return json.loads(self.file(name).read_text())

    def returned(self):
        """What the task returned, as it logged it into its job log."""
        return logged_return(self.file("app.log"))


def logged_return(job_log: Path):
    """The app logs what its task returns as one line of JSON (floats for 0-d tensors)."""
    found = RETURNS.findall(job_log.read_text())
    assert len(found) == 1, f"expected one 'app returns' line in {job_log}, found {found}"
    return json.loads(found[0])


def run_app(out_dir: Path, *args: str, multirun: bool = False, prefix: tuple = (), **env: str) -> AppRun:
    """``python app.py ARGS`` with its output in out_dir, killed (with every rank) at the deadline. ``prefix``: what
    starts it (``taskset -c 0``); ``env``: variables added to its environment."""
    dir_arg = f"hydra.sweep.dir={out_dir}" if multirun else f"hydra.run.dir={out_dir}"
    cmd = [*prefix, sys.executable, str(APP), *(["-m"] if multirun else []), dir_arg, *args]
    # A new session: the ranks Lightning starts share its process group, so one killpg ends them all.
    proc = subprocess.Popen(cmd, cwd=out_dir.parent, env=clean_env(**env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        # The ranks inherit the pipes: this returns once every rank has exited, not only rank 0.
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
        returncode = proc.returncode
    except subprocess.TimeoutExpired:
        returncode = None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # SIGKILL: a rank blocked in a collective ignores SIGTERM
        except ProcessLookupError:
            pass
    if returncode is None:
        stdout, stderr = proc.communicate()
    return AppRun(tuple(args), returncode, stdout, stderr, out_dir)


def assert_ok(run: AppRun) -> None:
    assert run.returncode == 0, run.tail()


# A rank that trained to the end can still die of SIGABRT as its interpreter exits, in torch's or Lightning's own
# C++ ("terminate called without an active exception"): seen about once in 8 loaded runs, with and without the
# bootstrap (bench/run.py counts it). Such a run is run once more; any other failure fails at once.
KNOWN_ABORT = "terminate called without an active exception"


def run_app_past_known_abort(out_dir: Path, *args: str) -> AppRun:
    run = run_app(out_dir, *args)
    if run.returncode != 0 and KNOWN_ABORT in run.stderr and "`Trainer.fit` stopped" in run.stderr:
        shutil.rmtree(out_dir, ignore_errors=True)
        run = run_app(out_dir, *args)
    return run


# -- strategy=ddp: Lightning re-launches the script for rank 1 -------------------------------
# One DDP run, read by every test of it below: without BootstrapLogging, cpu_debug's check asked for and never
# run once Lightning's group exists; each rank's matmul against a floor at its start; and a logging variable the
# task exports before fit, which rank 1 inherits and rank 0's bootstrap never saw.
LOGGING_EXPORT = "+exports.NCCL_DEBUG=WARN"
FLOOR = "env.preflight.min_tflops=0.0001"


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory):
    return run_app_past_known_abort(tmp_path_factory.mktemp("ddp") / "run", *BOOTSTRAP, *DDP, LOGGING_EXPORT, FLOOR)


def test_ddp_finishes(ddp_run):
    assert_ok(ddp_run)


# -- strategy=ddp_spawn: workers forked by torch.multiprocessing ------------------------------
# One run: the workers do not run Hydra again; the task returns its metrics (0-d tensors); env.seed=null seeds
# nothing.
@pytest.fixture(scope="module")
def spawn_run(tmp_path_factory):
    return run_app_past_known_abort(tmp_path_factory.mktemp("spawn") / "run", *BOOTSTRAP, "trainer.strategy=ddp_spawn",
                                    "trainer.devices=2", "returns=metrics", "env.seed=null")


def test_ddp_spawn_finishes(spawn_run):
    assert_ok(spawn_run)
    assert spawn_run.report()["job"]["status"] == "completed", spawn_run.report()["job"]


# -- what the task returns ------------------------------------------------------------------
@pytest.fixture(scope="module")
def number_run(tmp_path_factory):
    return run_app(tmp_path_factory.mktemp("number") / "run", *BOOTSTRAP, "returns=number")


def test_a_returned_number_is_recorded(number_run):
    assert_ok(number_run)
    value = number_run.returned()
    assert isinstance(value, float) and value > 0
    assert number_run.report()["job"]["metrics"] == {"return": value}


def test_returned_metrics_of_tensors_are_recorded_as_floats(spawn_run):
    assert_ok(spawn_run)
    returned = spawn_run.returned()  # the app logs float(v) of each 0-d tensor it returned
    assert {"train/loss", "val/loss"} <= returned.keys()
    metrics = spawn_run.report()["job"]["metrics"]
    assert metrics is not None, spawn_run.report()["job"]
    for key in ("train/loss", "val/loss"):
        assert type(metrics.get(key)) is float, metrics
        assert metrics[key] == returned[key]


def test_env_seed_null_seeds_nothing(spawn_run):
    assert_ok(spawn_run)
    seed = spawn_run.report()["seed"]
    assert seed["value"] is None and seed["generators"] == [], seed


# -- a sweep of the number-returning app, and tune ---------------------------------------------
def _summary(sweep_dir: Path) -> list:
    path = sweep_dir / "sweep_summary.csv"
    assert path.is_file(), f"no sweep_summary.csv in {sorted(p.name for p in sweep_dir.iterdir())}"
    with open(path) as f:
        return list(csv.DictReader(f))


def _marked(cell: str) -> bool:
    return (cell or "").strip().lower() not in ("", "no", "false", "0")


def _tune(sweep_dir: Path, out: Path, name: str, *extra: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "tune", str(sweep_dir), "--name", name,
                           "--out", str(out), *extra], capture_output=True, text=True, env=clean_env(),
                          cwd=sweep_dir.parent, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return yaml.safe_load((out / "env" / f"{name}.yaml").read_text())


def test_sweep_ranks_jobs_by_return_and_tune_keeps_the_best(tmp_path):
    sweep_dir = tmp_path / "sweep"
    # Threads do not change this model's numbers, so without a per-job seed both jobs would tie;
    # seeding each job with its intra_op gives two different val/loss values to choose between.
    run = run_app(sweep_dir, *BOOTSTRAP, "env.threads.intra_op=1,2", "seed=${env.threads.intra_op}",
                  "trainer.max_epochs=1", multirun=True)
    assert_ok(run)
    rows = _summary(sweep_dir)
    assert len(rows) == 2, rows
    assert "return" in rows[0] and "best" in rows[0], f"columns: {list(rows[0])}"
    assert all(r["status"] == "completed" for r in rows), rows
    returns = {int(r["intra_op"]): float(r["return"]) for r in rows}
    assert sorted(returns) == [1, 2] and returns[1] != returns[2], returns
    for r in rows:  # each row's return is what that job's app logged
        assert f"env.threads.intra_op={r['intra_op']}" in r["overrides"]
        assert float(r["return"]) == logged_return(sweep_dir / r["job"] / "app.log")
    best = [int(r["intra_op"]) for r in rows if _marked(r["best"])]
    lowest, highest = min(returns, key=returns.get), max(returns, key=returns.get)
    assert best == [lowest], f"best marks {best}; returns {returns} (default: return, min)"

    conf = tmp_path / "conf"
    assert _tune(sweep_dir, conf, "tuned")["threads"]["intra_op"] == lowest
    assert _tune(sweep_dir, conf, "tuned_max", "--objective", "return", "--mode", "max")["threads"][
        "intra_op"] == highest


def test_ddp_rank0_ends_as_rank0_of_lightnings_world_and_says_its_threads_did_not_fit(ddp_run):
    # Rank 0's bootstrap runs before Lightning decides to start ranks: at its start it is one process, with every CPU.
    # Once Lightning's group exists it is rank 0 of the world (issue 45): its report says so, as rank 1's does, and,
    # without the callback that gives it its share in time, its end warns that the node ran more threads than CPUs.
    report = ddp_run.report()
    dist = report["distributed"]
    assert (dist["launcher"], dist["rank"], dist["world_size"], dist["local_world_size"]) == ("lightning", 0, 2, 2)
    (said,) = [w for w in report["warnings"] if w.startswith("threads: rank 0 ran")]
    assert f"ran {report['threads']['intra_op']} intra-op threads" in said and "BootstrapLogging" in said


def test_ddp_rank1_knows_lightning_started_it(ddp_run):
    dist = ddp_run.report("bootstrap.rank1.json")["distributed"]
    seen = {k: dist.get(k) for k in ("launcher", "rank", "world_size", "local_world_size", "process_group")}
    # process_group "none": Lightning makes the group; the bootstrap must not make a second one.
    assert seen == {"launcher": "lightning", "rank": 1, "world_size": 2, "local_world_size": 2,
                    "process_group": "none"}, dist


@pytest.mark.parametrize("rank, name", [(0, "bootstrap.json"), (1, "bootstrap.rank1.json")])
def test_ddp_each_rank_completes_and_records_the_frameworks_group(ddp_run, rank, name):
    report = ddp_run.report(name)
    assert report["job"]["status"] == "completed", report["job"]
    assert report["distributed"].get("group_at_end") == {
        "owner": "framework", "backend": "gloo", "world_size": 2, "rank": rank}, report["distributed"]


@pytest.mark.parametrize("name, listing", [("bootstrap.json", "packages.txt"),
                                           ("bootstrap.rank1.json", "packages.rank1.txt")])
def test_ddp_each_rank_records_where_it_came_from_in_files_of_its_own(ddp_run, name, listing):
    # rank 0 started as a single process, rank 1 in a world of 2: their files must not overwrite each other's
    provenance = ddp_run.report(name)["provenance"]
    assert (provenance["status"], provenance["packages_file"]) == ("collected", listing), provenance
    listed = ddp_run.file(listing).read_text().splitlines()
    assert len(listed) == provenance["packages"] and any(line.startswith("lightning==") for line in listed)


def test_ddp_rank1_threads_share_the_node(ddp_run):
    expected = max(1, len(os.sched_getaffinity(0)) // 2)
    assert ddp_run.report("bootstrap.rank1.json")["threads"]["intra_op"] == expected


@pytest.mark.parametrize("name", ["bootstrap.json", "bootstrap.rank1.json"])
def test_ddp_no_rank_runs_with_detail_debugging(ddp_run, name):
    # Set in one rank after torch.distributed was imported, inherited by the other: the ranks deadlock.
    assert "TORCH_DISTRIBUTED_DEBUG" not in ddp_run.report(name)["vars"]


def test_ddp_rank1_logs_to_its_own_file(ddp_run):
    assert_ok(ddp_run)
    logs = {p.name: p.read_text() for p in ddp_run.out_dir.glob("*.log")}
    rank1_files = [name for name in logs if name.endswith(".rank1.log")]
    assert rank1_files, f"no *.rank1.log among {sorted(logs)}"
    rank1_text = "".join(logs[name] for name in rank1_files)
    # The app logs "rank R of W: fit starts" from each rank; the bootstrap logs its table from each rank.
    assert "rank 1 of 2: fit starts" in rank1_text, rank1_text
    assert "cpu_debug" in rank1_text, f"rank 1's bootstrap table is not in {rank1_files}:\n{rank1_text}"
    assert "rank 0 of 2: fit starts" not in rank1_text
    holding_rank1 = sorted(name for name, text in logs.items() if "rank 1 of 2" in text)
    assert holding_rank1 == sorted(rank1_files), f"rank 1's lines are in {holding_rank1}"
    rank0_text = ddp_run.file("app.log").read_text()
    assert "rank 0 of 2: fit starts" in rank0_text
    assert rank0_text.count("cpu_debug") >= 1 and "rank 1 of 2" not in rank0_text


def test_the_apps_own_seed_wins_over_the_presets_and_is_said_once(number_run):
    # The app's config says seed: 12345 (it calls L.seed_everything(12345)): that wins over the preset's env.seed=0
    # (issue 45), so the bootstrap seeds what the app seeds, and the app's re-seed changes nothing.
    report = number_run.report()
    assert report["seed"]["value"] == 12345 and report["seed"].get("task_seed") is None, report["seed"]
    said = "env.seed: the app's own seed=12345 wins over the preset's env.seed=0"
    assert any(w.startswith(said) for w in report["warnings"])
    assert (number_run.stdout + number_run.stderr).count(said) == 1


# -- ranks that disagree: Lightning starts rank 1 itself, which compares with rank 0's report ---------
def test_ddp_rank1_compares_itself_with_rank0s_report(ddp_run):
    rank0, rank1 = (ddp_run.report(name)["distributed"]["agreement"] for name in ("bootstrap.json",
                                                                                   "bootstrap.rank1.json"))
    assert rank0["status"] == "single" and rank0["fingerprint"]  # rank 0 could not know; it leaves its fingerprint
    assert (rank1["status"], rank1["via"]) == ("differs", "rank0_report"), rank1


def test_ddp_a_logging_variable_exported_before_fit_warns_and_trains(ddp_run):
    assert_ok(ddp_run)
    agreement = ddp_run.report("bootstrap.rank1.json")["distributed"]["agreement"]
    assert agreement["status"] == "differs" and [(d["name"], d["kind"]) for d in agreement["differences"]] == [
        ("var.NCCL_DEBUG", "logging")]


def test_ddp_a_variable_the_task_exports_before_fit_stops_rank1_and_lightning_kills_rank0(tmp_path):
    # Rank 0's task exports it after rank 0's bootstrap ran; the rank Lightning starts inherits it.
    run = run_app(tmp_path / "run", *BOOTSTRAP, *DDP, "+exports.NCCL_ALGO=Ring")
    # Ended, not hung, and not by rank 0's own hand: Lightning's child-process observer looks at rank 1 every 5 s,
    # and on its exit SIGKILLs rank 0, still waiting for rank 1 (a shell shows "Killed", exit status 137).
    assert run.returncode == -signal.SIGKILL, run.tail()
    assert "terminated with code 1. Forcefully terminating all other processes" in run.stdout + run.stderr
    assert run.report()["job"]["status"] == "running"  # SIGKILL cannot be caught: rank 0's record stays there
    assert "odd one out: rank 1 (" in run.stderr and "NCCL_ALGO=Ring; rank 0 (" in run.stderr, run.tail()
    report = run.report("bootstrap.rank1.json")
    agreement = report["distributed"]["agreement"]
    assert (report["job"]["status"], agreement["status"], agreement["via"]) == (
        "check_failed", "stopped", "rank0_report")
    assert [d["name"] for d in agreement["differences"]] == ["var.NCCL_ALGO"]


# -- what Lightning sets in its own process is not the shell's ------------------------------------
NVML = "PYTORCH_NVML_BASED_CUDA_CHECK"  # import lightning sets it to 1 in its own process (lightning/fabric)


@pytest.mark.parametrize("name, whose", [("bootstrap.json", "set by this process"),
                                         ("bootstrap.rank1.json", "set by rank 0's process")])
def test_ddp_each_rank_records_what_import_lightning_set_as_the_processs_own(ddp_run, name, whose):
    # Rank 1 starts with rank 0's environment, NVML in it: rank 0's report says whose it is.
    recorded = ddp_run.report(name)["vars"].get(NVML)
    assert recorded is not None and (recorded["value"], recorded["source"]) == ("1", "process"), recorded
    assert recorded["note"].startswith(whose) and "not by the shell" in recorded["note"]


def test_diff_here_of_a_lightning_run_leaves_out_what_lightning_set_and_finds_no_difference(ddp_run):
    assert_ok(ddp_run)
    conf = ("--config-path", str(APP.parent / "conf"), "--config-name", "train")
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "diff", str(ddp_run.out_dir), "--here", *conf],
                          capture_output=True, text=True, env=clean_env(), cwd=ddp_run.out_dir.parent, timeout=TIMEOUT)
    assert proc.returncode == 0 and "no differences" in proc.stdout, proc.stdout + proc.stderr
    assert f"left out: {NVML} (set by the run's own process" in proc.stdout, proc.stdout
    # rank 0's world, which Lightning made after the job started (issue 45), is no fact the preview can know
    assert "not compared: the launch (launcher, world_size" in proc.stdout, proc.stdout
    as_json = subprocess.run([sys.executable, "-m", "bootstrap", "diff", str(ddp_run.out_dir), "--here", "--json",
                              *conf], capture_output=True, text=True, env=clean_env(), cwd=ddp_run.out_dir.parent,
                             timeout=TIMEOUT)
    assert json.loads(as_json.stdout)["left_out"] == [NVML] and as_json.returncode == 0, as_json.stdout


# -- the preflight check: Lightning makes its group after the bootstrap ------------------------
def test_ddp_each_rank_checks_its_own_matmul_against_a_floor(ddp_run):
    assert_ok(ddp_run)
    for name in ("bootstrap.json", "bootstrap.rank1.json"):
        check = ddp_run.report(name)["preflight"]
        assert (check["status"], check["world_size"], check["findings"]) == ("ok", 1, []), check
        assert check["ranks"][0]["tflops"] > 0.0001 and "no collective" in check["note"]


def test_an_unreachable_floor_stops_lightning_before_fit(tmp_path):
    run = run_app(tmp_path / "run", *BOOTSTRAP, *DDP, "env.preflight.mode=error", "env.preflight.min_tflops=1000")
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.tail()
    assert "fit starts" not in run.stdout + run.stderr and "floor env.preflight.min_tflops=1000" in run.stderr
    assert run.report()["job"]["status"] == "check_failed"


# -- the preflight once Lightning has made its group: its callback runs it at the trainer's setup (issue 37) ----------
CALLBACK = "+callbacks.bootstrap._target_=bootstrap.integrations.lightning.BootstrapLogging"
MAX_SKEW = 3  # the margins are tests/e2e/test_preflight.py's: rank 1 9x slower, the ranks on one CPU
SLOW = 8  # busy loops in rank 1's CPU group
# Every rank joins its CPU group as its interpreter starts (tests/cpu_groups.py): rank 0, and rank 1, which Lightning
# starts with rank 0's group and affinity. The busy loops rank 1 starts are in its group.
JUDGED = Path(__file__).parents[1] / "judged"  # its sitecustomize: each rank into its CPU group as the bootstrap starts


def run_pinned_ddp(tmp_path: Path, *args: str, loops: int = 0, **env: str) -> AppRun:
    """The app under DDP with both ranks on CPU 0, each in a CPU group of its own (joined as the bootstrap starts in
    it: tests/judged/), and ``loops`` busy processes in rank 1's: a rank slowed for real (design.md section 7). Rank 1
    starts the loops just before fit (APP_RANK1_BUSY_LOOPS); they are killed by their PIDs."""
    pids = tmp_path / "busy.pids"
    with cores(), rank_groups(tmp_path.name) as groups:  # the ranks are timed against each other: no other test
        try:
            return run_app(tmp_path / "run", *BOOTSTRAP, *DDP, "env.threads.intra_op=1",
                           f"env.preflight.max_skew={MAX_SKEW}", *args,
                           APP_RANK1_BUSY_LOOPS=f"{loops}:{pids}", RANK_GROUPS=str(groups), **env,
                           PYTHONPATH=os.pathsep.join(filter(None, [str(JUDGED), os.environ.get("PYTHONPATH")])))
        finally:
            assert loops == 0 or len(end_listed(pids)) == loops, "rank 1 did not start its busy loops"


def _names_rank1_slow(check: dict) -> bool:
    found = re.search(r"rank 1 \(.+?\) is ([0-9.]+)x slower than the other ranks' median", " ".join(
        finding["message"] for finding in check["findings"]))
    return found is not None and float(found.group(1)) > MAX_SKEW and [f["ranks"] for f in check["findings"]] == [[1]]


def _recorded_its_node(run: AppRun, ledger: Path, on_bad: str) -> None:
    """The one step after the preflight, as under torchrun (issue 45 section 4): each rank's report names rank 1's
    node, rank 0 wrote bad_nodes.jsonl and added it to the ledger; one soft observation excludes nothing."""
    for name in ("bootstrap.json", "bootstrap.rank1.json"):
        check = run.report(name)["preflight"]
        host = next(rank["host"] for rank in check["ranks"] if rank["rank"] == 1)
        assert [(b["node"], b["reason"], b["ranks"], b["evidence"], b["excluded"]) for b in check["bad_nodes"]] == \
            [(host, "slow", [1], "soft", False)], check
        assert check["on_bad"] == on_bad, check
    (observed,) = [json.loads(line) for line in run.file("bad_nodes.jsonl").read_text().splitlines()]
    assert (observed["node"], observed["reason"], observed["ranks"]) == (host, "slow", [1])
    assert [json.loads(line) for line in ledger.read_text().splitlines()] == [observed]
    assert not (run.out_dir / "exclude.txt").exists()


def test_ddp_a_rank_slowed_mid_fit_is_named_by_the_watch_through_the_callback_alone(tmp_path):
    """Issue 48: BootstrapLogging marks every training batch on every rank; rank 1 starts 3 busy loops in its CPU group
    10 s into fit (they share its budget of the CPU: its own work then takes 4x rank 0's), and under cpu_debug's thresholds the watch sees
    it within consecutive + 1 windows and names rank 1 alone, while both ranks train on to the end (warn): the step
    rank 1 wrote to APP_STOP_FILE as it slowed (about 16 s later; max_steps only bounds it)."""
    window_s, consecutive = 2.0, 3
    # a step of tens of ms (the app's default model trains in a few): a step's own work longer than a scheduler slice
    model = ("model.hidden=1024", "data.features=512", "data.batch_size=256", "data.n=8192")
    run = run_pinned_ddp(tmp_path, CALLBACK, "trainer.max_epochs=-1", *model, "+trainer.max_steps=2000",
                         loops=3, APP_RANK1_BUSY_AFTER_S="10", APP_STOP_FILE=str(tmp_path / "stop_at"))
    assert_ok(run)
    slowed_at = float(re.search(r"rank 1 slowed at ([0-9.]+) s", run.stdout + run.stderr).group(1))
    reports = [run.report("bootstrap.json"), run.report("bootstrap.rank1.json")]
    watch = reports[0]["watch"]
    findings = watch["findings"]  # slow (relative), or slowed (individual): rank 1 alone
    assert findings and all(f["ranks"] == [1] and f["kind"] in ("slow", "slowed") for f in findings), \
        json.dumps(watch)[:8000]
    slowed_window = int(slowed_at // window_s)
    first = min(findings, key=lambda f: f["window"])
    assert min(f["since_window"] for f in findings) >= slowed_window - 1  # nothing before it slowed
    assert first["window"] - slowed_window + 1 <= consecutive + 1, (slowed_at, json.dumps(watch)[:8000])
    assert reports[1]["watch"]["findings"] == findings  # rank 1 followed rank 0's verdict
    assert all(report["job"]["status"] == "completed" and report["watch"]["steps"] > 0 for report in reports)
    print(f"Lightning: rank 1 named ({first['kind']}) after {first['window'] - slowed_window + 1} windows of "
          f"{window_s:g} s")


def test_ddp_a_slow_rank_is_named_and_stops_every_rank_before_fit_under_error(tmp_path):
    ledger = tmp_path / "bad_nodes.jsonl"
    run = run_pinned_ddp(tmp_path, CALLBACK, "env.preflight.mode=error", f"env.nodes.exclude_file={ledger}",
                         loops=SLOW)
    output = run.stdout + run.stderr
    assert run.returncode == 1 and "fit starts" not in output and "Traceback" not in output, run.tail()
    assert output.count("Error: preflight: rank 1 (") == 2, run.tail()  # one line from each rank
    for name in ("bootstrap.json", "bootstrap.rank1.json"):
        report = run.report(name)
        check = report["preflight"]
        assert (report["job"]["status"], check["status"], check["world_size"]) == ("check_failed", "slow", 2), check
        assert _names_rank1_slow(check), (name, check)
        assert "checked once the framework had made its process group" in check["note"]
        assert check["findings"][0]["message"] in report["job"]["error"]
        assert "\nbad nodes: observed, not excluded: " in report["job"]["error"]
    _recorded_its_node(run, ledger, "stopped")


def test_ddp_a_slow_rank_is_named_on_every_rank_under_warn_and_the_job_trains(tmp_path):
    ledger = tmp_path / "bad_nodes.jsonl"
    run = run_pinned_ddp(tmp_path, CALLBACK, "env.preflight.mode=warn", f"env.nodes.exclude_file={ledger}",
                         loops=SLOW)
    assert_ok(run)
    for name in ("bootstrap.json", "bootstrap.rank1.json"):
        report = run.report(name)
        check = report["preflight"]
        assert (report["job"]["status"], check["status"], check["world_size"]) == ("completed", "slow", 2), check
        assert _names_rank1_slow(check), (name, check)
        assert f"preflight: {check['findings'][0]['message']}" in report["warnings"]
        assert report["timings"]["preflight_s"] == check["seconds"] > 0
        dist = report["distributed"]  # rank 0 is rank 0 of the world from the trainer's setup on (issue 45)
        assert (dist["launcher"], dist["world_size"]) == ("lightning", 2), dist
        assert not any(w.startswith("threads: rank 0 ran") for w in report["warnings"])  # its share, in time
        # the task's phases through the callback alone (issue 49): Lightning's hooks mark them on every rank
        names = [phase["name"] for phase in report["timings"]["phases"]]
        assert names[names.index("hand_off"):] == ["hand_off", "setup", "preflight", "first_collective", "preflight",
                                                   "restore", "first_batch", "first_step"], names
    gathered = run.report("bootstrap.json")["timings"]["world_phases"]  # rank 0's, through Lightning's group
    assert {phase["name"]: phase["ranks"] for phase in gathered}["first_step"] == 2
    _recorded_its_node(run, ledger, "recorded")


NEVER_COMPARED = "preflight: env.preflight.mode=warn was asked for, but the ranks were never compared"


def test_ddp_without_the_callback_a_check_asked_for_is_a_warning_on_every_rank(ddp_run):
    # cpu_debug's mode=warn, and nothing runs the check once Lightning's group exists (each rank's matmul met its
    # floor alone, at its start: no rank was compared with another)
    assert_ok(ddp_run)
    assert (ddp_run.stdout + ddp_run.stderr).count(NEVER_COMPARED) == 2, ddp_run.tail()
    for name in ("bootstrap.json", "bootstrap.rank1.json"):
        report = ddp_run.report(name)
        (said,) = [warning for warning in report["warnings"] if warning.startswith(NEVER_COMPARED)]
        assert "add bootstrap.integrations.lightning.BootstrapLogging to the trainer's callbacks" in said
        assert report["preflight"]["world_size"] == 1 and report["job"]["status"] == "completed"


# -- the commands say which config they composed, and name the fix (issue 37) --------------------------------------
def _bootstrap(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bootstrap", *args], capture_output=True, text=True,
                          env=clean_env(), cwd=cwd, timeout=TIMEOUT)


def test_diff_here_takes_the_config_from_the_runs_own_hydra_record(number_run):
    assert_ok(number_run)
    proc = _bootstrap("diff", str(number_run.out_dir), "--here", cwd=number_run.out_dir.parent)
    assert proc.returncode == 0 and "no differences" in proc.stdout, proc.stdout + proc.stderr
    assert f"config: train from {APP.parent / 'conf'}, as the run's .hydra/hydra.yaml records it" in proc.stdout


def test_diff_here_without_a_hydra_record_names_the_config_options(number_run, tmp_path):
    assert_ok(number_run)
    copy = tmp_path / "run"
    shutil.copytree(number_run.out_dir, copy)
    shutil.rmtree(copy / ".hydra")
    proc = _bootstrap("diff", str(copy), "--here", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.startswith("config: the package's own")
    assert "pass --config-path <the app's config directory> --config-name <its primary config>" in proc.stderr


def test_doctor_says_which_config_it_composed_and_to_add_a_preset(tmp_path):
    proc = _bootstrap("doctor", "--config-path", str(APP.parent / "conf"), "--config-name", "train", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout == f"config: train from {APP.parent / 'conf'}\n", proc.stdout
    assert "add +env=cpu_debug (or another preset) to the command" in proc.stderr
    bare = _bootstrap("doctor", cwd=tmp_path)  # in an app's directory: the package's own config, and it says so
    assert bare.stdout.startswith("config: the package's own (") and "pass --config-path" in bare.stdout
