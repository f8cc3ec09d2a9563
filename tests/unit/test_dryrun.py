"""``bootstrap dryrun`` in-process: known-bad configs are found (each a finding naming the ranks and the fix),
bad flags and hostile node lists are refused with one line and exit 2, and the per-rank variables are each
launcher's (tests/e2e/test_dryrun.py holds prediction against reality with real runs)."""
import json

import pytest

from bad_inputs import DRYRUN_BAD_FLAGS
from bootstrap.cli import dryrun as cli
from bootstrap.dryrun.world import MAX_ENTRIES, sample_ranks
from bootstrap.distributed import launcher, rankvars


def _dryrun(tmp_path, capsys, *args, mesh=False):
    code = cli.main(["--out", str(tmp_path), *([] if mesh else ["--no-mesh"]), *args])
    out, err = capsys.readouterr()
    written = tmp_path / "dryrun.json"
    return code, out, err, json.loads(written.read_text()) if written.is_file() else None


def _kinds(document):
    return [finding["kind"] for finding in document["summary"]["findings"]]


def test_a_clean_world_finds_nothing_and_keeps_every_rank(tmp_path, capsys):
    code, out, err, doc = _dryrun(tmp_path, capsys, "--world", "16", "--nodes", "2", "--cpus-per-node", "16",
                                  "env=cpu_debug", mesh=True)
    assert (code, err) == (0, ""), out
    assert len(out.splitlines()) < 20 and "findings         none" in out
    ranks = {entry["distributed"]["rank"]: entry for entry in doc["ranks"]}
    assert sorted(ranks) == list(range(16))
    assert ranks[9]["distributed"]["node_rank"] == 1 and ranks[9]["distributed"]["local_rank"] == 1
    assert ranks[9]["mesh_coordinates"] == {"dp": 9} and ranks[8]["mesh_coordinates_torch"] == {"dp": 8}
    assert ranks[9]["seed"]["data_seed"] == ranks[9]["seed"]["value"] + 9  # seed_offset: rank
    assert set(ranks[0]) >= {"distributed", "threads", "vars", "seed"}  # the report's own sections


def test_a_mesh_that_does_not_divide_the_world_is_found_naming_the_dimension(tmp_path, capsys):
    code, out, _, doc = _dryrun(tmp_path, capsys, "--world", "12", "--nodes", "2", "--cpus-per-node", "12",
                                "env=cpu_debug", "+env.distributed.mesh.tp=8")
    assert code == 1 and _kinds(doc) == ["mesh"]
    (finding,) = doc["summary"]["findings"]
    assert finding["ranks"] == "every rank" and "dp(-1) * tp(8) cannot fill WORLD_SIZE(12)" in finding["what"]


def test_torch_builds_the_mesh_at_size_and_places_the_sample_where_the_plan_does(tmp_path, capsys):
    code, out, _, doc = _dryrun(tmp_path, capsys, "--world", "64", "--ranks-per-node", "8", "--cpus-per-node", "64",
                                "env=cpu_debug", "+env.distributed.mesh.pp=2", "+env.distributed.mesh.tp=8",
                                mesh=True)
    assert code == 0, out
    ranks = {entry["distributed"]["rank"]: entry for entry in doc["ranks"]}
    for rank in (0, 8, 63):  # rank 0, the first of the second node, the last
        assert ranks[rank]["mesh_coordinates_torch"] == ranks[rank]["mesh_coordinates"]
    assert ranks[63]["mesh_coordinates"] == {"dp": 3, "pp": 1, "tp": 7}
    assert ranks[63]["seed"]["global_seed"] == ranks[0]["seed"]["value"] + 100  # seed + 100 * pp_rank


def test_a_tensor_parallel_dimension_across_nodes_is_found(tmp_path, capsys):
    code, _, _, doc = _dryrun(tmp_path, capsys, "--world", "32", "--ranks-per-node", "8", "--cpus-per-node", "32",
                              "env=cpu_debug", "+env.distributed.mesh.tp=16")
    assert code == 1 and _kinds(doc) == ["mesh"] and "tp(16) spans nodes" in doc["summary"]["findings"][0]["what"]


def test_oversubscribed_threads_are_found_by_how_much(tmp_path, capsys):
    code, out, _, doc = _dryrun(tmp_path, capsys, "--world", "32", "--nodes", "4", "--cpus-per-node", "48",
                                "env=cpu_debug", "env.threads.intra_op=12")
    assert code == 1 and _kinds(doc) == ["threads"]
    (finding,) = doc["summary"]["findings"]
    assert "96 intra-op threads on 48 CPUs (2x oversubscribed)" in finding["what"]
    assert "env.threads.intra_op=6" in finding["fix"] and "threads:" in out


def test_a_per_rank_variable_from_an_interpolation_makes_the_fingerprints_differ(tmp_path, capsys):
    code, out, _, doc = _dryrun(tmp_path, capsys, "--world", "16", "--nodes", "2", "--launcher", "slurm",
                                "--cpus-per-node", "16", "env=cpu_debug",
                                "+env.vars.NCCL_IB_HCA=mlx5_${oc.env:SLURM_LOCALID}")
    assert code == 1 and _kinds(doc) == ["fingerprint"]
    (finding,) = doc["summary"]["findings"]
    assert finding["ranks"] == "ranks 1-7, 9-15"  # the ranks whose local rank is not 0's
    assert "NCCL_IB_HCA (collective): mlx5_1 against rank 0's mlx5_0" in finding["what"]
    ranks = {entry["distributed"]["rank"]: entry for entry in doc["ranks"]}
    assert ranks[9]["vars"]["NCCL_IB_HCA"]["value"] == "mlx5_1"  # resolved from the rank's own variables


def test_a_nodelist_with_more_nodes_than_asked_is_found(tmp_path, capsys):
    code, _, _, doc = _dryrun(tmp_path, capsys, "--world", "16", "--nodes", "2", "--launcher", "slurm",
                              "--nodelist", "gpu[001-004]", "--cpus-per-node", "16", "env=cpu_debug")
    assert code == 1 and _kinds(doc) == ["nodelist"]
    assert "names 4 nodes for --nodes 2" in doc["summary"]["findings"][0]["what"]
    assert doc["summary"]["nodelist"] == "gpu[001-002]"


def test_ranks_without_a_gpu_are_named(tmp_path, capsys):
    code, _, _, doc = _dryrun(tmp_path, capsys, "--world", "16", "--nodes", "2", "--launcher", "slurm",
                              "--cpus-per-node", "96", "--gpus-per-node", "4", "env=h100")
    assert code == 1 and _kinds(doc) == ["devices"]
    assert doc["summary"]["findings"][0]["ranks"] == "ranks 4-7, 12-15"
    checks = doc["summary"]["checked_at_start_on_the_target"]
    assert "compute capability >= 9.0" in checks and "CUDA present (device=cuda)" in checks  # not failed here


@pytest.mark.parametrize("flags, fragment", DRYRUN_BAD_FLAGS, ids=[" ".join(f) for f, _ in DRYRUN_BAD_FLAGS])
def test_bad_flags_and_hostile_nodelists_get_one_line_and_exit_2(tmp_path, capsys, flags, fragment):
    with pytest.raises(SystemExit) as stopped:  # argparse's own refusals exit; the others return 2
        raise SystemExit(cli.main(["--out", str(tmp_path), "--no-mesh", *flags]))
    out, err = capsys.readouterr()
    assert stopped.value.code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and fragment in err, err
    assert "Traceback" not in err and not (tmp_path / "dryrun.json").exists()


def test_an_out_folder_that_cannot_be_written_gets_one_line_and_exit_2(tmp_path, capsys):
    taken = tmp_path / "a-file"
    taken.write_text("")
    code = cli.main(["--out", str(taken / "dryrun"), "--no-mesh", "--world", "2", "--nodes", "1",
                     "--cpus-per-node", "2"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"--out {taken / 'dryrun'}: " in err and "Traceback" not in err


@pytest.mark.parametrize("name", rankvars.LAUNCHERS)
def test_each_launchers_variables_are_detected_as_its_own_row(name):
    if name == "kubeflow":  # python started directly in each pod: one process a pod (else: tests below)
        layout = rankvars.Layout(name, 6, 1, tuple(f"pod{i}" for i in range(6)), job_id="99")
        launch = launcher.detect(rankvars.rank_vars(layout, 3))
        assert (launch.launcher, launch.rank, launch.node_rank, launch.world_size) == ("kubeflow", 3, 3, 6)
        return
    layout = rankvars.Layout(name, 3, 2, ("gpu7", "gpu8", "gpu10"), job_id="99")
    environ = {"MASTER_ADDR": "gpu7", **rankvars.rank_vars(layout, 3)} if name == "mpi" else \
        rankvars.rank_vars(layout, 3)
    launch = launcher.detect(environ, rankvars.submitit_answer(environ, layout.hosts),
                             group_exists=layout.maker.group_exists)
    assert launch.launcher == name
    assert (launch.rank, launch.local_rank, launch.node_rank, launch.world_size) == (3, 1, 1, 6)
    if name in ("slurm", "submitit"):
        assert environ["SLURM_TASKS_PER_NODE"] == "2(x3)" and environ["SLURM_NODELIST"] == "gpu[7-8,10]"
        assert environ["SLURM_LOCALID"] == "1"


def test_the_sample_is_bounded_and_holds_rank_0_the_last_and_the_second_nodes_first():
    for world, per_node in ((1024, 8), (16384, 8), (16384, 1), (262144, 8)):
        kept = sample_ranks(world, per_node)
        assert len(kept) <= MAX_ENTRIES and {0, world - 1, min(per_node, world - 1)} <= kept


def test_kubeflow_pods_of_several_processes_started_directly_are_the_jobs_own_refusal(tmp_path, capsys):
    code, _, _, doc = _dryrun(tmp_path, capsys, "--world", "8", "--nodes", "4", "--launcher", "kubeflow",
                              "--cpus-per-node", "8", "env=cpu_debug")
    assert code == 1 and _kinds(doc) == ["plan"]
    assert "Start the processes with torchrun inside the pod" in doc["summary"]["findings"][0]["what"]


def test_the_store_operations_of_the_phases_that_grow_with_n_add_up_to_the_stores_total(tmp_path, capsys):
    code, out, _, doc = _dryrun(tmp_path, capsys, "--world", "1024", "--nodes", "128", "--launcher", "slurm",
                                "--cpus-per-node", "96", "env=cpu_debug")
    scale = doc["summary"]["scale"]
    by_name = {phase["name"]: phase for phase in scale["phases"]}
    assert by_name["first_step"] == {"name": "first_step", "store_ops_per_rank": 1, "store_ops_rank0": 3}
    assert scale["store_ops_per_rank"] == 6 == sum(p.get("store_ops_per_rank", 0) for p in scale["phases"])
    assert scale["store_ops_total"] == 6 * 1024 + 2  # and rank 0's wait and read of every record
    assert "6 ops a rank, 6146 in all" in out and "first_step 1 store ops a rank (rank 0: 3)" in out


def test_without_out_it_writes_where_hydra_writes_in_a_folder_git_ignores_and_says_where(tmp_path, capsys,
                                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)  # a checkout: ./dryrun/ beside the sources showed in git status (issue 45)
    code = cli.main(["--no-mesh", "--world", "2", "--cpus-per-node", "2", "env=cpu_debug"])
    out = capsys.readouterr().out
    (written,) = tmp_path.glob("outputs/dryrun/*/*/dryrun.json")
    assert code == 0 and not (tmp_path / "dryrun").exists()
    assert f"wrote {written} (" in out.splitlines()[-1]  # its whole path, on the table's last line
    ignored = (tmp_path / "outputs" / "dryrun" / ".gitignore").read_text().splitlines()
    assert "*" in ignored  # git status and bootstrap diff RUN --here never see it
