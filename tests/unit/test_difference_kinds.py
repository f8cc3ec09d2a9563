"""What a difference between ranks in each known variable changes: the table's ``agree`` kinds, renamed names
kept in step with their new ones, torch's other names, and :func:`known_set` on plain mappings."""
import pytest

from bootstrap.variables import difference_kinds, table, torch_names

ROWS = [var for group in table.GROUPS for var in group]


def test_every_row_has_a_kind_and_every_kind_says_what_agree_error_does():
    assert [v.name for v in ROWS if v.agree not in table.AGREE_KINDS] == []
    assert set(difference_kinds.ON_ERROR) == set(table.AGREE_KINDS) == set(table.AGREE_MEANINGS)
    assert difference_kinds.STOPPING == {"collective"}
    assert set(table.GROUP_AGREE) == {v.name for v in ROWS}  # each row knows its group's default


def test_a_group_must_name_its_kind_and_a_row_only_a_real_one(monkeypatch):
    monkeypatch.setattr(table, "GROUP_AGREE", {})  # the maker records each row it makes: not these
    with pytest.raises(TypeError):
        table.rows(library="x")  # no agree=
    row = table.rows(library="x", agree="speed")
    assert row("SOME_NAME").agree == "speed" and row("OTHER_NAME", agree="logging").agree == "logging"
    assert table.GROUP_AGREE == {"SOME_NAME": "speed", "OTHER_NAME": "speed"}
    with pytest.raises(ValueError, match="SOME_NAME: agree='often'"):
        row("SOME_NAME", agree="often")


@pytest.mark.parametrize("name, kind", [
    ("TORCH_DISTRIBUTED_DEBUG", "collective"),  # the hang of issue 23: rank 1 wrapped its group, rank 0 did not
    ("NCCL_ALGO", "collective"), ("NCCL_PROTO", "collective"), ("NCCL_SOCKET_IFNAME", "collective"),
    ("NCCL_IB_HCA", "collective"), ("NCCL_P2P_DISABLE", "collective"), ("NCCL_BUFFSIZE", "collective"),
    ("TORCH_NCCL_BLOCKING_WAIT", "collective"), ("MASTER_ADDR", "per_rank"), ("WORLD_SIZE", "per_rank"),
    ("NCCL_DEBUG", "logging"), ("NCCL_DEBUG_SUBSYS", "logging"), ("NCCL_DEBUG_FILE", "logging"),
    ("TORCH_NCCL_ENABLE_TIMING", "logging"), ("TORCH_CPP_LOG_LEVEL", "logging"), ("TORCH_FR_BUFFER_SIZE", "logging"),
    ("TORCH_FR_DUMP_TEMP_FILE", "logging"), ("OMP_DISPLAY_ENV", "logging"),
    ("OMP_NUM_THREADS", "speed"), ("MKL_NUM_THREADS", "speed"), ("PYTORCH_CUDA_ALLOC_CONF", "speed"),
    ("NCCL_SOCKET_SNDBUF", "speed"),
    ("CUBLAS_WORKSPACE_CONFIG", "numerics"), ("NVIDIA_TF32_OVERRIDE", "numerics"), ("MKL_CBWR", "numerics"),
    ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "numerics"),
    ("CUDA_VISIBLE_DEVICES", "per_rank"), ("RANK", "per_rank"), ("LOCAL_RANK", "per_rank"),
    ("TORCHELASTIC_ERROR_FILE", "per_rank"),
])
def test_key_variables_have_the_kind_the_issue_asks_for(name, kind):
    assert difference_kinds.kind_of(name) == kind


def renames_that_differ(rows):
    """'OLD (kind) -> NEW (kind)' for each renamed row whose kind is not its new name's."""
    by_name = {v.name: v for v in rows}
    return [f"{v.name} ({v.agree}) -> {v.renamed_to} ({by_name[v.renamed_to].agree})" for v in rows
            if v.renamed_to in by_name and by_name[v.renamed_to].agree != v.agree]


def test_a_renamed_name_has_its_new_names_kind():
    renamed = [v for v in ROWS if v.renamed_to]
    assert len(renamed) >= 12 and all(v.renamed_to in {r.name for r in ROWS} for v in renamed)
    assert renames_that_differ(ROWS) == []


def test_a_renamed_name_with_another_kind_is_found():
    planted = [v._replace(agree="logging") if v.name == "NCCL_BLOCKING_WAIT" else v for v in ROWS]
    assert renames_that_differ(planted) == ["NCCL_BLOCKING_WAIT (logging) -> TORCH_NCCL_BLOCKING_WAIT (collective)"]


def test_torchs_other_names_warn_as_numerics_unless_they_move_collectives():
    others = torch_names.TORCH_MENTIONED | torch_names.TORCH_COMPILE
    assert difference_kinds.TORCH_OTHER_COLLECTIVE <= others  # no stale name
    assert {difference_kinds.kind_of(n) for n in others - difference_kinds.TORCH_OTHER_COLLECTIVE} == {"numerics"}
    assert difference_kinds.kind_of("TORCH_COMPILER_COLLECTIVES") == "collective"


@pytest.mark.parametrize("name", ["NCCL_MAX_RW_PAIRS", "TVM_NUM_THREADS", "NCCL_NOT_A_VARIABLE", "HOME", "PATH",
                                  "nccl_algo"])
def test_a_name_no_known_release_reads_has_no_kind(name):
    assert difference_kinds.kind_of(name) is None


def test_known_set_keeps_known_names_sorted_and_leaves_out_unknown_and_per_rank_ones():
    environ = {"PATH": "/usr/bin", "OMP_NUM_THREADS": "4", "RANK": "1", "LOCAL_RANK": "1",
               "CUDA_VISIBLE_DEVICES": "1", "NCCL_DEBUG": "INFO", "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
               "NCCL_MAX_RW_PAIRS": "2", "TORCHINDUCTOR_FREEZING": "1", "HOSTNAME": "node-b"}
    got = difference_kinds.known_set(environ)
    assert got == {"NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": "4", "TORCHINDUCTOR_FREEZING": "1",
                   "TORCH_DISTRIBUTED_DEBUG": "DETAIL"}
    assert list(got) == sorted(got)
    assert difference_kinds.known_set({}) == {} and difference_kinds.known_set({"HOME": "/root"}) == {}


def test_every_name_known_set_can_keep_is_one_kind_can_compare():
    assert difference_kinds.known_set({v.name: "1" for v in ROWS}).keys() == {
        v.name for v in ROWS if v.agree != "per_rank"}
