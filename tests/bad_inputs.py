"""Inputs the bootstrap must refuse, each with what its message must say: fed in-process
(tests/unit/test_train_stub.py) and through the real train_stub.py (tests/e2e/test_train_stub.py)."""

from pathlib import Path

BAD_PRESET_FILES = {
    "bad_name_equals": ('vars:\n  "BAD=NAME": 1\n', "env.vars.BAD=NAME"),
    "bad_name_space": ('vars:\n  "BAD NAME": 1\n', "env.vars.BAD NAME"),
    "nul_byte": ('vars:\n  HAS_NUL: "a\\0b"\n', "env.vars.HAS_NUL contains a NUL byte"),
}
TORCHRUN_RANK2_OF_2 = {"TORCHELASTIC_RUN_ID": "demo", "RANK": "2", "WORLD_SIZE": "2", "LOCAL_RANK": "0",
                       "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
MULTI_NODE_NO_MASTER = {"RANK": "0", "WORLD_SIZE": "4", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2",
                        "MASTER_PORT": "29500"}
MPI_RANK2_OF_2 = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
                  "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
MPI_TWO_NODES_NO_MASTER = {"PMI_RANK": "0", "PMI_SIZE": "4", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2"}
KUBEFLOW_POD_OF_TWO = {"RANK": "1", "WORLD_SIZE": "4", "MASTER_ADDR": "job-master-0", "MASTER_PORT": "23456",
                       "PET_NNODES": "2", "PET_NPROC_PER_NODE": "2", "PET_NODE_RANK": "1"}
WORLD_WITHOUT_PORT = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
# Launcher evidence that contradicts itself: a torchrun variable in a world torchrun did not start, a Ray
# Train worker's variables without Ray's group, submitit's mark without its job.
STRAY_AGENT_STORE = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
                     "TORCHELASTIC_USE_AGENT_STORE": "True"}
RAY_WORKER_WITHOUT_GROUP = {"RAY_RAYLET_PID": "4242", "RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0",
                            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
SUBMITIT_WITHOUT_JOB = {"SUBMITIT_EXECUTOR": "slurm"}
SLURM_RESTARTED_ODDLY = {"SLURM_JOB_ID": "12", "SLURM_RESTART_COUNT": "x"}  # a batch job's count of requeues
NO_ENV = {}
BAD_INPUTS = [  # (overrides, launcher variables, what the message must contain)
    (["env=nope"], NO_ENV, "env/nope"),
    (["env.threds.intra_op=2"], NO_ENV, "env.threds"),
    # Hydra's own hint for the line above: '+' adds the key, and only the final config's check refuses it
    (["+env.threds.intra_op=2"], NO_ENV, "env.threds: the preset has no such setting"),
    (["+env.torch.determinstic=true"], NO_ENV, "Did you mean env.torch.deterministic?"),
    (["env.threads.intra_op=abc"], NO_ENV, "env.threads.intra_op"),
    (["env.threads.intra_op=0"], NO_ENV, "env.threads.intra_op"),
    (["env.threads.inter_op=-1"], NO_ENV, "env.threads.inter_op"),
    (["env.seed=-1"], NO_ENV, "env.seed"),
    (["env.seed=abc"], NO_ENV, "env.seed"),
    (["env.on_mismatch=maybe"], NO_ENV, "env.on_mismatch"),
    (["env.distributed.agree=maybe"], NO_ENV, "env.distributed.agree"),
    (["env.requires.torch='>>2'"], NO_ENV, "env.requires.torch"),
    (["+env.vars.LISTED=[1,2]"], NO_ENV, "env.vars.LISTED"),
    (["+env.vars.NESTED={a:1}"], NO_ENV, "env.vars.NESTED"),
    (["env.distributed.mesh={dp:2}", "env.distributed.init=always"], NO_ENV,
     "env.distributed.mesh: dp(2) = 2 != WORLD_SIZE(1)"),
    (["env.distributed.timeout_s=0"], NO_ENV, "env.distributed.timeout_s"),
    (["env.preflight.mode=maybe"], NO_ENV, "env.preflight.mode"),
    (["env.preflight.max_skew=1"], NO_ENV, "env.preflight.max_skew=1.0 must be above 1"),
    (["env.preflight.seconds=900"], NO_ENV, "env.preflight.seconds=900.0 must be positive and at most "
                                            "env.distributed.timeout_s (600)"),
    (["env.preflight.sizes_mb=[]"], NO_ENV, "env.preflight.sizes_mb=[] must list 1 to 8 message sizes"),
    (["env.preflight.seconds=0.1", "env.preflight.sizes_mb=[4096]"], NO_ENV,
     "env.preflight.sizes_mb=[4096.0] cannot be all_reduced 6 times each within env.preflight.seconds=0.1"),
    (["env/fabric=nope"], NO_ENV, "env/fabric/nope"),
    (["env.fabric.name=nope"], NO_ENV, "env.fabric.name"),
    (["env/fabric=gcp_tcpxo", "env.fabric.profile=bootstrap-test-no-such-profile.sh"], NO_ENV,
     "env.fabric.profile: bootstrap-test-no-such-profile.sh was not found"),
    (["env.provenance.seconds=900"], NO_ENV, "env.provenance.seconds=900.0 must be positive and at most "
                                             "env.distributed.timeout_s (600)"),
    (["env.nodes.on_bad=maybe"], NO_ENV, "env.nodes.on_bad"),
    (["env.nodes.exclude_ttl_h=0"], NO_ENV, "env.nodes.exclude_ttl_h=0.0 must be positive hours"),
    (["env.nodes.max_requeues=-1"], NO_ENV, "env.nodes.max_requeues=-1 must be a count in [0, 100]"),
    (["env.nodes.ignore=[node3,-x]"], NO_ENV, "'-x' is not a node's name"),
    ([], SLURM_RESTARTED_ODDLY, "SLURM_RESTART_COUNT='x' is not a whole number"),
    ([], TORCHRUN_RANK2_OF_2, "env.distributed: torchrun: rank 2 is outside world size 2"),
    ([], MULTI_NODE_NO_MASTER, "needs MASTER_ADDR"),
    ([], WORLD_WITHOUT_PORT, "env.distributed: env: a world of 2 ranks needs a rendezvous port"),
    ([], MPI_RANK2_OF_2, "env.distributed: mpi: rank 2 is outside world size 2"),
    # an MPI's rank and size without the local two mpirun sets with them (issue 45): they trained as one process
    ([], {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2"}, "env.distributed: mpi: rank 2 is outside world "
                                                                     "size 2"),
    ([], {"PMI_RANK": "0", "PMI_SIZE": "2"}, "mpi: a world of 2 ranks (PMI_RANK=0, PMI_SIZE=2, without"),
    ([], MPI_TWO_NODES_NO_MASTER, "MPI gives no master address; pass it with mpirun -x MASTER_ADDR"),
    ([], KUBEFLOW_POD_OF_TWO, "RANK=1 is the pod's index, not a process rank. Start the processes with torchrun"),
    ([], STRAY_AGENT_STORE, "TORCHELASTIC_USE_AGENT_STORE=True says torchrun's agent hosts the ranks' store, but "
                            "torchrun did not start this process"),
    ([], RAY_WORKER_WITHOUT_GROUP, "RAY_RAYLET_PID with RANK=0 and WORLD_SIZE=2 say this is rank 0 of 2"),
    ([], SUBMITIT_WITHOUT_JOB, "SUBMITIT_EXECUTOR=slurm says submitit started this process, but submitit cannot "
                               "read its job (SLURM_JOB_ID is not set)"),
] + [([f"env={name}"], NO_ENV, fragment) for name, (_, fragment) in BAD_PRESET_FILES.items()]


def user_conf(tmp_path: Path) -> Path:
    """A config directory holding the broken presets of BAD_PRESET_FILES, each extending cpu_debug."""
    user_conf = tmp_path / "user_conf"
    (user_conf / "env").mkdir(parents=True, exist_ok=True)
    for name, (body, _) in BAD_PRESET_FILES.items():
        (user_conf / "env" / f"{name}.yaml").write_text("defaults:\n  - cpu_debug\n  - _self_\n" + body)
    return user_conf

# `bootstrap dryrun`'s flags: each refused with one line naming the flag and the fix, exit 2 (tests/unit/test_dryrun.py)
DRYRUN_BAD_FLAGS = [  # (flags, what the message must contain)
    (["--world", "10", "--nodes", "4"], "--world 10 does not split into --nodes 4"),
    (["--world", "12", "--ranks-per-node", "8"], "--world 12 does not split into nodes of --ranks-per-node 8"),
    (["--world", "8", "--nodelist", "gpu[001-004"], "--nodelist='gpu[001-004' has an unmatched '['"),
    (["--world", "8", "--nodelist", "gpu[4-1]"], "runs backwards"),
    (["--world", "8", "--nodelist", "gpu;rm -rf /"], "is not a host name"),
    (["--world", "8", "--nodelist", "n[0-9999999]"], "--nodelist names 10000000 hosts; at most 262144 are read"),
    # a node named twice anywhere in the list, not only among the first --nodes names (issue 45)
    (["--world", "2", "--nodelist", "a,a"], "--nodelist names a twice: name each node once."),
    (["--world", "8", "--nodes", "8", "--nodelist", "gpu[001-008],gpu005"],
     "--nodelist names gpu005 twice: name each node once."),
    (["--world", "4", "--nodelist", "gpu[1-3],gpu[2-4]"], "--nodelist names gpu2 twice"),
    (["--world", "8", "--launcher", "jsrun"], "argument --launcher: invalid choice: 'jsrun'"),
    (["--world", "abc"], "argument --world: 'abc' is not a whole number from 1 to 262144"),
    (["--world", "0"], "argument --world: '0' is not a whole number"),
    (["--world", "+8"], "argument --world: '+8' is not a whole number"),
    (["--world", "٨"], "is not a whole number"),  # an Arabic-Indic eight: int() takes it, the strict reader does not
    (["--world", "99999999999999999999"], "is not a whole number"),
    (["--world", "8", "--cpus-per-node", "-4"], "argument --cpus-per-node"),
    (["--world", "8", "--nodes", "2", "--ranks-per-node", "4"], "not allowed with argument"),
    (["--world", "8", "env=auto"], "env=auto picks its preset from the hardware"),
    (["--world", "8", "env=nope"], "unknown preset 'nope'"),
]


def job_refusal(tmp_path: Path, overrides) -> str:
    """What refuses the job, in this process: Hydra while composing train_stub's config (``compose: ...``), else the
    real callback at job start (``job start: ...``, its SystemExit's message), its output directory
    ``tmp_path / "out"``. The environment is the test's (monkeypatch it first)."""
    import pytest
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from bootstrap.adapter.callback import BootstrapCallback

    from conftest import ROOT

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        try:
            cfg = compose(config_name="config", return_hydra_config=True, overrides=[
                f"hydra.searchpath=[file://{user_conf(tmp_path)}]", f"hydra.runtime.output_dir={tmp_path / 'out'}",
                *overrides])
        except (HydraException, OmegaConfBaseException) as error:
            return f"compose: {error}"
        with pytest.raises(SystemExit) as stopped:
            BootstrapCallback().on_job_start(config=cfg)
    return f"job start: {stopped.value.code}"
