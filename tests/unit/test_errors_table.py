"""docs/errors.md's tables of rejected inputs, walked row by row and checked as written (issue 45).

Each row of "Rejected inputs" (and of the dry run's table) has its checks here, keyed by how its input cell starts: a
row without checks, or checks without their row, fail. Every check feeds the row's input and holds the words the row
shows (``said``) to the code's own message; each word must stand in the row as written too.

- Rows decided before any process starts are checked on values, in this process: the job's start through the real
  callback (``job``: Hydra's compose, then ``on_job_start``; a refusal at the start leaves its record, and that record
  is read), ``bootstrap doctor`` and ``bootstrap dryrun`` run in this process, or the function that decides the row
  (``value``).
- The rest need real processes (ranks that disagree, a rank that never comes, a slow rank). Each names the test that
  starts them (``held``), sharing that test's world: the test must exist, and each word of the row must be in the
  package's own source, where the message is made.
"""
import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from bad_inputs import (KUBEFLOW_POD_OF_TWO, MPI_RANK2_OF_2, MPI_TWO_NODES_NO_MASTER, MULTI_NODE_NO_MASTER,
                        RAY_WORKER_WITHOUT_GROUP, SLURM_RESTARTED_ODDLY, STRAY_AGENT_STORE, SUBMITIT_WITHOUT_JOB,
                        TORCHRUN_RANK2_OF_2, WORLD_WITHOUT_PORT, job_refusal)
from conftest import ROOT, clean_env

PAGE = ROOT / "docs" / "errors.md"


@dataclass(frozen=True)
class Check:
    how: str  # job | doctor | dryrun | value | held
    args: Tuple[Any, ...] = ()  # job, doctor, dryrun: overrides or flags; value: the function; held: "file::test"
    said: Tuple[str, ...] = ()  # words the row shows and the code says
    env: Optional[Dict[str, str]] = None  # launcher variables, for job and doctor
    code: Optional[int] = None  # the exit status (doctor, dryrun); None: non-zero


def job(*overrides: str, said: Tuple[str, ...], env: Optional[Dict[str, str]] = None) -> Check:
    return Check("job", overrides, said, env)


def held(test: str, *said: str) -> Check:
    return Check("held", (test,), said)


# -- the few rows decided by a function of the package, on values ---------------------------------------------------
def _dataclass_env(tmp_path: Path) -> str:
    from dataclasses import dataclass as plain_dataclass

    from omegaconf import OmegaConf

    from bootstrap.core.jobconfig import find_preset

    @plain_dataclass
    class Builds_CartPole:  # noqa: N801 - hydra-zen's builds() names its dataclasses so
        episodes: int = 1

    config = OmegaConf.create({"env": OmegaConf.structured(Builds_CartPole)})
    try:
        find_preset(config)
    except Exception as error:  # noqa: BLE001 - the refusal is what is read
        return str(error)
    return ""


def _exclusion_file(tmp_path: Path) -> str:
    import os

    from bootstrap.core import nodes
    from bootstrap.core.schema import EnvConfig, Nodes

    said: List[str] = []
    link, writable = tmp_path / "bad_nodes.jsonl", tmp_path / "other" / "bad_nodes.jsonl"
    link.symlink_to("/dev/zero")
    writable.parent.mkdir()
    writable.write_text("")
    writable.chmod(0o666)
    for path in (link, writable):
        nodes.at_start(EnvConfig(nodes=Nodes(exclude_file=str(path))), "env", said, "node3", {})
    return " / ".join(said)


def _exclusion_lines(tmp_path: Path) -> str:
    from bootstrap.core import nodes
    from bootstrap.core.schema import EnvConfig, Nodes

    path = tmp_path / "bad_nodes.jsonl"
    path.write_bytes(b"\xff\xfe not text\n{}\n[1]\nnot json\n")
    said: List[str] = []
    nodes.at_start(EnvConfig(nodes=Nodes(exclude_file=str(path))), "env", said, "node3", {})
    return " / ".join(said)


def _observed(node: str, job_id: str, hours_ago: float) -> str:
    from datetime import datetime, timedelta, timezone

    now, stamp = datetime.now(timezone.utc), (lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ"))
    return json.dumps({"node": node, "reason": "slow", "observed_at": stamp(now - timedelta(hours=hours_ago)),
                       "valid_until": stamp(now + timedelta(hours=24 - hours_ago)), "job_id": job_id}) + "\n"


def _excluded_node(tmp_path: Path) -> str:
    from bootstrap.core import nodes
    from bootstrap.core.schema import EnvConfig, Nodes

    path = tmp_path / "bad_nodes.jsonl"
    path.write_text(_observed("node3", "4242", 6) + _observed("node3", "4250", 1))
    refusal = nodes.at_start(EnvConfig(nodes=Nodes(exclude_file=str(path))), "env", [], "node3",
                             {"SLURM_JOB_ID": "4251"})
    return refusal.message if refusal else ""


def _ledger_refused(tmp_path: Path) -> str:
    from bootstrap.core import nodes
    from bootstrap.core.schema import EnvConfig, Nodes
    from unit.test_nodes import _checked, _plan

    shared = tmp_path / "bad_nodes.jsonl"
    shared.symlink_to("/dev/zero")
    said: List[str] = []
    nodes.after_preflight(EnvConfig(nodes=Nodes(exclude_file=str(shared))), _plan(tmp_path), _checked(), None, "env",
                          said, {})
    return " / ".join(said)


def _systemic(tmp_path: Path) -> str:
    from bootstrap.core import nodes
    from bootstrap.core.schema import EnvConfig, Nodes
    from unit.test_nodes import _checked, _plan

    checked = _checked("min_node_busbw_gbps", ranks=(0, 2, 4), hosts={0: "node1", 2: "node2", 4: "node3"})
    said: List[str] = []
    nodes.after_preflight(EnvConfig(nodes=Nodes(exclude_file=str(tmp_path / "s.jsonl"))), _plan(tmp_path, world=6),
                          checked, "preflight: floor", "env", said, {})
    return " / ".join(said)


def _nodes_command(tmp_path: Path) -> str:
    import contextlib
    import io

    from bootstrap.cli import nodes as command

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = command.main([str(tmp_path / "bad_nodes.jsonl"), "--clear", "node3"])
        except SystemExit as stop:
            code = stop.code
    assert code == 2 and not (tmp_path / "bad_nodes.jsonl").exists()  # nothing written
    return err.getvalue()


def _fabric_profile(tmp_path: Path) -> str:
    return job_refusal(tmp_path, ["env/fabric=gcp_tcpxo"])


LISTED = "a name with `=` or a space"
# how the row's input cell starts -> its checks
ROWS: Dict[str, List[Check]] = {
    "`env=nope`": [job("env=nope", said=("Could not find 'env/nope'",))],
    "`env.threds.intra_op=2`": [
        job("env.threds.intra_op=2", said=("Key 'threds' not in 'EnvConfig'", "full_key: env.threds")),
        Check("doctor", ("env.threds.intra_op=2",), ("Did you mean env.threads?",
                                                     "the preset has no such setting, and a '+' would add it")),
    ],
    "`+env.threds.intra_op=2`": [job("+env.threds.intra_op=2", said=(
        "env.threds: the preset has no such setting, so the job would ignore it (a key added with '+' is taken "
        "whatever its name). Did you mean env.threads?",))],
    "`env/fabric=nope`": [job("env/fabric=nope", said=("Could not find 'env/fabric/nope'",)),
                          job("env.fabric.name=nope", said=("Invalid value 'nope', expected one of [none, socket, ib, "
                                                            "roce, aws_efa, gcp_tcpxo, gcp_tcpx]",
                                                            "full_key: env.fabric.name"))],
    "`env/fabric=gcp_tcpxo` where": [Check("value", (_fabric_profile,), (
        "env.fabric.profile: nccl-env-profile.sh was not found (looked in $NCCL_LIB_DIR, LD_LIBRARY_PATH",
        "and set NCCL_LIB_DIR to that directory"))],
    "`bootstrap doctor --nccl-log FILE`": [Check("doctor", ("--nccl-log", "FILE"), (
        "bootstrap doctor: --nccl-log FILE: not read: No such file or directory; name the files NCCL wrote with "
        "NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET",), code=2)],
    "`env.seed=abc`": [job("env.seed=abc", said=("Error merging override env.seed=abc", "Value 'abc' of type 'str' "
                                                 "could not be converted to Integer", "full_key: env.seed")),
                       job("env.requires.gpus=many", said=("could not be converted to Integer",))],
    "`env.on_mismatch=maybe`": [job("env.on_mismatch=maybe", said=("Invalid value 'maybe', expected one of "
                                                                   "[error, warn]", "full_key: env.on_mismatch"))],
    "`env.distributed.agree=maybe`": [job("env.distributed.agree=maybe", said=(
        "Invalid value 'maybe', expected one of [error, warn, off]", "full_key: env.distributed.agree"))],
    "`env.threads.intra_op=abc`": [
        job("env.threads.intra_op=abc", said=("env.threads.intra_op='abc' is not a thread count. Use a positive "
                                              "integer",)),
        job("env.threads.intra_op=0", said=("is not a thread count",)),
        job("env.threads.inter_op=-1", said=("is not a thread count",))],
    "`env.threads.intra_op=99999`": [job("env.threads.intra_op=99999", said=(
        "env.threads.intra_op=99999 is far beyond this machine's",))],
    "`env.seed=-1`": [job("env.seed=-1", said=("env.seed=-1 is out of range. Use an integer in [0, 2**32)",))],
    "`env.requires.torch='>>2'`": [job("env.requires.torch='>>2'", said=(
        "env.requires.torch='>>2' is not a version specifier. Use packaging's syntax",))],
    "`+env.vars.X=[1,2]`": [job("+env.vars.X=[1,2]", said=("env.vars.X is a list; an environment variable holds one "
                                                           "string",)),
                            job("+env.vars.X={a:1}", said=("env.vars.X",))],
    LISTED: [job("env=bad_name_space", said=("env.vars.BAD NAME: 'BAD NAME' is not a valid environment variable "
                                             "name",)),
             job("env=bad_name_equals", said=("is not a valid environment variable name",))],
    "a value with a NUL byte": [job("env=nul_byte", said=("contains a NUL byte",))],
    "`env.distributed.timeout_s=0`": [job("env.distributed.timeout_s=0", said=(
        "env.distributed.timeout_s=0 must be positive and at most 31536000 (a year)",)),
        job("env.distributed.timeout_s=100000000000000000", said=("must be positive and at most 31536000",))],
    "`env.provenance.seconds=900`": [job("env.provenance.seconds=900", said=(
        "env.provenance.seconds=900.0 must be positive and at most env.distributed.timeout_s (600), e.g. "
        "env.provenance.seconds=10; or set env.provenance.enabled=false",)),
        job("env.provenance.seconds=0", said=("must be positive",))],
    "`env.distributed.mesh={dp:0}`": [job("env.distributed.mesh={dp:0}", said=(
        "env.distributed.mesh: sizes must be positive or -1 (inferred), got {'dp': 0}",))],
    "`env.distributed.mesh={dp:2} env.distributed.init=always`": [job(
        "env.distributed.mesh={dp:2}", "env.distributed.init=always", said=(
            "env.distributed.mesh: dp(2) = 2 != WORLD_SIZE(1)",))],
    "`RANK=2 WORLD_SIZE=2`": [job(said=("torchrun: rank 2 is outside world size 2 (RANK must be in [0, WORLD_SIZE))",),
                                  env=TORCHRUN_RANK2_OF_2),
                              job(said=("rank 2 is outside world size 2",), env={
                                  k: v for k, v in TORCHRUN_RANK2_OF_2.items() if k != "TORCHELASTIC_RUN_ID"})],
    "`OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=2`": [
        job(said=("env.distributed: mpi: rank 2 is outside world size 2",), env=MPI_RANK2_OF_2),
        job(said=("env.distributed: mpi: rank 2 is outside world size 2",),
            env={"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2"}),
        job(said=("mpi: a world of 2 ranks (", "without OMPI_COMM_WORLD_LOCAL_RANK or OMPI_COMM_WORLD_LOCAL_SIZE, "
                  "which mpirun sets with them)"), env={"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"})],
    "a rank that started unlike rank 0": [held(
        "tests/e2e/test_agreement.py::test_a_debug_level_on_one_rank_stops_both_quickly_naming_it",
        "the ranks did not start alike in what collectives depend on; odd one out: rank 1",
        "or set env.distributed.agree=warn to go on anyway")],
    "ranks started with different `env.distributed.agree`": [held(
        "tests/e2e/test_agreement.py::test_ranks_under_different_agree_policies_stop_at_once_naming_the_rank",
        "the ranks did not start alike in env.distributed.agree, so they would not decide alike",
        "Fix: start every rank with the same env.distributed.agree")],
    "a rank that never reaches the ranks' comparison": [held(
        "tests/unit/test_agree_store.py::test_a_rank_that_never_comes_is_named_within_the_budget_and_the_ranks_that"
        "_came_are_not", "the ranks could not compare how they started (env.distributed.agree): ",
        "did not reach the comparison within", "the ranks not named did.")],
    "`TORCHELASTIC_USE_AGENT_STORE=True`": [job(said=(
        "TORCHELASTIC_USE_AGENT_STORE=True says torchrun's agent hosts the ranks' store, but torchrun did not start "
        "this process (no TORCHELASTIC_RUN_ID; env started it, rank 0 of 2): every rank would wait for a store that "
        "no process hosts. Unset TORCHELASTIC_USE_AGENT_STORE",), env=STRAY_AGENT_STORE)],
    "a Ray Train worker's variables": [job(said=(
        "ray: RAY_RAYLET_PID with RANK=0 and WORLD_SIZE=2 say this",), env=RAY_WORKER_WITHOUT_GROUP)],
    "`SUBMITIT_EXECUTOR=slurm`": [job(said=(
        "SUBMITIT_EXECUTOR=slurm says submitit started this process, but submitit cannot read its job (SLURM_JOB_ID "
        "is not set). Unset SUBMITIT_EXECUTOR where it leaked",), env=SUBMITIT_WITHOUT_JOB)],
    "under torchrun, rank 0 never publishes": [held(
        "tests/unit/test_waits.py::test_rank_0s_run_directory_is_read_strictly",
        "could not learn rank 0's run directory from torchrun's store at", "within env.distributed.timeout_s=")],
    "`RANK=0 WORLD_SIZE=2` without `MASTER_PORT`": [job(said=(
        "env.distributed: env: a world of 2 ranks needs a rendezvous port, and none is set. Export "
        "MASTER_PORT=<a free port> for every rank, or set env.distributed.master_port.",), env=WORLD_WITHOUT_PORT)],
    "`MASTER_PORT=abc`": [
        job(said=("env.distributed: MASTER_PORT='abc' is not a TCP port from 1 to 65535. Export a free port "
                  "(MASTER_PORT=29500), or unset it",), env={**WORLD_WITHOUT_PORT, "MASTER_PORT": "abc"}),
        job("env.distributed.init=always", said=("MASTER_PORT='abc' is not a TCP port",), env={"MASTER_PORT": "abc"}),
        Check("doctor", (), (), env={"MASTER_PORT": "tcp://10.0.0.5:7077"}, code=0)],  # one process, no group: trains
    "`RANK=-1`": [job(said=("RANK='-1' is not a whole number from 0 to 2147483647",),
                      env={"RANK": "-1", "WORLD_SIZE": "2"}),
                  job(said=("is not a whole number from 0 to 2147483647",), env={"RANK": "0", "WORLD_SIZE": "two"})],
    "`TORCH_DISTRIBUTED_DEBUG=1` from the preset": [  # from env_set: Hydra's run_job sets it (tests/e2e/test_verdict)
        job("+env.vars.TORCH_DISTRIBUTED_DEBUG=1", said=(
            "TORCH_DISTRIBUTED_DEBUG='1' is not a debug level torch accepts. Use OFF, INFO or DETAIL",))],
    "`TORCH_DISTRIBUTED_DEBUG=1` in the shell": [
        Check("doctor", (), ("the job would stop: TORCH_DISTRIBUTED_DEBUG='1' in this shell:",
                             "raises ValueError at once"), env={"TORCH_DISTRIBUTED_DEBUG": "1"}, code=1),
        Check("dryrun", ("--world", "2"), ("raises ValueError at once",), env={"TORCH_DISTRIBUTED_DEBUG": "1"},
              code=1),
        held("tests/e2e/test_verdict.py::test_the_debug_level_in_the_shell_stops_the_apps_own_import_of_torch",
             "ValueError: The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.")],
    "the app's own `env` group holds a dataclass": [Check("value", (_dataclass_env,), (
        "'env' holds the app's own config (Builds_CartPole), not a bootstrap preset. Choose ours under its second "
        "name, '- bootstrap_env: cpu_debug'", "or beneath the callback"))],
    "a preset both beneath the callback": [job("+env@hydra.callbacks.bootstrap.env=cpu_debug", said=(
        "Two presets in one job: hydra.callbacks.bootstrap.env and env. Keep one",))],
    "a multi-node world without `MASTER_ADDR`": [
        job(said=("a multi-node world (4 ranks, 2 per node) needs MASTER_ADDR",), env=MULTI_NODE_NO_MASTER),
        job(said=("MPI gives no master address; pass it with mpirun -x MASTER_ADDR",), env=MPI_TWO_NODES_NO_MASTER)],
    "python started directly in a Kubeflow pod": [job(said=(
        "RANK=1 is the pod's index, not a process rank. Start the processes with torchrun inside the pod",),
        env=KUBEFLOW_POD_OF_TWO)],
    "`env.lint=error` with a variable": [job("+env.vars.NCCL_NOT_A_SETTING=1", "env.lint=error", said=(
        "env.lint=error: the preset sets variables that are read by nothing, or renamed:",
        "Fix them, or run with env.lint=warn to continue anyway."))],
    "`env.preflight.mode=maybe`": [job("env.preflight.mode=maybe", said=(
        "Invalid value 'maybe', expected one of [error, warn, off]", "full_key: env.preflight.mode"))],
    "`env.preflight.max_skew=1`": [
        job("env.preflight.max_skew=1", said=(
            "env.preflight.max_skew=1.0 must be above 1 (a rank this many times slower than the others' median is "
            "named), e.g. env.preflight.max_skew=2.",)),
        job("env.preflight.seconds=0", said=("seconds=0",)),
        job("env.preflight.sizes_mb=[]", said=("sizes_mb=[]",)),
        job("env.preflight.min_tflops=-1", said=("min_tflops=-1",))],
    "`env.preflight.sizes_mb` whose all_reduces": [job("env.preflight.seconds=0.1", "env.preflight.sizes_mb=[4096]",
                                                       said=(
        "env.preflight.sizes_mb=[4096.0] cannot be all_reduced 6 times each within env.preflight.seconds=0.1, even at "
        "50 GB/s", "lower env.preflight.sizes_mb or raise env.preflight.seconds."))],
    "a size the measured speed says": [held(
        "tests/e2e/test_preflight_trust.py::test_a_size_the_measured_speed_says_would_not_fit_is_skipped_by_every_"
        "rank_with_a_note", "not measured: its all_reduces would take", "raise env.preflight.seconds or lower "
        "env.preflight.sizes_mb")],
    "a peer's record with a figure": [held(
        "tests/e2e/test_preflight_trust.py::test_a_crafted_record_is_one_clean_finding_on_every_rank",
        "the ranks' figures were not gathered; run one version of hydra-train-bootstrap on every node")],
    "a node whose links to the other nodes are slow": [held(
        "tests/cluster/test_slow_link.py::test_a_node_behind_a_slow_link_is_named_by_host_within_the_budget",
        "its links carry", "against the other links'")],
    "`env.nodes.on_bad=maybe`": [job("env.nodes.on_bad=maybe", said=(
        "Invalid value 'maybe', expected one of [stop, requeue]", "full_key: env.nodes.on_bad"))],
    "`env.nodes.exclude_ttl_h=0`": [job("env.nodes.exclude_ttl_h=0", said=(
        "env.nodes.exclude_ttl_h=0.0 must be positive hours, at most 8760 (a year), e.g. "
        "env.nodes.exclude_ttl_h=24.",))],
    "`SLURM_RESTART_COUNT=x`": [job(said=("SLURM_RESTART_COUNT='x' is not a whole number from 0 to 2147483647",),
                                    env=SLURM_RESTARTED_ODDLY)],
    "this rank's node is excluded by the evidence": [Check("value", (_excluded_node,), (
        "env.nodes.exclude_file: this node node3 is excluded: slow in 2 jobs (4242, 4250) in the last 6 h; kept out "
        "until", ": resubmit with --exclude=node3 (sbatch) or set env.nodes.ignore=[node3] to run here anyway",
        "--explain node3` shows the evidence"))],
    "an `env.nodes.exclude_file` that is a link": [Check("value", (_exclusion_file,), (
        "env.nodes.exclude_file: bad_nodes.jsonl: a link, not followed: its observations are not read, and the job "
        "goes on", "env.nodes.exclude_file: bad_nodes.jsonl: not trusted: every user may write it (mode 666): chmod "
        "o-w it: its observations are not read, and the job goes on"))],
    "lines of `env.nodes.exclude_file`": [Check("value", (_exclusion_lines,), (
        "env.nodes.exclude_file: line 1 dropped (not UTF-8 text) and 3 more: not an observation or a clearance; the "
        "others are read",))],
    "a ledger the job cannot add to": [Check("value", (_ledger_refused,), (
        "env.nodes.exclude_file: the observations were not added: bad_nodes.jsonl: a link, not followed",))],
    "more than `env.nodes.systemic_fraction`": [Check("value", (_systemic,), (
        "systemic: 3 of 3 nodes slow at once: the network, a filesystem or the job itself, not a node: no node is "
        "excluded for it (env.nodes.systemic_fraction=0.5)",))],
    "`scontrol update JobId=N ExcNodeList=...` refused": [held(
        "tests/cluster/test_bad_nodes.py::test_a_refused_exclusion_never_goes_on_to_a_release",
        "the job is held without the exclusion; run", "or cancel it")],
    "`bootstrap nodes FILE --clear NODE` without `--why`": [Check("value", (_nodes_command,), (
        'bootstrap nodes: --clear needs --why: say why, e.g. --why "GPU replaced"; it is kept with the entry',))],
    "a slow or faulty rank": [held("tests/e2e/test_preflight.py::test_a_slow_rank_stops_every_rank_before_training"
                                   "_under_error", "slower than the other ranks' median",
                                   "(set env.preflight.mode=warn to train anyway")],
    "the machine does not meet `requires`": [job("env=h100", said=(
        "env=h100 needs CUDA >=11.8, but this torch", "was built without CUDA",
        "run with env=cpu_debug, or with env.on_mismatch=warn"))],
    # bootstrap dryrun's own flags
    "`--world 10 --nodes 4`": [Check("dryrun", ("--world", "10", "--nodes", "4"), (
        "--world 10 does not split into --nodes 4: every node runs the same number of ranks; use a world that is a "
        "multiple of 4, or another --nodes",), code=2)],
    "`--world 12 --ranks-per-node 8`": [Check("dryrun", ("--world", "12", "--ranks-per-node", "8"), (
        "--world 12 does not split into nodes of --ranks-per-node 8: use a world that is a multiple of 8",), code=2)],
    "`--nodelist 'gpu[001-004'`": [
        Check("dryrun", ("--world", "8", "--nodelist", "gpu[001-004"), ("--nodelist='gpu[001-004' has an unmatched "
                                                                        "'['",), code=2),
        Check("dryrun", ("--world", "8", "--nodelist", "gpu[4-1]"), ("The host range ['4-1'] in --nodelist runs "
                                                                     "backwards: write [1-4]",), code=2),
        Check("dryrun", ("--world", "8", "--nodelist", "gpu;rm -rf /"), (
            "--nodelist: 'gpu;rm -rf /' is not a host name (letters, digits, '.', '-', '_')",), code=2)],
    "`--nodelist 'n[0-9999999]'`": [Check("dryrun", ("--world", "8", "--nodelist", "n[0-9999999]"), (
        "--nodelist names 10000000 hosts; at most 262144 are read. Check the ranges.",), code=2)],
    "`--nodelist 'a,a'`": [
        Check("dryrun", ("--world", "2", "--nodelist", "a,a"), ("twice: name each node once.",), code=2),
        Check("dryrun", ("--world", "8", "--nodes", "8", "--nodelist", "gpu[001-008],gpu005"), (
            "--nodelist names gpu005 twice: name each node once.",), code=2)],
    "`--world abc`": [Check("dryrun", ("--world", "abc"), ("argument --world: 'abc' is not a whole number from 1 to "
                                                           "262144; write --world 8",), code=2)],
    "`--launcher jsrun`": [Check("dryrun", ("--world", "2", "--launcher", "jsrun"), (
        "argument --launcher: invalid choice: 'jsrun' (choose from 'torchrun', 'slurm', 'submitit', 'mpi', "
        "'kubeflow', 'ray', 'lightning', 'env')",), code=2)],
    "`env=auto`": [Check("dryrun", ("--world", "2", "env=auto"), (
        "env=auto picks its preset from the hardware it starts on, which a dry run does not have: name the target's "
        "preset (env=h100).",), code=2)],
}


def _rows() -> List[Tuple[str, str, str]]:
    """(input, caught, message) of every row of the section's tables; the dry run's table has no "caught"."""
    section = PAGE.read_text().split("## Rejected inputs", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith(("| input |", "|---")):
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows.append((cells[0], cells[1] if len(cells) == 3 else "bootstrap dryrun, exit 2", cells[-1]))
    return rows


def _keyed(cell: str) -> str:
    matches = [key for key in ROWS if cell.startswith(key)]
    assert len(matches) == 1, f"docs/errors.md's row {cell[:80]!r} has {len(matches)} sets of checks here"
    return matches[0]


def test_every_row_has_its_checks_and_every_check_its_row():
    keys = [_keyed(cell) for cell, _, _ in _rows()]
    assert sorted(keys) == sorted(ROWS), set(ROWS) - set(keys)


def _plain(text: str) -> str:
    return text.replace("`", "")


def _compose_message(overrides, tmp_path) -> str:
    """What Hydra prints for a config it cannot compose: its error, then the error's cause (run_and_report)."""
    from hydra import compose, initialize_config_dir

    from bad_inputs import user_conf

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        try:
            compose(config_name="config", overrides=[f"hydra.searchpath=[file://{user_conf(tmp_path)}]", *overrides])
        except Exception as error:  # noqa: BLE001 - read, not raised
            return f"{error}\n{error.__cause__ or ''}"
    return ""


def _run(check: Check, tmp_path: Path, monkeypatch, doctor_here, capsys) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    capsys.readouterr()
    if check.how == "value":
        return check.args[0](tmp_path)
    if check.how == "job":
        with monkeypatch.context() as patch:  # this check's launcher variables, and no other check's
            for name, value in (check.env or {}).items():
                patch.setenv(name, value)
            said = job_refusal(tmp_path, list(check.args))
        if said.startswith("compose: "):  # Hydra's own refusal: what it prints, its cause with it
            return _compose_message(list(check.args), tmp_path)
        (record,) = (tmp_path / "out").glob("bootstrap*.json")  # a refusal at the start leaves its record
        assert json.loads(record.read_text())["job"]["status"] == "check_failed"
        return said
    if check.how == "doctor":
        args = [str(tmp_path / "FILE") if a == "FILE" else a for a in check.args]
        answer = doctor_here(*args, cwd=tmp_path, env=clean_env(**(check.env or {})))
        assert answer.returncode == (1 if check.code is None else check.code), answer.stderr
        return answer.stderr.replace(str(tmp_path / "FILE"), "FILE")
    if check.how == "dryrun":
        from bootstrap.cli import dryrun

        with monkeypatch.context() as patch:
            for name, value in (check.env or {}).items():
                patch.setenv(name, value)
            try:
                code = dryrun.main(["--out", str(tmp_path / "dry"), "--no-mesh", *check.args])
            except SystemExit as stop:  # argparse's own refusals
                code = stop.code
        assert code == check.code
        return capsys.readouterr().err
    raise AssertionError(check.how)


def _held(check: Check) -> None:
    path, _, name = check.args[0].partition("::")
    tree = ast.parse((ROOT / path).read_text())
    assert name in {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}, check.args[0]
    source = set(re.findall(r"[A-Za-z_]{4,}", "\n".join(p.read_text() for p in (ROOT / "bootstrap").rglob("*.py"))))
    for words in check.said:  # the message is made in the package (torch's own words are torch's)
        if not words.startswith("ValueError: The value of TORCH_DISTRIBUTED_DEBUG"):
            assert set(re.findall(r"[A-Za-z_]{4,}", words)) <= source, words


@pytest.mark.parametrize("key", list(ROWS))
def test_each_row_is_what_the_code_says(key, tmp_path, monkeypatch, doctor_here, capsys):
    (cell, caught, message), = [row for row in _rows() if row[0].startswith(key)]
    for check in ROWS[key]:
        for words in check.said:  # the row shows these words, as written
            assert _plain(words) in _plain(f"{cell} {message}"), f"{key}: the row does not say {words!r}"
        if check.how == "held":
            _held(check)
            continue
        said = _run(check, tmp_path / f"check{ROWS[key].index(check)}", monkeypatch, doctor_here, capsys)
        for words in check.said:  # and the code says them
            assert _plain(words) in _plain(said), f"{key}: {words!r} not in {said[:600]!r}"
        if check.how == "job":  # where the row says it is caught
            assert caught.startswith("compose") == (_plain(check.said[0]) in _compose_message(
                list(check.args), tmp_path / "compose")), (key, caught)
