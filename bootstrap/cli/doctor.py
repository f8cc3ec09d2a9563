"""``bootstrap doctor``: what the bootstrap would do here, without doing it.

Composes the config an app would compose, runs the version checks and works out
every setting, then prints the machine, the checks and the variables (or the same
as JSON, in the ``bootstrap.json`` schema). Nothing is applied and no task runs.
It is what a user pastes into a bug report.

Exit status, the job's verdict (:mod:`bootstrap.core.verdict`, which the job itself stops by):

- 0: the job would start (a failed check under ``on_mismatch=warn`` is shown, and starts; every warning the
  job would give is shown, such as a fabric whose network cannot be proven on this machine);
- 1: the job would stop, and every reason is said: a config its Hydra cannot compose (as the job's own
  Hydra exits 1, with Hydra's reason and, for a key the preset lacks, the nearest setting), a value the
  bootstrap refuses (a thread count, a bad ``MASTER_PORT``, launcher variables that do not add up), a lint
  finding under ``env.lint=error``, a value torch would refuse (``TORCH_DISTRIBUTED_DEBUG=1``; in the shell,
  ``import torch`` itself raises), a failed check under ``on_mismatch=error``, this host listed in
  ``env.nodes.exclude_file``;
- 2: no verdict: the doctor's own usage (a flag, ``--config-path`` that names no directory, ``--module`` that
  does not import, no primary config there).

With ``--nccl-log FILE...`` the exit status is the logs' verdict alone (:mod:`bootstrap.cli.nccl_logs`): this
machine is shown, not judged.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, List, Optional

from bootstrap.cli.commands import purpose
from bootstrap.core import compose, jobconfig, schema
from bootstrap.doors import inbound, outbound, records, torch_settings
from bootstrap.doors.errors import BootstrapError
from bootstrap.doors.masking import masked_line, masked_override, masked_text


def _parser() -> outbound.ArgumentParser:
    parser = outbound.ArgumentParser(
        prog="bootstrap doctor",
        description=purpose("doctor") + " It shows the machine, the preset's checks and every setting the "
                    "bootstrap would apply, without applying anything. Exit 0 the job would start, 1 it would stop "
                    "(every reason said), 2 no verdict (bad usage, a config that does not compose).")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. env=h100 env.threads.intra_op=4")
    parser.add_argument("--config-path", help="the app's config directory (default: this package's conf/)")
    parser.add_argument("--config-name", default=None, help="the app's primary config (default: config)")
    parser.add_argument("--module", default=None,
                        help="import this module first: an app whose configs are registered in Python "
                             "(hydra-zen's store, Hydra's ConfigStore), e.g. --module my_app.train; with no "
                             "--config-path, only what it registers (and the presets) is searched")
    parser.add_argument("--json", action="store_true", help="print JSON in the bootstrap.json schema")
    parser.add_argument("--preflight", action="store_true",
                        help="also run the preflight check here: this machine's matmul (is this GPU healthy and "
                             "fast?), and under torchrun the ranks' all_reduce; exits 1 when a finding would stop "
                             "the job")
    parser.add_argument("--run-dir", type=Path, help="a job's output directory: also say what its flight-recorder "
                                                      "dumps show (distributed.hang)")
    parser.add_argument("--nccl-log", type=Path, nargs="+", metavar="FILE",
                        help="judge NCCL's logs that already exist against the preset and its fabric "
                             "(env/fabric=NAME): the exit status is the logs' verdict alone (docs/fabrics.md)")
    parser.add_argument("--sys-root", type=Path, default=Path("/"),
                        help="the root whose /sys and plugin directories the fabric suggestion reads (default /)")
    return parser


MAX_CELL = 200  # characters of one cell: a variable's value may be a megabyte long
MAX_FINDINGS = 16  # preflight findings shown (the check makes at most 7 kinds; a report on disk may hold more)


def _table(rows: List[tuple], indent: str = "  ") -> str:
    """Aligned columns; every cell one line and bounded, whatever a value holds (a variable's may hold a newline)."""
    rows = [tuple(outbound.finding(cell, MAX_CELL) for cell in row) for row in rows]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)
    return "\n".join(indent + line for line in lines)


def _takes_effect(name: str, effective: bool, withheld: bool = False, does_nothing_here: str = "") -> str:
    from bootstrap.variables.readers import reader_for

    if does_nothing_here:  # the lint's hardware finding says so too: one verdict (bootstrap.variables.lint)
        return f"no: {does_nothing_here}"
    if withheld:
        return "not set: too late here, and ranks must agree"
    if effective:
        return "now, through torch's API" if reader_for(name).apply_now else "now"
    if not reader_for(name).warn_when_late:  # threads and seeding reach this process through torch's API
        return "child processes (this process: through torch)"
    return "child processes only"


def _flight_recorder(hang: records.Hang) -> List[str]:
    """What the dumps show; each line stays one line, whatever a dump's fields hold."""
    if not hang.dumps:
        lines = [f"no dumps of this run in {hang.dump_dir} (a healthy run writes none)", *hang.notes]
    else:
        lines = [f"dumps in {hang.dump_dir}: {', '.join(hang.dumps)}", *hang.groups,
                 *(hang.findings or ["no divergence between the ranks"]), *hang.notes,
                 f"(bootstrap hang {hang.dump_dir})"]
    return ["", "Flight recorder", *("  " + outbound.finding(masked_line(line), MAX_CELL) for line in lines)]


def _floor(value: Optional[float], unit: str) -> str:
    return "-" if value is None else f"{value:.3g} {unit}"


def _preflight(check: records.Preflight) -> List[str]:
    """What the preflight check expects, and what it measured when it ran (``--preflight``)."""
    rows = [("mode", check.mode), ("budget", _floor(check.budget_s, "s")),
            ("max_skew", "-" if check.max_skew is None else f"{check.max_skew:g}x the other ranks' median"),
            ("min_tflops", _floor(check.min_tflops, "TFLOP/s")), ("min_busbw_gbps", _floor(check.min_busbw_gbps,
                                                                                            "GB/s")),
            ("min_node_busbw_gbps", _floor(check.min_node_busbw_gbps, "GB/s")),
            ("network", check.network_expected or "- (NCCL's log not read)")]
    if check.seconds is not None:  # it ran
        mine = next((rank for rank in check.ranks if rank.tflops is not None), None)
        rows += [("status", check.status), ("took", f"{check.seconds:g} s")]
        if mine is not None:
            rows.append(("matmul", f"{mine.tflops:.3g} TFLOP/s on rank {mine.rank} ({mine.host}), {check.matrix}x"
                                   f"{check.matrix} float32 at precision {check.precision}, error "
                                   f"{_floor(check.compute_error, 'against float64')}"))
        if check.busbw_gbps is not None:
            rows.append(("all_reduce", f"bus bandwidth {check.busbw_gbps:.3g} GB/s over {check.world_size} ranks"))
        if check.links and check.links[0].gbps is not None:  # the slowest first
            slowest = check.links[0]
            rows.append(("links", f"{len(check.links)} between nodes, the slowest {slowest.gbps:.3g} GB/s "
                                  f"({' - '.join(slowest.hosts)})"))
        if check.network:
            rows.append(("NCCL network", f"{check.network} ({check.network_kind})"))
    notes = ([check.note] if check.note else []) + \
        [f"finding: {finding.message}" for finding in check.findings[:MAX_FINDINGS]] + \
        ([f"and {len(check.findings) - MAX_FINDINGS} more findings"] if len(check.findings) > MAX_FINDINGS else [])
    return ["", "Preflight", _table(rows), *("  " + outbound.finding(masked_line(line), 2000) for line in notes)]


def format_text(report: records.Report, refusals: Optional[list] = None) -> str:
    found, dist, threads = report.found, report.distributed, report.threads
    gpus = ", ".join(found.gpu_names) or "none"
    machine = [
        ("python", found.python),
        ("torch", found.torch),
        ("CUDA", found.cuda or "none (a CPU build of torch)"),
        ("cuDNN", found.cudnn or "none"),
        ("NCCL", found.nccl or "none"),
        ("GPUs", f"{found.gpus}: {gpus}" if found.gpus else "none"),
        ("compute capability", found.compute_capability or "-"),
        ("CPUs", f"{found.cpus} ({found.cpus_usable} usable, affinity {found.cpu_affinity})"),
        ("launcher", f"{dist.launcher} (rank {dist.rank} of {dist.world_size}, "
                     f"{dist.local_world_size} on this node)"),
    ]
    checks = [("check", "required", "found", "ok")] + [
        (c.name, c.required, c.found or "-", "yes" if c.ok else "NO") for c in report.checks]
    variables = [("variable", "value", "source", "takes effect")] + [
        (name, outbound.shown(v.value, name=name), v.source,
         _takes_effect(name, v.effective, v.withheld, v.does_nothing_here))
        for name, v in report.vars.items()]
    failed = [c.name for c in report.checks if not c.ok]
    lines = [
        outbound.clean(f"hydra-train-bootstrap doctor: preset {report.preset}"
                       + (f" ({' '.join(masked_override(o) for o in report.overrides)})" if report.overrides else ""),
                       one_line=True),
        *([outbound.clean(f"resolved: {report.resolved.describe()}", one_line=True)] if report.resolved else []),
        "", "Machine", _table(machine),
        "", "Checks", _table(checks) if report.checks else "  (the preset requires nothing)",
        "", "Variables", _table(variables),
        "", "Lint", _table([("variable", "finding", "why")]
                           + [(f.name, f.kind, masked_line(f.message)) for f in report.lint])
        if report.lint else "  (nothing to report)",
        *(["", "Warnings", *("  " + outbound.finding(masked_line(line), 2000) for line in report.warnings)]
          if report.warnings else []),
        *(_flight_recorder(dist.hang) if dist.hang else []),
        *(_preflight(report.preflight) if report.preflight else []),
        "", "Torch",
        _table([("threads", f"intra_op {threads.intra_op}, inter_op {threads.inter_op}"),
                *torch_settings.doctor_rows(report.torch),
                ("device", report.device),
                ("seed", f"{report.seed.value} (data seed {report.seed.data_seed})")]),
        "",
        *_result(failed, refusals or [], len(report.warnings)),
    ]
    return "\n".join(lines)


def answer(which: str, report: records.Report, refusals: Optional[list] = None) -> str:
    """Everything the doctor prints on stdout, in order: the config it composed (``compose.which``, said first, so
    that a config that does not compose still names it), then :func:`format_text` (docs/report.md's example is
    made by this function, and a test holds it to the doctor's real output)."""
    return f"{which}\n{format_text(report, refusals)}"


def _result(failed: List[str], refusals: list, warned: int = 0) -> List[str]:
    """The last lines: the job's verdict, and each reason it would stop for."""
    if not refusals:
        said = f"; {warned} warning{'s' if warned != 1 else ''} (above)" if warned else ""
        return [(f"Result: FAILED checks: {', '.join(failed)}; the job starts anyway (on_mismatch=warn)" if failed
                 else "Result: every check passes") + said]
    head = f"FAILED checks: {', '.join(failed)}; the job would stop" if failed else "the job would stop"
    lines = [f"Result: {head}:"]
    for refusal in refusals:
        lines += ["  " + line for line in inbound.lines(refusal.message)]
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    outbound.remember_overrides(args.overrides)  # a secret typed on the command line stays out of every answer
    from bootstrap.core import verdict

    refused_at_import = verdict.import_refusal(os.environ)
    if refused_at_import:  # the job's own `import torch` would raise, and so would the doctor's
        return _say_error(f"the job would stop: {refused_at_import}", args.overrides, 1)
    if args.nccl_log:  # a log that cannot be read at all is said first, and alone: nothing buries it
        from bootstrap.cli import nccl_logs

        cannot = nccl_logs.unreadable(args.nccl_log)
        for line in cannot:
            _say_error(line, args.overrides)
        if cannot:
            return 2
    try:  # composed and previewed in one Hydra context: env=auto loads its preset from the app's search path
        config_dir = None if args.config_path is None else Path(args.config_path)
        compose.say_which(compose.which(config_dir, args.config_name, args.module), args.json)  # JSON: stdout's
        with compose.app_config(config_dir, args.config_name, args.overrides, args.module) as cfg:
            report, refusals = jobconfig.preview(cfg)
    except compose.ComposeError as error:  # the job's own Hydra refuses it too, and the job exits 1
        if error.usage or args.nccl_log:  # the doctor's own flags; or no preset to judge the logs against
            return _say_error(str(error), args.overrides, 2)
        return _say_error(f"the job would stop: Hydra cannot compose its config: {error}", args.overrides, 1)
    except BootstrapError as error:  # what the job would stop with, before there is a plan to show
        if args.nccl_log:  # this machine is shown, not judged
            return _nccl_logs(args, None, [_Refusal(str(error))])
        return _say_error(f"the job would stop: {error}", args.overrides, 1)
    except Exception as error:  # noqa: BLE001 - any input gets a message and an exit status, never a traceback
        first = inbound.first_line(error) if str(error) else ""
        return _say_error(f"{type(error).__name__}: {first}", args.overrides, 2)
    if args.nccl_log:  # the logs' verdict alone: this machine is shown, not judged
        return _nccl_logs(args, report, refusals)
    if args.preflight and not refusals:  # measured where the job would reach the check
        mode = report.preflight.mode if report.preflight else None  # the preset's: the doctor measures under warn
        try:
            with compose.app_config(config_dir, args.config_name, args.overrides, args.module) as cfg:
                report.preflight = jobconfig.measure_preflight(cfg).preflight
        except Exception as error:  # noqa: BLE001 - a machine that cannot run the check says why, never a traceback
            return _say_error(f"the preflight check could not run: {outbound.finding(error)}", args.overrides, 1)
        if report.preflight is not None:
            report.preflight.mode = mode
            if report.preflight.findings and mode == "error":
                refusals = [_Refusal("the preflight check found, under preflight.mode=error: " + "; ".join(
                    finding.message for finding in report.preflight.findings))]
    if args.run_dir is not None:
        from bootstrap.distributed import hang  # only here: the dumps' reader is not needed for the rest

        report.distributed.hang = hang.findings(args.run_dir)
    if refusals:  # the job's own record of a stop holds its reason here too
        report.job.error = "\n".join(refusal.message for refusal in refusals)
    if args.preflight and report.distributed.rank > 0:  # under torchrun: rank 0 speaks for the world
        return 1 if refusals else 0
    try:
        if args.json:
            outbound.say_json(report.to_json())
        else:
            outbound.say(format_text(report, refusals))
        if refusals:  # one line for whoever reads only stderr (--json into a file, a CI log)
            _say_error("the job would stop: " + "; ".join(inbound.first_line(r.message).rstrip(":") for r in refusals),
                       args.overrides)
    except BrokenPipeError:  # `bootstrap doctor | head`: the reader has gone, which is not an error here
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stdout's descriptor: no second error when Python flushes
    return 1 if refusals else 0


def _nccl_logs(args: Any, report: Optional[records.Report], refusals: list) -> int:
    from bootstrap.cli import nccl_logs
    from bootstrap.fabric import suggest as fabric_suggest

    config_dir = None if args.config_path is None else Path(args.config_path)
    try:
        with compose.app_config(config_dir, args.config_name, args.overrides, args.module) as cfg:
            preset = schema.load(jobconfig.find_preset(cfg)[1])
    except Exception as error:  # noqa: BLE001 - any input gets a message and an exit status, never a traceback
        return _say_error(f"no preset to judge the logs against: {outbound.finding(error, 300)}", args.overrides, 2)
    lines, unread, stops = nccl_logs.judge(preset, args.nccl_log)
    suggested = fabric_suggest.suggest(args.sys_root)
    if not args.json:
        machine = format_text(report, refusals) if report is not None else "\n".join(
            f"this machine: the job would stop here: {refusal.message}" for refusal in refusals)
        here = f"this machine suggests env/fabric={suggested[0]} ({suggested[1]})" if suggested else \
            "this machine suggests no fabric"
        outbound.say(machine + f"\n(this machine is shown, not judged: --nccl-log judges the logs; {here})\n\n"
                     + "\n".join(lines))
    else:
        outbound.say_json({"nccl_log": {"lines": lines, "unread": unread, "stops": stops}})
    for line in unread:
        _say_error(line, args.overrides)
    if unread:
        return 2
    if stops:
        _say_error("the logs hold a finding that would have stopped the job (preflight.mode=error)", args.overrides)
    return 1 if stops else 0


class _Refusal:
    def __init__(self, message: str):
        self.message = message


def _say_error(message: str, overrides: List[str], code: int = 1) -> int:
    outbound.say(f"bootstrap doctor: {masked_text(message, overrides)}", err=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
