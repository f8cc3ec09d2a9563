"""Every output built from data someone else wrote (a report on disk, rank 0's report, a peer's record in the
store) keeps the promises of the way out (issue 28, classes 1 to 3), whoever wrote the data and however:

- secrets are masked by their names, not only by their shape: a hand-edited report, one of another version or
  one a user's own tool wrote may hold ``WANDB_API_KEY``'s value in clear (one rule: ``masking.masked``);
- one line per finding: a value with a line break forges no line of its own;
- visible: values that differ only in white space do not look alike (``'Ring '`` against ``Ring``);
- bounded: thousands of keys or metrics, megabytes of text, nesting as deep as the reader lets through, make
  bounded lines, never a traceback.

:data:`RENDERERS` walks every path; ``test_every_reader_of_others_data_is_walked_here`` finds every place in
the package that reads such data, and fails on a new one until it is walked here too.
"""
import ast
import copy
import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from bootstrap.doors import outbound
from unit.test_facts import REPORT

from conftest import ROOT

PLANTED = {name: f"planted{index}q{'x' * 7}" for index, name in enumerate(
    ("HF_TOKEN", "DB_PASSWORD", "WANDB_API_KEY", "MY_SECRET_KEY", "hang", "warning", "error", "lint",
     "preflight", "provenance"))}
FORGED = "FORGED"  # starts a line only where a value forged one
MAX_LINE = 5000  # characters of any one line any renderer makes
DEEP = 28  # nesting the reader lets through (inbound.MAX_DEPTH is 32; the report adds its own levels)


def _deep(depth: int):
    node: dict = {"leaf": 1}
    for _ in range(depth):
        node = {"next": node}
    return node


def hostile(side: str) -> dict:
    """A report no version of the bootstrap wrote: secrets in clear under secret names, line breaks, white
    space, thousands of keys and metrics, and a field nested as deep as the reader allows. ``side`` a or b."""
    data = copy.deepcopy(REPORT)
    data["overrides"] = [f"+env.vars.HF_TOKEN={PLANTED['HF_TOKEN']}", f"db.password={PLANTED['DB_PASSWORD']}",
                         f"env.threads.intra_op={1 if side == 'a' else 2}"]
    data["vars"].update({
        "WANDB_API_KEY": {"value": PLANTED["WANDB_API_KEY"], "source": "shell", "effective": True},
        "DB_PASSWORD": {"value": PLANTED["DB_PASSWORD"], "source": "preset", "effective": True},
        "NCCL_ALGO": {"value": "Ring" if side == "a" else "Ring ", "source": "shell", "effective": True},
        "NCCL_PROTO": {"value": f"Simple\n{FORGED} a line", "source": "shell", "effective": True},
    })
    data["found"]["torch"] = f"2.13.0\n{FORGED} torch"
    data["distributed"]["agreement"] = {"status": "single", "host": f"node\n{FORGED} host", "fingerprint": {
        "var.MY_SECRET_KEY": PLANTED["MY_SECRET_KEY"], "var.WANDB_API_KEY": PLANTED["WANDB_API_KEY"],
        "var.NCCL_SOCKET_IFNAME": "eth0" if side == "a" else "eth0\t", f"var.X\n{FORGED}": "v",
        **{f"var.NCCL_K{i}": "a" * 300 + side for i in range(3000)}}}
    data["distributed"]["hang"] = {"dump_dir": f"/runs/x\n{FORGED} dump_dir", "dumps": ["comm_lib_trace_rank_0"],
                                   "finding": f"password={PLANTED['hang']}\n{FORGED} finding",
                                   "findings": [f"password={PLANTED['hang']}\n{FORGED} finding"] * 50,
                                   "notes": [f"token={PLANTED['hang']}\n{FORGED} note" + "x" * 9000]}
    data["distributed"]["from_a_later_version"] = _deep(DEEP)  # a key this version does not know: ignored
    data["warnings"] = [f"token={PLANTED['warning']}\n{FORGED} warning"]
    data["preflight"] = {
        "status": "slow", "mode": "error", "note": f"token={PLANTED['preflight']}\n{FORGED} note",
        "median_tflops": 2.0 if side == "a" else 3.0, "network": f"IB\n{FORGED} network",
        "slowest": {"rank": 1, "host": f"h\n{FORGED} host password={PLANTED['preflight']}", "tflops": 0.5},
        "ranks": [{"rank": r, "host": f"h{r}\n{FORGED} host", "tflops": 1.0} for r in range(3000)],
        "findings": [{"kind": "slow", "message": f"password={PLANTED['preflight']}\n{FORGED} finding" + "x" * 9000,
                      "ranks": [1]}] * 50}
    data["lint"] = [{"name": "HF_TOKEN", "kind": "unknown", "message": f"HF_TOKEN={PLANTED['lint']}"}]
    data["provenance"] = {
        "status": "collected", "host": f"node\n{FORGED} host", "container": f"docker\x1b[2J\n{FORGED}",
        "gpu_driver": f"550\n{FORGED} driver", "git_missing": None, "packages": 3,
        "packages_digest": side * 64, "packages_file": "../../packages.txt",  # only its name is read
        "git": {"root": f"/app\n{FORGED} root", "commit": f"abc{side}\n{FORGED} commit",
                "branch": f"token={PLANTED['provenance']}\n{FORGED}", "dirty": side == "b", "diff_bytes": 3,
                "diff_digest": side * 64}}
    data["job"] = {"num": 0 if side == "a" else 1, "status": "completed", "error": f"password={PLANTED['error']}",
                   "metrics": {"samples_per_s": 10.0 if side == "a" else 20.0,
                               **{f"m{i}\n{FORGED}": float(i) for i in range(3000)}}}
    return data


def _job(directory: Path, side: str) -> Path:
    (directory / ".hydra").mkdir(parents=True)
    (directory / ".hydra" / "overrides.yaml").write_text(
        "".join(f"- {json.dumps(o)}\n" for o in hostile(side)["overrides"]))
    (directory / "bootstrap.json").write_text(json.dumps(hostile(side)))
    (directory / "packages.txt").write_text(  # a package named for a secret; a forged line; an escape
        f"my-api-key=={PLANTED['provenance']}{side}\nx==1\n{FORGED} a line\nevil\x1b[2J=={side}\n"
        + "".join(f"p{i}=={side}\n" for i in range(3000)))
    return directory


def _printed(call) -> str:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        result = call()
    return out.getvalue() + err.getvalue() + (result if isinstance(result, str) else "")


# -- every renderer of others' data: name -> function(sweep dir holding jobs 0 and 1) -> what it shows ---------
def _diff(*options):
    def run(sweep: Path) -> str:
        from bootstrap.cli import diff

        return _printed(lambda: diff.main([str(sweep / "0"), str(sweep / "1"), *options]))
    return run


def _summary(sweep: Path) -> str:
    from bootstrap.sweep import summary

    return summary.write(sweep)  # the markdown, printed when the sweep ends


def _summary_csv(sweep: Path) -> str:
    """A data file: a row holds every metric of a job (bounded by the reports' own size); a cell may hold a line
    break, quoted as CSV does, so its lines are its rows as a CSV reader reads them, cells escaped."""
    import csv

    from bootstrap.sweep import summary

    summary.write(sweep)
    with open(sweep / summary.CSV_NAME, newline="") as f:
        rows = list(csv.reader(f))
    assert len(rows) == 3  # the header and one row per job
    return "\n".join(" ".join(cell.encode("unicode_escape").decode() for cell in row) for row in rows)


def _summary_picture(sweep: Path) -> str:
    """The summary's picture: its texts as the SVG of the same figure holds them (a PNG's are pixels)."""
    from bootstrap.pictures import canvas
    from bootstrap.pictures import sweep as picture
    from bootstrap.sweep import plotted, rank, read, swept, walk

    rows = rank.rank([read.row_of(job_dir, names) for job_dir, names in walk.latest(sweep)[0]])
    chosen = rank.objective_for(rows)
    panels = plotted.panels(rows, swept.split(rows), chosen)
    assert chosen is not None and [p.key for p in panels] == ["env.threads.intra_op"]
    canvas.save(picture.figure(panels, *chosen), sweep / "picture.svg")
    return "\n".join(re.findall(r"<!-- (.*?) -->", (sweep / "picture.svg").read_text()))


def _tune(sweep: Path) -> str:
    from bootstrap.sweep import tune

    try:
        target, text = tune.write(sweep, "mine", sweep / "conf", False, None, None)
        return text + Path(target).read_text()
    except tune.TuneError as error:
        return str(error)


def _rank0_report(sweep: Path) -> str:
    """A Lightning rank >= 1 compares itself with rank 0's report (bootstrap.core.agreement)."""
    from bootstrap.core import agreement
    from bootstrap.doors import records

    reference = records.read_report(sweep / "0" / "bootstrap.json")
    own = {"var.NCCL_SOCKET_IFNAME": "eth1", "var.MY_SECRET_KEY": "***", **{f"var.NCCL_K{i}": "b" for i in range(99)}}
    record = agreement.compare_with_report(reference, own, 1, 2, "error")
    return record.message + "\n" + outbound.to_json(record.to_json())  # as the rank's report holds it


def _peer_record(sweep: Path) -> str:
    """A peer's record in the store: rank 0's reference and an odd rank's values (bootstrap.distributed.agree_store)."""
    from bootstrap.core import comparison
    from bootstrap.distributed.agree_store import OddRank

    reference = hostile("a")["distributed"]["agreement"]["fingerprint"]
    odd = [OddRank(rank=1, host=f"b\n{FORGED}", values={**hostile("b")["distributed"]["agreement"]["fingerprint"],
                                                       "var.NCCL_ALGO": f"Tree\n{FORGED}"})]
    record = comparison.outcome(reference, f"a\n{FORGED}", odd, 1, 2, "error")
    return record.message + "\n" + outbound.to_json(record.to_json())  # as each rank's report holds it


def _doctor_and_log_table(sweep: Path) -> str:
    """The doctor's text and the job's log table, fed a report of that shape."""
    from bootstrap.cli import doctor
    from bootstrap.core import report
    from bootstrap.doors import records

    read = records.read_report(sweep / "0" / "bootstrap.json")
    return doctor.format_text(read) + "\n" + report.format_table(read)


def _peer_figures(sweep: Path) -> str:
    """Every rank's figures, as the gather brings them (bootstrap.preflight.figures), judged and recorded."""
    from bootstrap.preflight import check, figures, verdict

    hostile_host = f"h\n{FORGED} password={PLANTED['preflight']}".encode()
    v = figures.VERSION
    sent = [figures.LAYOUT.pack(v, 0, 0, 1, 1.0, 1.0, -1.0, -1.0, 2.0, hostile_host),
            figures.LAYOUT.pack(v, 0, 0, 3, 0.01, 1.0, -1.0, 0.001, -1.0, b"b"), b"\xff" * 3,
            figures.LAYOUT.pack(9, 2**40, 9, 99, float("nan"), -2.0, 1e308, 0.0, float("inf"), b"\x1b[2J" * 30)]
    world = [figures.unpack(rank, data, "cuda") for rank, data in enumerate(sent)]
    found = verdict.judge(world, verdict.Floors(min_tflops=5, min_busbw_gbps=9), 2.0, "cuda", "nccl", network="ib")
    record = check.records.Preflight(status=verdict.status(found))
    check._summarise(record, world, world[0], found)
    # the headers, read before the records: a hostile host in one of this version, and one of no known form
    headers = [figures.read_header(0, figures.header(sent[0], 1.0, hostile_host.decode(), 0)),
               figures.read_header(1, figures.HEADER.pack(figures.MAGIC, 9, 7, 1.0, 0, hostile_host)
                                   .ljust(figures.HEADER_BYTES, b"\0")), figures.read_header(2, b"\xff" * 98)]
    (mismatched,) = verdict.judge([], verdict.Floors(), 2.0, "cuda", "nccl",
                                  extra=[check._mismatched(figures.agree(headers)[0])])  # as check.run judges it
    return "\n".join([*(f.message for f in found), mismatched.message]) + "\n" + outbound.to_json(record.to_json())


def _peer_windows(sweep: Path) -> str:
    """Every rank's window record as rank 0 reads it from the store (bootstrap.watch.figures), judged, and rank 0's
    verdict as every other rank reads it back (bootstrap.watch.exchange)."""
    import torch.distributed as dist

    from bootstrap.doors.watch_report import Watch
    from bootstrap.watch import exchange, figures
    from bootstrap.watch.scores import Judge

    hostile = f"h\n{FORGED} password={PLANTED['preflight']}"
    sent = [figures.LAYOUT.pack(1, 1, 0, 0, 10, 0.05, 0.01, -1.0, 0.0, hostile.encode()),
            figures.LAYOUT.pack(1, 1, 0, 0, 10, 0.05, 0.04, -1.0, 0.0, b"b"), b"\xff" * 3,
            figures.LAYOUT.pack(9, 1, 2**40, 0, 10, float("nan"), 1e308, 1e12, 0.0, b"\x1b[2J" * 30)]
    world = [figures.unpack(rank, 0, data) for rank, data in enumerate(sent)]
    judge = Judge(threshold=0.5, consecutive=1)
    found = judge.window(0, 2.0, world) + judge.invalid(0, [(w.rank, w.host, "; ".join(w.invalid)) for w in world
                                                             if w.invalid]) + judge.absent(0, [(3, hostile)], 60)
    header = figures.read_header(0, figures.header(world[0]))
    store = dist.HashStore()
    exchange.Exchange(store, "k", 0, 4).post_verdict(0, found, stop=False)
    _, read = exchange.Exchange(store, "k", 1, 4).verdict()
    record = Watch(findings=read, kept=judge.kept.windows())
    return "\n".join([*(f.message for f in read), header.host]) + "\n" + outbound.to_json(record.to_json())


def _peer_phases(sweep: Path) -> str:
    """Every rank's start phases as rank 0 reads them at the first step (bootstrap.distributed.phase_exchange): the
    world's figures as its report holds them, the line it logs, the picture's lanes and the unreadable ranks."""
    from bootstrap.core import phases
    from bootstrap.core.phase_world import World
    from bootstrap.distributed import phase_exchange
    from bootstrap.doors.inbound import Unreadable

    hostile_host = f"h\n{FORGED} password={PLANTED['preflight']}"
    sent = [phase_exchange.pack(hostile_host, [(f"x\n{FORGED}", 1.0), ("plan", 2.0)]),
            phase_exchange.pack("b", [(f"\x1b[2J{FORGED}", 3.0)] * 40), b"\xff" * phase_exchange.RECORD_BYTES]
    world = World(len(sent))
    for rank, data in enumerate(sent):
        try:
            world.add(rank, *phase_exchange.unpack(rank, data))
        except Unreadable as error:
            world.refuse(rank, str(error))
    summary = world.summary()
    return "\n".join([phases.line(1.0, summary, []), *world.unreadable, *(lane.label for lane in world.lanes())]) + \
        "\n" + outbound.to_json([phase.to_json() for phase in summary])


def _driver_version(sweep: Path) -> str:
    """/proc/driver/nvidia/version, the kernel module's text (bootstrap.provenance.machine): only a version."""
    from bootstrap.doors import inbound
    from bootstrap.provenance import machine

    planted = sweep / "nvidia_version"
    planted.write_text(f"NVRM version: NVIDIA UNIX Kernel Module  550.1\n{FORGED}\x1b[2J token={PLANTED['provenance']}")
    return str(machine.driver_version(inbound.read_text(planted)))


def _exclusion_file(sweep: Path) -> str:
    """The shared ledger (env.nodes.exclude_file), any user's lines (bootstrap.core.nodes): a refusal on hard
    evidence, and the lines dropped."""
    import json

    from bootstrap.core import nodes
    from bootstrap.core.schema import EnvConfig, Nodes

    shared = sweep / "exclude.jsonl"
    entry = {"node": "h", "reason": "slow", "observed_at": "2026-12-06T00:00:00Z",
             "valid_until": "2099-01-01T00:00:00Z"}
    shared.write_text("\n".join([
        json.dumps({**entry, "reason": f"slow\n{FORGED}"}), json.dumps({**entry, "node": f"h\n{FORGED}"}),
        json.dumps({**entry, "reason": "faulty", "job_id": f"1\n{FORGED} password={PLANTED['preflight']}",
                    "message": f"\n{FORGED}"}),
        f"\x1b[2J{FORGED} token={PLANTED['provenance']}"]) + "\n")
    warnings: list = []
    refusal = nodes.at_start(EnvConfig(nodes=Nodes(exclude_file=str(shared), exclude_ttl_h=10**6)), "env", warnings,
                             "h", {})
    return "\n".join([*warnings, refusal.message if refusal else ""])


def _nccl_network(sweep: Path) -> str:
    """NCCL's log, another program's text (bootstrap.fabric.nccl_log)."""
    from bootstrap.fabric import nccl_log

    log = sweep / nccl_log.log_name(12345, "h")
    log.write_bytes(f"NCCL INFO Using network IB\n{FORGED}\nNCCL INFO Using network Sock\x1bet\n".encode())
    found = nccl_log.read(sweep, 12345, "h")
    return f"{found.text} {found.kind}"


def _fabric_findings(sweep: Path) -> str:
    """NCCL's logs judged by the fabric rules: bootstrap doctor --nccl-log, and every rank's gathered findings."""
    from bootstrap.cli import nccl_logs
    from bootstrap.core import schema
    from bootstrap.fabric import suggest as fabric_suggest
    from bootstrap.preflight import fabric_check

    log = sweep / "fabric.log"
    log.write_bytes((f"h\x1b[2J:1:2 [0] NCCL INFO Using network Socket\n{FORGED}\n"
                     f"n1:1:2 [0] NCCL INFO NET/IB : No device found. token={PLANTED['preflight']}\n"
                     f"n1:1:2 [0] NCCL INFO Using network Socket\n"
                     f"n2:3:4 [0] x.cc:1 NCCL WARN Failed to initialize any NET plugin\n{FORGED} \x00\n"
                     f"n3:5:6 [0] NCCL INFO NET/Socket : Using [0]virbr0:1.2.3.4<0>\n"
                     f"n3:5:6 [0] NCCL INFO Using network Socket\n").encode())
    preset = schema.load({"fabric": {"name": "ib", "gdr": True}, "preflight": {"mode": "error"}})
    lines, unread, _ = nccl_logs.judge(preset, [log, sweep / "absent.log"])
    gathered = fabric_check.unpack(0, fabric_check.pack([line + f"\n{FORGED}" for line in lines]))
    device = sweep / "sys" / "class" / "infiniband" / f"mlx5\n{FORGED}"
    (device / "ports" / "1").mkdir(parents=True, exist_ok=True)
    (device / "ports" / "1" / "link_layer").write_text("InfiniBand\n")
    suggested = fabric_suggest.suggest(sweep, {})
    return "\n".join([*lines, *unread, *(f.message for f in gathered), str(suggested[1] if suggested else "")])


RENDERERS = {
    "bootstrap diff": _diff(), "bootstrap diff --all": _diff("--all"), "bootstrap diff --json": _diff("--json"),
    "sweep summary (markdown, the environments' note)": _summary, "sweep summary (CSV)": _summary_csv,
    "sweep summary (picture)": _summary_picture,
    "bootstrap tune": _tune,
    "a Lightning rank against rank 0's report": _rank0_report, "a peer's record in the store": _peer_record,
    "doctor and the job's log table": _doctor_and_log_table,
    "the ranks' preflight figures": _peer_figures, "NCCL's log": _nccl_network,
    "the GPU driver's version": _driver_version, "NCCL's logs judged by the fabric rules": _fabric_findings,
    "the shared exclusion file": _exclusion_file, "the ranks' watch figures and rank 0's verdict": _peer_windows,
    "every rank's start phases": _peer_phases,
    "the GPU driver's version": _driver_version,
}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    _job(root / "0", "a")
    _job(root / "1", "b")
    return root


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.extra("plot")) if "picture" in name else name
                                  for name in RENDERERS])
def test_every_renderer_masks_by_name_keeps_lines_and_stays_bounded(sweep, name):
    shown = RENDERERS[name](sweep)
    assert shown.strip(), name
    assert [s for s in PLANTED.values() if s in shown] == [], name
    assert not [line for line in shown.splitlines() if line.lstrip(" |-*'\"").startswith(FORGED)], name
    assert name == "sweep summary (CSV)" or max(len(line) for line in shown.splitlines()) <= MAX_LINE, name
    assert "Traceback" not in shown and "RecursionError" not in shown


def test_values_that_differ_only_in_white_space_look_different():
    from bootstrap.cli import diff
    from bootstrap.core import facts
    from bootstrap.doors.records import Report

    a, b = (facts.facts(Report.from_json(hostile(side))) for side in "ab")
    rows = {row["name"]: row for row in diff.compare(a, b)["variables"]}
    assert (rows["NCCL_ALGO"]["a"], rows["NCCL_ALGO"]["b"]) == ("Ring (shell)", "'Ring ' (shell)")
    assert rows["NCCL_SOCKET_IFNAME"]["b"] == "'eth0\\t' (inherited)"


def test_a_peer_with_thousands_of_keys_makes_one_bounded_line_and_the_stop_is_not_lost():
    from bootstrap.core import comparison
    from bootstrap.distributed.agree_store import OddRank

    values = {f"var.AAA_{i}": "x" for i in range(5000)}
    values["var.TORCH_DISTRIBUTED_DEBUG"] = "INFO"  # sorts after every AAA_: still decides the job
    record = comparison.outcome({}, "a", [OddRank(rank=1, host="b", values=values)], 1, 2, "error")
    assert record.status == "stopped" and "\n" not in record.message
    assert len(record.message) <= outbound.MAX_FINDING and "TORCH_DISTRIBUTED_DEBUG=INFO" in record.message
    assert len(record.differences) == comparison.MAX_RECORDED and record.more_differences == 5001 - 64
    assert f"and {5001 - comparison.MAX_SAID} more differences" in record.message


# -- completeness: every reader of others' data is walked above ------------------------------------------
# module -> what it reads that someone else wrote, and which renderer above walks it
READERS_OF_OTHERS_DATA = {
    "bootstrap/cli/diff.py": "reports and packages.txt on disk: bootstrap diff, --all, --json",
    "bootstrap/provenance/machine.py": "the NVIDIA driver's version file: 'the GPU driver's version'",
    "bootstrap/provenance/packages.py": "a legacy package's PKG-INFO headers: a name and a version, one line each, "
                                        "written to packages.txt through the way out; diff shows it as 'bootstrap "
                                        "diff' (a hostile packages.txt) does",
    "bootstrap/sweep/read.py": "every job's report and overrides.yaml: the sweep summary, its picture, tune; "
                               "hydra.yaml of a sweep's job (the sweeper's direction): a direction, never shown",
    "bootstrap/core/agreement.py": "rank 0's report (Lightning) and the peers' records: two renderers above",
    "bootstrap/core/process_vars.py": "rank 0's report (Lightning): only the names of its process's own variables "
                                      "that this rank holds with the same value; nothing of it is shown",
    "bootstrap/distributed/agree_store.py": "the peers' records in the store: 'a peer's record in the store'",
    "bootstrap/distributed/dumps.py": "flight-recorder dumps (tests/unit/test_dumps.py); of a report, only started_ns",
    "bootstrap/distributed/group.py": "rank 0's run directory and the first failure (tests/unit/test_waits.py, "
                                      "test_hostile_input.py): one line, bounded",
    "bootstrap/distributed/flightrec.py": "a peer's request for dumps: compared, never shown",
    "bootstrap/core/report.py": "GroupAtEnd.from_json of this process's own group: not others' data",
    "bootstrap/variables/exportkey.py": "the export key file (tests/unit/test_exportkey.py): never shown",
    "bootstrap/core/config_store.py": "the presets this package ships: its own files",
    "bootstrap/preflight/figures.py": "every rank's preflight figures from the gather: 'the ranks' preflight figures'",
    "bootstrap/preflight/measure.py": "/proc/meminfo, the kernel's: one number (MemAvailable), never shown",
    "bootstrap/fabric/nccl_log.py": "NCCL's own log: 'NCCL's log'; logs a person names (doctor --nccl-log): "
                                       "'NCCL's logs judged by the fabric rules'",
    "bootstrap/preflight/fabric_check.py": "this process's NCCL log where the user pointed it, and every rank's "
                                           "fabric findings: 'NCCL's logs judged by the fabric rules'",
    "bootstrap/fabric/suggest.py": "/sys's RDMA devices (names, link layers): 'NCCL's logs judged by the "
                                             "fabric rules'",
    "bootstrap/distributed/ledger.py": "the bad-node ledger's lines: 'the shared exclusion file'",
    "bootstrap/pictures/preflight.py": "the picture rank 0 sends its own drawing process on stdin: not others' data "
                                       "(cleaned when sent; its texts cleaned again when saved, canvas.save)",
    "bootstrap/pictures/watch.py": "the watch's picture rank 0 sends its own drawing process: as the preflight's",
    "bootstrap/watch/figures.py": "every rank's window record in the store: 'the ranks' watch figures and rank 0's "
                                  "verdict'",
    "bootstrap/watch/exchange.py": "rank 0's verdict in the store: 'the ranks' watch figures and rank 0's verdict'",
    "bootstrap/core/nodes.py": "the job directory's own bad_nodes.jsonl and exclude.txt, which rank 0 wrote, read back "
                               "to add to them (bounded; exclude.txt through hostlist.expand), never shown",
    "bootstrap/pictures/phases.py": "the start's phases' picture rank 0 sends its own drawing process: its lanes' "
                                    "labels and phase names, from 'every rank's start phases'",
    "bootstrap/pictures/apart.py": "the picture on a drawing process's stdin (the preflight's, the watch's, the "
                                   "start's phases'): not others' data",
    "bootstrap/distributed/phase_exchange.py": "every rank's record at the first step: 'every rank's start phases'",
}
_READS = re.compile(r"\b(?:read_report|from_json|exchange|parse_json_bytes|read_json|read_yaml_mapping|"
                    r"read_string_list|read_pickled_data|read_private_bytes|read_text|store\.get|compare_set|unpack_record|"
                    r"read_log_head|read_own_log_lines|read_log_lines)\(")


def test_every_reader_of_others_data_is_walked_here():
    found = set()
    for path in sorted((ROOT / "bootstrap").rglob("*.py")):
        relative = str(path.relative_to(ROOT))
        if relative in ("bootstrap/doors/inbound.py", "bootstrap/doors/records.py", "bootstrap/doors/typed.py"):
            continue  # the door itself
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.Call) and _READS.search(ast.unparse(node.func) + "(")
               for node in ast.walk(tree)):
            found.add(relative)
    assert found - set(READERS_OF_OTHERS_DATA) == set(), "walk these in RENDERERS, then list them"
    assert set(READERS_OF_OTHERS_DATA) - found == set(), "no longer reads others' data: take it off the list"
