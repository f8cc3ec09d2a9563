"""``bootstrap dryrun --world N ...``: every rank's start-up planned and checked at the size it will run, before the job waits in a queue (docs/dryrun.md).

Composes the app's config once, as the doctor does (``--config-path``, ``--config-name``, ``--module``), makes
each rank's launcher variables, runs the job's own launch detection and plan for each
(:mod:`bootstrap.dryrun.world`), checks the ranks against each other, builds torch's DeviceMesh with its fake
backend for a sample of ranks, prints a short table and writes ``dryrun.json`` into ``--out``.

Exit status: 0, nothing found; 1, findings (each one line: the ranks, what, the fix); 2, bad input (a flag, a
node list, a config Hydra cannot compose), one line naming the flag and the fix.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List, NoReturn, Optional

from bootstrap.cli.commands import purpose
from bootstrap.dryrun.world import MAX_ENTRIES, Asked, Outcome
from bootstrap.doors import inbound, outbound
from bootstrap.doors.errors import BootstrapError, ConfigError
from bootstrap.doors.masking import masked_text

MAX_WORLD = 262144  # ranks one dry run plans (about 8 minutes here); the largest jobs today are 16k-100k GPUs
MAX_PER_NODE = 1024  # ranks on one node
MAX_CPUS = 1 << 16  # CPUs or GPUs of one node
MAX_FINDINGS_SHOWN = 12
DEFAULT_OUT = Path("outputs") / "dryrun"  # beneath it, <date>/<time>: see default_out


class _Parser(outbound.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, naming the flag, exit 2 (argparse prints usage too)
        outbound.say(f"bootstrap dryrun: {message}. See: bootstrap dryrun --help", err=True, one_line=True)
        sys.exit(2)


def _count(flag: str, high: int) -> Any:
    """A strict whole number for ``flag``: ASCII digits only, 1..high."""
    def read(text: str) -> int:
        if not (text.isascii() and text.isdigit() and len(text) <= 12 and 1 <= int(text) <= high):
            raise argparse.ArgumentTypeError(f"{outbound.shown(text[:40])!r} is not a whole number from 1 to {high}; "
                                             f"write {flag} 8")
        return int(text)
    return read


def _parser() -> _Parser:
    parser = _Parser(prog="bootstrap dryrun", description=purpose("dryrun") + " Nothing runs: exit 0 nothing found, "
                     "1 findings, 2 bad input.")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. env=h100 env.threads.intra_op=12")
    parser.add_argument("--world", type=_count("--world", MAX_WORLD), required=True, help="ranks in all")
    nodes = parser.add_mutually_exclusive_group()
    nodes.add_argument("--nodes", type=_count("--nodes", MAX_WORLD), help="nodes (default: 1, or --nodelist's count)")
    nodes.add_argument("--ranks-per-node", type=_count("--ranks-per-node", MAX_PER_NODE), help="ranks on each node")
    from bootstrap.distributed.rankvars import LAUNCHERS

    parser.add_argument("--launcher", choices=LAUNCHERS, default="torchrun",
                        help="what starts the ranks (default: torchrun)")
    parser.add_argument("--nodelist", help="SLURM's host list, e.g. 'gpu[001-128]'")
    parser.add_argument("--cpus-per-node", type=_count("--cpus-per-node", MAX_CPUS),
                        help="the target node's CPUs (default: this machine's)")
    parser.add_argument("--gpus-per-node", type=_count("--gpus-per-node", MAX_CPUS), help="the target node's GPUs")
    parser.add_argument("--out", type=Path, default=None,
                        help="where dryrun.json goes (default: outputs/dryrun/<date>/<time>/, which git ignores)")
    parser.add_argument("--config-path", help="the app's config directory (default: this package's conf/)")
    parser.add_argument("--config-name", default=None, help="the app's primary config (default: config)")
    parser.add_argument("--module", default=None, help="import this module first (configs registered in Python)")
    parser.add_argument("--no-mesh", action="store_true",
                        help="do not build torch's DeviceMesh with its fake backend (the slowest part at scale): the "
                             "mesh is still planned and checked, but not against torch's own placement")
    return parser


def asked_from(args: argparse.Namespace) -> Asked:
    """The flags as one consistent world, or a ConfigError naming the flag and the fix."""
    from bootstrap.distributed import hostlist

    world, hosts, given = args.world, None, None
    if args.nodelist is not None:
        given = hostlist.count(args.nodelist, "--nodelist")
        hosts = hostlist.expand(args.nodelist, "--nodelist", limit=MAX_WORLD)
        if not hosts:
            raise ConfigError("--nodelist is empty: name the nodes ('gpu[001-128]'), or leave it out.")
    if args.ranks_per_node is not None:
        if world % args.ranks_per_node:
            raise ConfigError(f"--world {world} does not split into nodes of --ranks-per-node {args.ranks_per_node}: "
                              f"use a world that is a multiple of {args.ranks_per_node}.")
        nodes = world // args.ranks_per_node
    else:
        nodes = args.nodes or (min(len(hosts), world) if hosts else 1)
    if world % nodes:
        raise ConfigError(f"--world {world} does not split into --nodes {nodes}: every node runs the same number "
                          f"of ranks; use a world that is a multiple of {nodes}, or another --nodes.")
    twice = _named_twice(hosts or [])  # anywhere in the list, not only in the first --nodes names
    if twice is not None:
        raise ConfigError(f"--nodelist names {outbound.shown(twice, limit=80)} twice: name each node once.")
    named = list(hosts or [])[:nodes]
    named += [f"picked{i}" for i in range(1, nodes - len(named) + 1)] if hosts else \
        [f"node{i}" for i in range(1, nodes + 1)]
    cpus = args.cpus_per_node if args.cpus_per_node is not None else (os.cpu_count() or 1)
    return Asked(world=world, nodes=nodes, per_node=world // nodes, launcher=args.launcher, hosts=tuple(named),
                 nodelist=args.nodelist, nodelist_hosts=given, cpus_per_node=cpus, gpus_per_node=args.gpus_per_node)


def _named_twice(hosts: List[str]) -> Optional[str]:
    seen: set = set()
    for host in hosts:
        if host in seen:
            return host
        seen.add(host)
    return None


def default_out(now: datetime) -> Path:
    """Where dryrun.json goes without ``--out``: Hydra's own layout for what a run wrote (outputs/<date>/<time>),
    beneath ``outputs/dryrun/``, a folder of this command's own that git ignores (it holds a ``.gitignore``)."""
    return DEFAULT_OUT / now.strftime("%Y-%m-%d") / now.strftime("%H-%M-%S")


def document(outcome: Outcome, asked: Asked, preset: str, overrides: List[str]) -> Dict[str, Any]:
    """dryrun.json: the summary, then the kept per-rank entries (each in the report's own shapes)."""
    return {
        "dryrun_version": 1,
        "preset": preset, "overrides": overrides,
        "asked": {"world": asked.world, "nodes": asked.nodes, "ranks_per_node": asked.per_node,
                  "launcher": asked.launcher, "nodelist": asked.nodelist, "cpus_per_node": asked.cpus_per_node,
                  "gpus_per_node": asked.gpus_per_node},
        "summary": {"world": outcome.world, "nodes": outcome.nodes, "ranks_per_node": outcome.per_node,
                    "nodelist": outcome.nodelist, "launcher_rows": outcome.rows, "mesh": outcome.mesh,
                    "findings": [finding.as_dict() for finding in outcome.findings],
                    "checked_at_start_on_the_target": outcome.target_checks, "warnings": outcome.warnings,
                    "scale": outcome.scale,
                    "fingerprints": outcome.fingerprints},
        "sample": {"all_ranks": not outcome.sampled,
                   "rule": f"every rank up to {MAX_ENTRIES}; beyond, the first and last node's ranks (up to 256 each),"
                           " the first rank of the second node, each node's first rank at an even stride, and up to "
                           "64 refused ranks beyond those",
                   "entries": len(outcome.entries)},
        "ranks": outcome.entries,
    }


def _bytes(count: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if count < 1000 or unit == "TB":
            return f"{count:.3g} {unit}" if unit != "B" else f"{count} B"
        count /= 1000  # type: ignore[assignment]
    return str(count)


def _phases(predicted: List[dict]) -> str:
    """The start's phases whose cost grows with N, as a real run's report counts them (``store_ops``)."""
    said = []
    for phase in predicted:
        if "store_ops_per_rank" in phase:
            rank0 = phase.get("store_ops_rank0", phase["store_ops_per_rank"])
            said.append(f"{phase['name']} {phase['store_ops_per_rank']} store ops a rank"
                        + (f" (rank 0: {rank0})" if rank0 != phase["store_ops_per_rank"] else ""))
        else:
            said.append(f"{phase['name']} {phase['collectives']} collectives")
    return "; ".join(said) or "-"


def table(outcome: Outcome, preset: str, written: Path) -> str:
    """The terminal's short table: world, nodes, mesh, findings; never a line per rank."""
    scale = outcome.scale
    mesh = " x ".join(f"{name}({size})" for name, size in outcome.mesh.items()) or "-"
    rows = [("world", f"{outcome.world} ranks: {outcome.nodes} nodes x {outcome.per_node}"),
            ("launcher", f"{outcome.launcher} ({', '.join(f'{row} row: {n}' for row, n in outcome.rows.items()) or '-'})"),
            ("nodes", outbound.finding(outcome.nodelist, 120)), ("preset", preset), ("mesh", mesh),
            ("store", f"{scale['store']}: {scale['store_ops_per_rank']} ops a rank, {scale['store_ops_total']} in all"),
            ("phases", _phases(scale["phases"])),
            ("preflight", f"gathers {_bytes(scale['preflight_gather_bytes_per_rank'])} a rank, "
                          f"{scale['preflight_collectives']} collectives in {scale['preflight_budget_s']:g} s"),
            ("flight recorder", f"dumps {_bytes(scale['flight_recorder_dump_bytes_per_rank'])} a rank, "
                                f"{_bytes(scale['flight_recorder_dump_bytes_total'])} in all"),
            ("watch", f"each {scale['watch_window_s']:g} s: {scale['watch_store_ops']} store ops, rank 0 reads "
                      f"{_bytes(scale['watch_rank0_reads_bytes'])}, {scale['watch_collectives']} collectives, "
                      f"links probed with {_bytes(scale['watch_probe_bytes'])}" if "watch_store_ops" in scale
             else "off"),
            ("on the target", "; ".join(outcome.target_checks) or "-"),
            ("findings", str(len(outcome.findings)) if outcome.findings else "none")]
    width = max(len(name) for name, _ in rows)
    lines = ["bootstrap dryrun", *(f"  {name.ljust(width)}  {value}" for name, value in rows)]
    lines += [f"  warning: {outbound.finding(line, 600)}" for line in outcome.warnings]
    lines += [f"  - {outbound.finding(finding.line(), 600)}" for finding in outcome.findings[:MAX_FINDINGS_SHOWN]]
    if len(outcome.findings) > MAX_FINDINGS_SHOWN:
        lines.append(f"  and {len(outcome.findings) - MAX_FINDINGS_SHOWN} more in {written}")
    lines.append(f"  wrote {written} ({len(outcome.entries)} rank entries{', a sample' if outcome.sampled else ''})")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    outbound.remember_overrides(args.overrides)
    from bootstrap.core import compose, jobconfig, verdict, versions
    from bootstrap.dryrun import world as dryrun

    refused_at_import = verdict.import_refusal(os.environ)  # the ranks inherit this shell's: their import stops
    if refused_at_import:
        return _say_error(f"every rank would stop: {refused_at_import}", args.overrides, 1)
    try:
        asked = asked_from(args)
        config_dir = None if args.config_path is None else Path(args.config_path)
        build = None
        if not args.no_mesh:
            from bootstrap.distributed import fakemesh

            build = fakemesh.coordinates
        with compose.app_config(config_dir, args.config_name, args.overrides, args.module) as cfg:
            jobconfig.require_preset(cfg)  # the doctor's message: the app never enabled a callback here
            session_args = jobconfig.session_args(cfg)  # composed once, as the job would
            outcome = dryrun.plan_world(session_args, asked, dict(os.environ), versions.detect(), build)
    except (BootstrapError, compose.ComposeError) as error:  # ConfigError is a BootstrapError
        return _say_error(str(error), args.overrides)
    except Exception as error:  # noqa: BLE001 - any input gets a message and an exit status, never a traceback
        first = inbound.first_line(error) if str(error) else ""
        return _say_error(f"{type(error).__name__}: {first}", args.overrides)
    preset = session_args.get("name") or "custom"
    out = args.out if args.out is not None else default_out(datetime.now())
    written = out / "dryrun.json"
    try:
        outbound.make_directory(out)
        if args.out is None and not (DEFAULT_OUT / ".gitignore").exists():  # our folder: never in git status
            outbound.write_text(DEFAULT_OUT / ".gitignore", "# bootstrap dryrun's reports: not sources\n*\n")
        outbound.write_json(written, document(outcome, asked, preset, list(args.overrides)))
    except OSError as error:
        return _say_error(f"--out {out}: {error.strerror or type(error).__name__}: choose a folder this user "
                          "can write", args.overrides)
    written = written.absolute()
    outbound.say(table(outcome, preset, written))
    return 1 if outcome.findings else 0


def _say_error(message: str, overrides: List[str], code: int = 2) -> int:
    outbound.say(f"bootstrap dryrun: {masked_text(message, overrides)}", err=True, one_line=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
