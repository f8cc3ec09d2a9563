"""Issue 40: every version rule of the fabric rules at its boundaries, the stale warnings, the profile script's
guard, the doctor's suggestion on a fake /sys tree, and the in-job record of fabric findings that every rank gathers."""
import os
import stat

import pytest

from bootstrap.doors.errors import ConfigError
from bootstrap.fabric import nccl_log
from bootstrap.fabric import profile as fabric_profile
from bootstrap.fabric import rules as fabric_rules
from bootstrap.fabric import suggest as fabric_suggest
from bootstrap.preflight import fabric_check


@pytest.mark.parametrize("text, parts", [
    ("1.11.0-aws", (1, 11, 0)), ("1.4.0aws", (1, 4, 0)), ("2.19.3+cuda12.3", (2, 19, 3)), ("1.22", (1, 22, 0)),
    ("v1.13.2", (1, 13, 2)), ("aws", None), (None, None), ("", None),
])
def test_versions_are_read_from_what_the_plugins_and_nccl_print(text, parts):
    assert fabric_rules.version_tuple(text) == parts


@pytest.mark.parametrize("version, name", [
    ("1.12.99-aws", "AWS Libfabric"), ("1.13.0-aws", "Libfabric"), ("1.4.0aws", "AWS Libfabric"),
    ("1.14.0", "Libfabric"), (None, "Libfabric or AWS Libfabric"),
])
def test_aws_ofi_nccl_names_its_network_libfabric_from_1_13(version, name):
    assert fabric_rules.ofi_network_name(version) == name


@pytest.mark.parametrize("nccl, needed", [("2.20.5+cuda12.4", True), ("2.21.0", False), ("2.21.5+cuda12.4", False),
                                          ("2.18.3", True), (None, None)])
def test_nccl_selects_the_roce_gid_itself_from_2_21(nccl, needed):
    assert fabric_rules.gid_index_needed(nccl) is needed


@pytest.mark.parametrize("ofi, libfabric, holds", [
    ("1.6.9", "1.18.0", False), ("1.7.0", "1.17.9", False), ("1.7.0", "1.18.0", True), ("1.14.0", "1.22", True),
    (None, None, None), ("1.7.0", None, None), (None, "1.18.0", None),
])
def test_fi_efa_use_device_rdma_is_stale_from_aws_ofi_nccl_1_7_with_libfabric_1_18(ofi, libfabric, holds):
    rule = next(r for r in fabric_rules.STALE if r.name == "FI_EFA_USE_DEVICE_RDMA")
    assert fabric_rules.stale_rule_holds(rule, "1", ofi, libfabric) is holds


@pytest.mark.parametrize("name, value, ofi, holds", [
    ("NCCL_PROTO", "simple", "1.5.0", False), ("NCCL_PROTO", "Simple", "1.6.0", True),
    ("NCCL_PROTO", "LL128", "1.14.0", False), ("FI_PROVIDER", "efa", "1.5.9", False),
    ("FI_PROVIDER", "efa", "1.6.0", True), ("FI_PROVIDER", "efa", None, None),
    ("RDMAV_FORK_SAFE", "1", None, None), ("RDMAV_FORK_SAFE", "1", "1.0.0", True),
    ("FI_EFA_FORK_SAFE", "1", "1.11.0-aws", True),
])
def test_the_aws_ofi_nccl_stale_rules_at_their_boundaries(name, value, ofi, holds):
    rule = next(r for r in fabric_rules.STALE if r.name == name)
    assert fabric_rules.stale_rule_holds(rule, value, ofi, None) is holds


def test_before_the_group_a_stale_variable_is_a_warning_with_its_rule_and_source():
    [(line, definite)] = fabric_rules.stale("aws_efa", {"FI_EFA_USE_DEVICE_RDMA": "1", "PATH": "/bin"})
    assert not definite
    assert line.startswith("FI_EFA_USE_DEVICE_RDMA=1 is stale for env/fabric=aws_efa: 'Do not set for libfabric>=1.18.0")
    assert "aws-ofi-nccl doc/efa-env-var.md" in line and "not yet known" in line
    assert fabric_rules.stale("ib", {"FI_EFA_USE_DEVICE_RDMA": "1"}) == []  # another fabric's rule
    [(fastrak, _)] = fabric_rules.stale("gcp_tcpxo", {"NCCL_FASTRAK_IFNAME": "eth1", "NCCL_FASTRAK_NUM_FLOWS": "2"})
    assert "NCCL_FASTRAK_IFNAME, NCCL_FASTRAK_NUM_FLOWS set by hand" in fastrak and "NVIDIA/aicr#422" in fastrak


def test_a_finding_quotes_nccl_visibly_and_masks_a_secret():
    quoted = fabric_rules.quoted("NET/Socket : Using [0]eth0\x1b[2J token=hf_abcdefghijklmnopqrstuvwxyz")
    assert "\x1b" not in quoted and quoted[0] in "'\"" and "hf_abcdefghijklmnopqrstuvwxyz" not in quoted


def _process(**fields) -> nccl_log.Process:
    return nccl_log.Process(host="h1", pid=7, rank=3, **fields)


def test_a_process_s_rules_one_by_one():
    efa = dict(networks=["Libfabric"], network_line="Using network Libfabric", ofi_version="1.14.0")
    tcp = _process(**efa, provider="tcp;ofi_rxm", provider_line="NET/OFI Selected provider is tcp;ofi_rxm")
    [finding] = fabric_rules.judge("aws_efa", [tcp], {}, True)
    assert finding.message.startswith("rank 3 on h1 (pid 7): NCCL said 'NET/OFI Selected provider is tcp;ofi_rxm'")
    assert "security group must allow all traffic to itself" in finding.message
    few = _process(**efa, provider="efa", provider_line="NET/OFI Selected provider is efa (found 8 nics)", nics=8,
                   platform="p5.48xlarge")
    [finding] = fabric_rules.judge("aws_efa", [few], {}, True)
    assert "p5.48xlarge, which has 32 EFA interfaces" in finding.message
    enough = _process(**efa, provider="efa", nics=32, platform="p5.48xlarge",
                      channel_lines=["Channel 00/0 : 0[0] -> 8[0] [send] via NET/Libfabric/0/GDRDMA"],
                      channels=["NET/Libfabric/0/GDRDMA"])
    assert fabric_rules.judge("aws_efa", [enough], {}, True) == []
    between = _process(networks=["IB"], network_line="Using network IB",
                       channel_lines=["Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0"])
    [finding] = fabric_rules.judge("ib", [between], {}, True)
    assert "sockets between nodes" in finding.message
    assert fabric_rules.judge("ib", [between], {}, False) == []  # one node: no network between nodes to judge
    stopped = _process(failures=["NET/Plugin: Could not find: libnccl-net.so.", "Failed to initialize any NET plugin"])
    [finding] = fabric_rules.judge("gcp_tcpxo", [stopped], {}, True)
    assert "'Failed to initialize any NET plugin'" in finding.message and "NCCL_NET names a network" in finding.message


def test_roce_on_an_nccl_older_than_2_21_needs_the_gid_index():
    process = _process(networks=["IB"], network_line="Using network IB", ib_devices=[("mlx5_0", "RoCE")],
                       nccl_version="2.20.5+cuda12.4")
    [finding] = fabric_rules.judge("roce", [process], {}, True)
    assert "NCCL_IB_GID_INDEX=3" in finding.message
    assert fabric_rules.judge("roce", [process], {"NCCL_IB_GID_INDEX": "3"}, True) == []
    process.nccl_version = "2.21.5+cuda12.4"
    assert fabric_rules.judge("roce", [process], {}, True) == []


def test_every_rank_s_record_of_fabric_findings_round_trips_and_a_bad_one_is_a_finding():
    lines = ["rank 1 on h: NCCL said 'Using network Socket'; expected IB: x" * 30, "é" * 400, "third", "fourth"]
    data = fabric_check.pack(lines)
    assert len(data) == fabric_check.LAYOUT.size
    found = fabric_check.unpack(1, data)
    assert len(found) == fabric_check.MAX_LINES and all(f.ranks == [1] and f.kind == "fabric" for f in found)
    assert found[1].message.startswith("é")  # cut on a character, never inside one
    assert fabric_check.unpack(2, fabric_check.pack([])) == []
    [short] = fabric_check.unpack(3, data[:100])
    assert "rank 3" in short.message and short.ranks == [3]
    other = bytearray(data)
    other[0] = 9
    [version] = fabric_check.unpack(4, bytes(other))
    assert "another version (9)" in version.message


@pytest.mark.parametrize("environ, why", [
    ({}, "below INFO"), ({"NCCL_DEBUG": "WARN"}, "below INFO"),
    ({"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "COLL"}, "leaves out INIT and NET"),
    ({"NCCL_DEBUG": "INFO"}, "NCCL_DEBUG_FILE is yours and unset"),
    ({"NCCL_DEBUG": "INFO", "NCCL_DEBUG_FILE": "/tmp/nccl.log"}, "names no %p"),
])
def test_the_user_s_own_nccl_debug_is_read_only_where_it_says_what_the_rules_need(environ, why):
    path, reason = fabric_check.user_log(environ, 12, "node1.example")
    assert path is None and why in reason


def test_the_user_s_own_nccl_debug_file_is_this_process_s():
    environ = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,COLL", "NCCL_DEBUG_FILE": "/logs/nccl.%h.%p.txt"}
    path, reason = fabric_check.user_log(environ, 12, "node1.example")
    assert str(path) == "/logs/nccl.node1.12.txt" and reason == ""


# -- gcp_tcpxo's profile: run once, only a root-owned script nobody else may write --------------------------------

PROFILE = "nccl-env-profile.sh"


def _profile(folder, body: str, mode: int = 0o755):
    script = folder / PROFILE
    script.write_text(body)
    script.chmod(mode)
    return script


@pytest.mark.parametrize("mode, why", [(0o775, "group or others may write it"), (0o757, "group or others")])
def test_a_profile_others_may_write_is_not_run(tmp_path, mode, why):
    marker = tmp_path / "ran"
    _profile(tmp_path, f"touch {marker}\n", mode)
    with pytest.raises(ConfigError, match=why):
        fabric_profile.exports(PROFILE, {"NCCL_LIB_DIR": str(tmp_path)}, 10)
    assert not marker.exists()


def test_a_profile_of_another_user_or_a_link_is_not_run(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("making a file of another user needs root")
    marker = tmp_path / "ran"
    script = _profile(tmp_path, f"touch {marker}\n")
    os.chown(script, 4321, 4321)
    with pytest.raises(ConfigError, match="owned by uid 4321, not root"):
        fabric_profile.exports(PROFILE, {"NCCL_LIB_DIR": str(tmp_path)}, 10)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / PROFILE).symlink_to(script)
    with pytest.raises(ConfigError, match="it is a link"):
        fabric_profile.exports(PROFILE, {"NCCL_LIB_DIR": str(linked)}, 10)
    assert not marker.exists()


def test_no_profile_stops_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(fabric_profile, "DIRECTORIES", (str(tmp_path / "none"),))
    with pytest.raises(ConfigError, match="install the GPUDirect-TCPXO plugin .* set NCCL_LIB_DIR"):
        fabric_profile.exports(PROFILE, {"LD_LIBRARY_PATH": str(tmp_path)}, 10)


def _device(root, name, layer=None, driver=None):
    device = root / "sys" / "class" / "infiniband" / name
    (device / "ports" / "1").mkdir(parents=True)
    if layer:
        (device / "ports" / "1" / "link_layer").write_text(f"{layer}\n")
    if driver:
        (device / "device").mkdir()
        target = root / "sys" / "bus" / "pci" / "drivers" / driver
        target.mkdir(parents=True)
        (device / "device" / "driver").symlink_to(target)


@pytest.mark.parametrize("devices, fabric", [
    ([("mlx5_0", "InfiniBand", None), ("mlx5_1", "InfiniBand", None)], "ib"),
    ([("mlx5_0", "Ethernet", None)], "roce"),
    ([("rdmap16s27", "Unspecified", "efa")], "aws_efa"),
])
def test_the_doctor_suggests_a_fabric_from_the_rdma_devices(tmp_path, devices, fabric):
    for name, layer, driver in devices:
        _device(tmp_path, name, layer, driver)
    suggested, why = fabric_suggest.suggest(tmp_path, {})
    assert suggested == fabric and devices[0][0] in why


def test_the_doctor_suggests_a_fabric_from_the_plugins_on_the_library_path(tmp_path):
    assert fabric_suggest.suggest(tmp_path, {}) is None
    ofi = tmp_path / "opt" / "amazon" / "ofi-nccl" / "lib"
    ofi.mkdir(parents=True)
    (ofi / "libnccl-net-ofi.so").write_bytes(b"")
    assert fabric_suggest.suggest(tmp_path, {})[0] == "aws_efa"
    tcpxo = tmp_path / "plugin"
    tcpxo.mkdir()
    (tcpxo / "nccl-env-profile.sh").write_text("")
    assert fabric_suggest.suggest(tmp_path, {"LD_LIBRARY_PATH": "/plugin"})[0] == "gcp_tcpxo"


def test_a_profile_script_is_read_only_as_the_owner_allows(tmp_path):
    script = _profile(tmp_path, "true\n", 0o700)
    assert stat.S_IMODE(script.stat().st_mode) == 0o700  # the guard reads the mode of the open file (fstat)


# -- inside a job: which log a rank reads, and its own findings -----------------------------------------------------

def _request(tmp_path, **fields):
    from bootstrap.preflight.request import Request

    return Request(mode="error", seconds=5.0, max_skew=2.0, network="ib", backend="nccl", rank=5, host="node7",
                   fabric="ib", fabric_gdr=True, **fields)


def test_a_rank_reads_the_log_the_bootstrap_pointed_nccl_at_and_judges_it_as_its_own(tmp_path):
    log = tmp_path / nccl_log.log_name(os.getpid())
    log.write_bytes(b"x:1:2 [0] NCCL INFO NET/IB : No device found.\nx:1:2 [0] NCCL INFO Using network Socket\n")
    request = _request(tmp_path, nccl_log_dir=tmp_path)
    text, why = fabric_check.own_log(request, {})
    assert why is None and "Using network Socket" in text
    [line] = fabric_check.own_findings(request, text, {}, spans_nodes=True)
    assert line.startswith("rank 5 on node7 (pid 1): NCCL said 'NET/IB : No device found.' (then 'Using network Socket')")


def test_a_rank_reads_the_user_s_own_nccl_debug_file_or_says_why_not(tmp_path):
    request = _request(tmp_path)
    (tmp_path / f"mine.{os.getpid()}.log").write_bytes(b"x:1:2 [0] NCCL INFO Using network IB\n")
    text, why = fabric_check.own_log(request, {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_FILE": str(tmp_path / "mine.%p.log")})
    assert why is None and fabric_check.own_findings(request, text, {}, True) == []
    text, why = fabric_check.own_log(request, {"NCCL_DEBUG": "WARN"})
    assert text is None and why.startswith("the fabric was not checked: NCCL_DEBUG=WARN is yours and below INFO")
    text, why = fabric_check.own_log(request, {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_FILE": str(tmp_path / "gone.%p")})
    assert text is None and why.startswith("NCCL's log was not read: gone.")
