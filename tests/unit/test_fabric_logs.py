"""Issue 40: the fabric rules on real NCCL logs from public threads (tests/data/nccl, each with its source address and
the NCCL/plugin version on its first lines), one test per excerpt: the verdict and the message, through the doctor's
path (``bootstrap doctor --nccl-log``: prefixes of mpirun, pdsh, CloudWatch and timestamps included)."""
from pathlib import Path

import pytest

from bootstrap.cli import nccl_logs
from bootstrap.core import schema
from bootstrap.fabric import nccl_log
from bootstrap.fabric import rules as fabric_rules

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl"

# excerpt -> (fabric it is judged as, None for no stopping finding, else what the one-line finding must say)
VERDICTS = {
    # issue 29's excerpts, now judged as a fabric
    "efa_1.log": ("aws_efa", None),  # aws-ofi-nccl 1.4.0: "AWS Libfabric", provider efa
    "efa_2.log": ("aws_efa", None),  # newer: "Libfabric", "(found 16 nics)", the provider said by another process
    "efa_3.log": ("aws_efa", None),  # CloudWatch timestamp lines between NCCL's
    "ib_1.log": ("ib", None),  # "No plugin found ... using internal implementation" is no failure for IB
    "ib_2.log": ("ib", None),
    "plugin_1.log": ("ib", "the HCAs' link layer is Ethernet: this is RoCE; choose env/fabric=roce"),
    "plugin_2.log": ("ib", None),  # IBext: the RDMA/SHARP plugin
    "socket_1.log": ("ib", "'NET/IB : No device found.' (then 'Using network Socket')"),
    "socket_2.log": ("socket", None),  # sockets, on purpose
    # issue 40's
    "efa_ok_old_plugin.log": ("aws_efa", None),
    "efa_cloudwatch_plugin_failed.log": ("aws_efa", "'NET/OFI aws-ofi-nccl initialization failed'"),
    "efa_devices_not_visible.log": ("aws_efa", "EFA devices not visible in the container: mount /dev/infiniband"),
    "efa_mpirun_ring.log": ("aws_efa", None),  # p3dn-era: no platform line, so no GPUDirect RDMA expected
    "ib_gdrdma.log": ("ib", None),
    "ibext_no_gdrdma.log": ("ib", "without /GDRDMA; expected GPUDirect RDMA on the network's channels"),
    "ibext_pdsh.log": ("ib", None),  # pdsh's "host: " before NCCL's own header
    "socket_virbr0.log": ("socket", "virbr0 cannot reach another node"),
    "socket_lo_ib_disabled.log": ("ib", "NCCL_IBEXT_DISABLE=1 and NCCL_IB_DISABLE=1 set in the environment"),
    "socket_no_libibverbs.log": ("ib", "'Failed to open libibverbs.so[.1]' (then 'Using network Socket')"),
    "gcp_vm_socket.log": ("gcp_tcpx", "the GPUDirect-TCPX plugin did not load"),
    "fastrak_ok.log": ("gcp_tcpxo", None),
    "tcpx_ok.log": ("gcp_tcpx", None),
    "roce_error12.log": ("roce", "error 12 is a timeout: the NICs cannot reach each other"),
}
GDR = {"ib", "roce", "aws_efa"}  # the shipped fabric presets that expect GPUDirect RDMA (gdr: true)


def test_every_excerpt_names_its_source_and_version_and_is_judged_here():
    for path in sorted(DATA.glob("*.log")):
        source, version = path.read_text().splitlines()[:2]
        assert source.startswith("# source: https://github.com/"), path.name
        assert version.startswith("# nccl: "), path.name
    assert {p.name for p in DATA.glob("*.log")} == set(VERDICTS)
    assert len({(DATA / name).read_text().splitlines()[0] for name in VERDICTS}) >= 21  # distinct threads


def _preset(fabric: str) -> schema.EnvConfig:
    return schema.load({"fabric": {"name": fabric, "gdr": fabric in GDR}, "preflight": {"mode": "error"}})


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_each_excerpt_gets_its_verdict_and_its_message(name):
    fabric, said = VERDICTS[name]
    lines, unread, stops = nccl_logs.judge(_preset(fabric), [DATA / name])
    assert unread == []
    findings = [line for line in lines if line.startswith("  fabric: ")]
    if said is None:
        assert not stops and findings == [], lines
        assert any(line.startswith("  no finding") for line in lines)
    else:
        assert stops and findings, lines
        assert said in findings[0], findings[0]
        assert all("\n" not in line for line in findings)
        assert findings[0].startswith("  fabric: rank ")  # the rank (or "?") and the host come first
        assert "expected" in findings[0]


def test_the_network_of_each_new_excerpt_is_read_as_its_kind():
    kinds = {"fastrak_ok.log": "fastrak", "tcpx_ok.log": "tcpx", "gcp_vm_socket.log": "socket",
             "ibext_pdsh.log": "ib", "efa_ok_old_plugin.log": "efa", "socket_lo_ib_disabled.log": "socket"}
    for name, kind in kinds.items():
        assert nccl_log.parse((DATA / name).read_text()).kind == kind, name


def test_what_the_excerpts_say_of_versions_devices_and_prefixes():
    [fastrak] = nccl_log.processes((DATA / "fastrak_ok.log").read_text())
    assert fastrak.fastrak_version == "1.0.17" and fastrak.host == ""
    old = nccl_log.processes((DATA / "efa_ok_old_plugin.log").read_text())
    assert old[0].ofi_version == "1.3.0aws" and old[0].provider == "efa"
    [cloud] = nccl_log.processes((DATA / "efa_cloudwatch_plugin_failed.log").read_text())
    assert (cloud.host, cloud.nics, cloud.platform) == ("ip-10-36-29-253", 4, "p4d.24xlarge")
    assert cloud.environment == {"NCCL_SOCKET_IFNAME": "eth0"}
    ring = nccl_log.processes((DATA / "efa_mpirun_ring.log").read_text())
    assert {p.host for p in ring} >= {"ip-172-32-38-1", "ip-172-32-36-209"}  # mpirun's [1,7]<stdout>: skipped
    assert "NET/AWS Libfabric/0" in {c for p in ring for c in p.channels}
    pdsh = nccl_log.processes((DATA / "ibext_pdsh.log").read_text())
    assert {p.host for p in pdsh} == {"rdma-test-gpu-worker-0", "rdma-test-gpu-worker-1"}
    [gcp] = nccl_log.processes((DATA / "gcp_vm_socket.log").read_text())
    assert (gcp.rank, gcp.nranks, gcp.nccl_version) == (0, 1, "2.19.3+cuda12.3")


def test_a_stale_rule_of_an_excerpt_is_cleared_by_the_plugin_version_it_printed():
    # aws-ofi-nccl 1.3.0 still needed NCCL_PROTO=simple (up to 1.5.0): no finding, though the variable is set
    processes = nccl_log.processes((DATA / "efa_ok_old_plugin.log").read_text())
    assert fabric_rules.judge("aws_efa", processes, {"NCCL_PROTO": "simple"}, False) == []
    # the same with RDMAV_FORK_SAFE ("Do not use", whatever the version): definite once the plugin is known
    [finding] = fabric_rules.judge("aws_efa", processes, {"RDMAV_FORK_SAFE": "1"}, False)
    assert "RDMAV_FORK_SAFE=1 is stale" in finding.message and "aws-ofi-nccl 1.3.0aws" in finding.message


# -- issue 45: verdicts from evidence; no cap decides in silence ----------------------------------------------------
def test_a_risk_the_log_does_not_show_is_a_warning_and_a_stop_needs_nccls_own_words():
    # NCCL 2.19 on RoCE without NCCL_IB_GID_INDEX, whose network came up: the GID rule is a version heuristic
    lines, unread, stops = nccl_logs.judge(_preset("roce"), [DATA / "plugin_1.log"])
    assert not stops and unread == [], lines
    (warned,) = [line for line in lines if line.startswith("  fabric warning")]
    assert "NCCL_IB_GID_INDEX is unset: its connections may time out with error 12" in warned
    assert any(line.startswith("  no finding that stops") for line in lines)
    # the same rule once NCCL says the timeout happened: a stop, quoting it
    found = fabric_rules.judge("roce", nccl_log.processes((DATA / "plugin_1.log").read_text() +
                                                          "dgxh100-4:460770:460770 [0] transport/net_ib.cc:839 NCCL "
                                                          "WARN NET/IB : Got completion with error 12, opcode 1\n"),
                               {}, None)
    assert any(f.stops and "timed out with error 12" in f.message and "NCCL said" in f.message for f in found)


def test_a_fabric_preset_with_a_loopback_socket_interface_is_a_finding_even_on_one_host():
    lines, _, stops = nccl_logs.judge(_preset("socket"), [DATA / "socket_lo_ib_disabled.log"])
    (warned,) = [line for line in lines if line.startswith("  fabric warning")]
    assert "lo never leaves this host, and env/fabric=socket is for a job across nodes" in warned and not stops
    processes = nccl_log.processes((DATA / "socket_lo_ib_disabled.log").read_text())
    (across,) = fabric_rules.judge("socket", processes, {}, spans_nodes=True)
    assert across.stops and "lo cannot reach another node" in across.message  # seen across nodes: a stop


def test_what_a_bound_leaves_out_is_named_and_counted_and_the_verdict_is_never_ok(tmp_path, monkeypatch):
    fine = (DATA / "socket_2.log").read_text()
    fell_back = (DATA / "socket_1.log").read_text()  # NET/IB : No device found, then sockets
    paths = []
    for number in range(5):
        path = tmp_path / f"nccl.{number}.log"
        path.write_text(fell_back if number == 4 else fine)
        paths.append(path)
    monkeypatch.setattr(nccl_logs, "MAX_FILES", 4)  # the fifth, the one that fell back, lies past the bound
    lines, unread, stops = nccl_logs.judge(_preset("socket"), paths)
    assert not stops and unread == [f"1 file not read, past the first 4 (at most 4 are judged at once): "
                                     f"{paths[4]}; judge them in another run"]
    monkeypatch.setattr(nccl_log, "MAX_LOG_BYTES", 600)  # socket_2.log is longer: only its first bytes are read
    _, unread, _ = nccl_logs.judge(_preset("socket"), paths[:1])
    assert unread and unread[0].startswith("1 file read only to its first") and str(paths[0]) in unread[0]
    monkeypatch.setattr(nccl_log, "MAX_LOG_BYTES", 4 * 2**20)
    monkeypatch.setattr(nccl_log, "MAX_PROCESSES", 0)
    _, unread, _ = nccl_logs.judge(_preset("socket"), paths[:2])
    assert unread == ["2 processes not judged, past the first 0 of one file"]


def test_the_doctor_says_an_unreadable_log_first_and_alone_with_the_fix_and_a_partial_read_is_no_ok(
        tmp_path, doctor_here, monkeypatch):
    absent = doctor_here("--nccl-log", str(tmp_path / "absent.log"), str(DATA / "socket_2.log"), cwd=tmp_path)
    assert absent.returncode == 2 and absent.stdout == "", absent.stdout[:300]  # no report buries it
    (said,) = absent.stderr.splitlines()
    assert said.startswith(f"bootstrap doctor: --nccl-log {tmp_path / 'absent.log'}: not read: No such file")
    assert "NCCL_DEBUG=INFO" in said  # the fix
    monkeypatch.setattr(nccl_logs, "MAX_FILES", 1)
    past = doctor_here("env/fabric=socket", "--nccl-log", str(DATA / "socket_2.log"), str(DATA / "socket_1.log"),
                       cwd=tmp_path)
    assert past.returncode == 2 and "1 file not read, past the first 1" in past.stderr, past.stderr
