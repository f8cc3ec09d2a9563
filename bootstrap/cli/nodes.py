"""bootstrap nodes FILE: the bad-node ledger for the person who runs the cluster: why each node is out, and clearing it.

Forms, each with --json:

- bootstrap nodes FILE lists each node the ledger names: excluded, suspect (evidence that does not exclude yet) or
  clear; its evidence (count, kinds, jobs, first and last seen) and when it would clear;
- bootstrap nodes FILE --explain NODE gives every observation and clearance of NODE;
- bootstrap nodes FILE --clear NODE --why "GPU replaced" clears NODE: an entry saying who and why, added under the
  ledger's lock (never an edit in place); the observations before it stop counting, and later jobs run there;
- bootstrap nodes FILE --exclude NODE --why "fan failing" excludes NODE by hand: hard evidence from a person, until
  it is cleared (or --hours H);
- bootstrap nodes FILE --exclude-list prints the excluded nodes in SLURM's compressed form, for sbatch --exclude.

The rule is the jobs' own (docs/preflight.md#bad-nodes), with env.nodes' defaults; --ttl-h and --min-observations
give a job's other settings. NODE may be a SLURM host list (node[3,7]). An entry is added as a job adds its
observations (the ledger's lock, waited for at most 60 s). Exit status: 0; 1 when the ledger cannot be read or an
entry cannot be added (one line says why); 2 on bad usage.
"""

from __future__ import annotations

import argparse
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from bootstrap.cli.commands import purpose
from bootstrap.core import nodes
from bootstrap.core.schema import Nodes
from bootstrap.core.section_checks import MAX_OBSERVATIONS, MAX_TTL_H
from bootstrap.distributed import hostlist, ledger
from bootstrap.doors import inbound, outbound
from bootstrap.doors.errors import ConfigError

MAX_NAMED = 4096  # nodes one --clear or --exclude names: a host list past this is refused, not built
FOREVER_H = MAX_TTL_H  # a hand exclusion without --hours: until cleared (a year at most)
LOCK_WAIT_S = 60.0  # the most an entry waits for the ledger's lock (a job waits env.distributed.timeout_s)


def main(argv: Optional[List[str]] = None) -> int:
    parser = outbound.ArgumentParser(prog="bootstrap nodes", description=purpose("nodes"),
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path, metavar="FILE", help="the ledger (env.nodes.exclude_file)")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--explain", metavar="NODE", help="every observation and clearance of NODE")
    form.add_argument("--clear", metavar="NODE", help="clear NODE (with --why): its earlier evidence stops counting")
    form.add_argument("--exclude", metavar="NODE", help="exclude NODE by hand (with --why): hard evidence")
    form.add_argument("--exclude-list", action="store_true", help="the excluded nodes, for sbatch --exclude")
    parser.add_argument("--why", metavar="TEXT", help="the reason a --clear or --exclude records")
    parser.add_argument("--hours", metavar="H", type=_positive("--hours", MAX_TTL_H),
                        help="--exclude: for H hours (default: until cleared)")
    parser.add_argument("--ttl-h", metavar="H", type=_positive("--ttl-h", MAX_TTL_H), default=Nodes.exclude_ttl_h,
                        help=f"hours an observation counts (env.nodes.exclude_ttl_h; default {Nodes.exclude_ttl_h:g})")
    parser.add_argument("--min-observations", metavar="N", type=_count("--min-observations"),
                        default=Nodes.min_observations,
                        help=f"occasions of soft evidence that exclude (env.nodes.min_observations; default "
                             f"{Nodes.min_observations})")
    parser.add_argument("--json", action="store_true", help="print JSON")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # the parser has printed its usage and message
        return stop.code if isinstance(stop.code, int) else 2
    rule, now = ledger.Rule(ttl_h=args.ttl_h, min_observations=args.min_observations), datetime.now(timezone.utc)
    if args.hours is not None and args.exclude is None:
        return _refuse("--hours goes with --exclude NODE", 2)
    target = args.clear or args.exclude
    if target is None and args.why is not None:
        return _refuse("--why goes with --clear NODE or --exclude NODE", 2)
    if target is not None:
        if not args.why or not args.why.strip():
            return _refuse(f"{'--clear' if args.clear else '--exclude'} needs --why: say why, e.g. --why \"GPU "
                           "replaced\"; it is kept with the entry", 2)
        try:
            names = _names(target)
        except ConfigError as error:
            return _refuse(str(error), 2)
        return _add(args, names, rule, now)
    warnings: List[str] = []
    read = _read(args.file, warnings, now)
    if read is None:
        return 1
    for line in warnings:
        outbound.say(f"bootstrap nodes: {line}", err=True, one_line=True)
    judged = ledger.judge(read, now, rule)
    if args.exclude_list:
        text = hostlist.compress(node for node, found in judged.items() if found.state == "excluded")
        if args.json:
            outbound.say_json({"exclude": text})
        else:
            outbound.say(text)
        return 0
    if args.explain is not None:
        return _explain(args, read, judged, now)
    rows = [_row(found, now) for found in judged.values() if found.hard or found.soft or found.ignored or found.cleared]
    if args.json:
        outbound.say_json({"file": str(args.file), "rule": _rule(rule), "nodes": rows, "dropped": len(read.dropped)})
    else:
        outbound.say(_table(rows) if rows else f"{args.file}: no node observed in the last {rule.ttl_h:g} h")
    return 0


def _positive(flag: str, limit: float) -> Callable[[str], float]:
    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not 0 < value <= limit:
            raise argparse.ArgumentTypeError(f"{flag} takes positive hours, at most {limit:g}")
        return value
    return read


def _count(flag: str) -> Callable[[str], int]:
    def read(text: str) -> int:
        if not text.isascii() or not text.isdigit() or not 1 <= int(text[:9]) <= MAX_OBSERVATIONS:
            raise argparse.ArgumentTypeError(f"{flag} takes a count in [1, {MAX_OBSERVATIONS}]")
        return int(text)
    return read


def _names(target: str) -> List[str]:
    names = hostlist.expand(target, "NODE", MAX_NAMED)
    bad = [name for name in names if not ledger.NAME.fullmatch(name)]
    if bad or not names:
        raise ConfigError(f"NODE {outbound.shown(target)} names no node: give a node's name as the scheduler knows "
                          "it (node3), or a SLURM host list (node[3,7])")
    return names


def _read(path: Path, warnings: List[str], now: datetime) -> Optional[ledger.Ledger]:
    try:
        read = nodes.load_ledger(path, now)
    except inbound.Unreadable as error:
        outbound.say(f"bootstrap nodes: {error}: the ledger is not read", err=True, one_line=True)
        return None
    warnings += [line for line in [read.dropped_line(path.name)] if line]
    return read


def _person() -> str:
    import pwd

    try:
        name = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        name = ""
    return name if ledger.PERSON.fullmatch(name) else f"uid{os.geteuid()}"


def _add(args: Any, names: List[str], rule: ledger.Rule, now: datetime) -> int:
    why, person, moment = outbound.cut(args.why.strip(), ledger.MAX_TEXT), _person(), ledger.stamp(now)
    if args.clear:
        entries: List[Any] = [ledger.Clearance(name, moment, person, why) for name in names]
    else:
        until = ledger.stamp(now + timedelta(hours=args.hours or FOREVER_H))
        entries = [ledger.Observation(name, "by_hand", moment, until, kinds=["by_hand"], by=person, why=why)
                   for name in names]
    lines = [outbound.clean(entry.to_json(), one_line=True) for entry in entries]
    warnings = nodes.add(args.file, lines, now, rule, timeout_s=LOCK_WAIT_S, where=args.file.name)
    refused = [line for line in warnings if "were not added" in line]
    for line in warnings:
        outbound.say(f"bootstrap nodes: {line}", err=True, one_line=True)
    if refused:
        return 1
    read = _read(args.file, [], now) or ledger.Ledger()
    judged = ledger.judge(read, now, rule, names)
    rows = [_row(judged[name], now) for name in names if name in judged]
    if args.json:
        outbound.say_json({"added": [entry.data() for entry in entries], "nodes": rows})
    else:
        done = "cleared" if args.clear else "excluded by hand"
        outbound.say(f"{hostlist.compress(names)} {done} by {person}: {why}\n{_table(rows)}")
    return 0


def _row(found: ledger.Evidence, now: datetime) -> Dict[str, Any]:
    live = sorted([*found.hard, *found.soft], key=lambda o: o.observed_at)
    return {"node": found.node, "state": found.state, "summary": found.summary(now) if live else _quiet(found),
            "observations": len(live), "occasions": len(found.counted) + len(found.hard),
            "kinds": list(dict.fromkeys(kind for o in live for kind in (o.kinds or [o.reason]))),
            "jobs": list(dict.fromkeys(o.job_id for o in live if o.job_id)),
            "first_seen": live[0].observed_at if live else None, "last_seen": live[-1].observed_at if live else None,
            "clears_at": ledger.stamp(found.until) if found.until else None,
            "not_counted": len(found.ignored),
            "cleared": {"at": found.cleared.cleared_at, "by": found.cleared.by, "why": found.cleared.why}
            if found.cleared else None}


def _quiet(found: ledger.Evidence) -> str:
    if found.ignored:
        return f"{len(found.ignored)} observations that do not count ({found.ignored[0].note})"
    if found.cleared:
        return f"cleared by {found.cleared.by} at {found.cleared.cleared_at}: {found.cleared.why}"
    return "no live evidence"


def _table(rows: List[Dict[str, Any]]) -> str:
    head = ("node", "state", "evidence", "first seen", "last seen", "clears at")
    cells = [head] + [(r["node"], r["state"], r["summary"], r["first_seen"] or "-", r["last_seen"] or "-",
                       r["clears_at"] or "-") for r in rows]
    widths = [min(max(len(str(row[i])) for row in cells), 60) for i in range(len(head))]
    return "\n".join("  ".join(outbound.cut(str(cell), width).ljust(width) for cell, width in zip(row, widths))
                     .rstrip() for row in cells)


def _rule(rule: ledger.Rule) -> Dict[str, Any]:
    return {"ttl_h": rule.ttl_h, "min_observations": rule.min_observations, "apart_s": rule.apart_s}


def _explain(args: Any, read: ledger.Ledger, judged: Dict[str, ledger.Evidence], now: datetime) -> int:
    try:
        (name,) = _names(args.explain)
    except (ConfigError, ValueError):
        return _refuse(f"--explain takes one node's name, not {outbound.shown(args.explain)}", 2)
    found = judged.get(name) or ledger.Evidence(name, "clear")
    counted = {id(o) for o in [*found.hard, *found.counted]}
    seen = [(entry, "counts" if id(entry) in counted else _state(entry, found, now, args))
            for entry, _ in read.entries if entry.node == name]
    if args.json:
        outbound.say_json({"node": name, **_row(found, now),
                           "entries": [{"entry": entry.data(), "standing": why} for entry, why in seen]})
        return 0
    lines = [f"{name}: {found.state}: {_row(found, now)['summary']}"]
    for entry, why in seen:
        if isinstance(entry, ledger.Clearance):
            lines.append(f"  {entry.cleared_at}  cleared by {entry.by}: {entry.why}")
        else:
            attempt = f" attempt {entry.restart_count}" if entry.restart_count else ""
            job = f"job {entry.job_id or '(no id)'}{attempt}"
            who = f" by {entry.by}: {entry.why}" if entry.by else f" {job}"
            kinds = f" ({', '.join(entry.kinds)})" if entry.kinds not in ([], [entry.reason]) else ""
            lines.append(f"  {entry.observed_at}  {entry.reason}{kinds}{who} "
                         f"ranks {entry.ranks}: {why}\n      {entry.message or '-'}")
    outbound.say("\n".join(lines) if seen else f"{name}: the ledger holds nothing of it")
    return 0


def _state(entry: Any, found: ledger.Evidence, now: datetime, args: Any) -> str:
    if isinstance(entry, ledger.Clearance):
        return "a clearance"
    if not entry.counts:
        return f"does not count: {entry.note}"
    if found.cleared is not None and entry.observed_at <= found.cleared.cleared_at:
        return "cleared"
    if ledger.expires(entry, args.ttl_h) <= now:
        return "aged out"
    return "same occasion as one counted"


def _refuse(message: str, code: int) -> int:
    outbound.say(f"bootstrap nodes: {message}", err=True, one_line=True)
    return code
