"""``bootstrap diff A B``: what differs between two runs, by section (:mod:`bootstrap.core.facts`).

A and B are run directories or report files. A run directory of several ranks compares the same rank of
each (rank 0 unless ``--rank N``). ``--here`` compares A with what this machine would do now: the doctor's
preview, with A's own overrides unless others are given. The variables A's process (or the preview's) set
for itself before the job started (source ``process``: ``import lightning`` sets one) are no fact of this
machine, and the preview runs no app code: ``--here`` leaves them out, and says which. What differs between
any two runs (times, job number, status, metrics) is left out unless ``--all``.

Exit status: 0 the same, 1 they differ, 2 bad usage or a report that cannot be read.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from bootstrap.cli.commands import purpose
from bootstrap.core import facts as job_facts
from bootstrap.doors import inbound, outbound, records
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.masking import MASK, masked, masked_text
from bootstrap.provenance import collect, packages

TITLES = {"versions": "versions", "variables": "variables (with their sources)", "threads": "threads and CPUs",
          "launch": "launcher and world", "preset": "preset", "seeds": "seeds", "torch": "torch settings",
          "lint": "lint findings", "preflight": "preflight check (expected, measured)",
          "watch": "watch (while training: settings, findings)",
          "provenance": "provenance (code, packages, host)",
          job_facts.ALWAYS_DIFFERS: "what differs between any two runs"}
UNSET = "unset"
MAX_VALUE = 160  # characters of one value on a line; the rest is cut ("...")
HERE = "here (bootstrap doctor's preview)"
PROCESS_SET = "set by the run's own process before its job started, not by the shell: an import or the app's code, " \
              "which the preview does not run"


class Usage(Exception):
    """Bad usage or an unreadable input: exit 2 with this one-line message."""


def _parser() -> outbound.ArgumentParser:
    parser = outbound.ArgumentParser(
        prog="bootstrap diff", description=purpose("diff") + " By section: versions, variables and their sources, "
                                           "threads, launcher, preset, seeds, torch settings, lint findings. Exit 0 "
                                           "the same, 1 they differ, 2 bad usage or a report that cannot be read.")
    parser.add_argument("a", metavar="A", help="a run directory or a report file (bootstrap.json)")
    parser.add_argument("rest", nargs="*", metavar="B",
                        help="the other run directory or report; with --here, Hydra overrides instead (default: A's)")
    parser.add_argument("--here", action="store_true", help="compare A with what this machine would do now")
    parser.add_argument("--rank", type=int, default=0, help="the rank to compare in a run of several (default 0)")
    parser.add_argument("--all", action="store_true", help="also show what differs between any two runs "
                                                           "(times, job number, status, metrics)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--config-path", help="with --here: the app's config directory (as bootstrap doctor)")
    parser.add_argument("--config-name", default=None, help="with --here: the app's primary config")
    parser.add_argument("--module", default=None, help="with --here: import this module first (as bootstrap doctor)")
    return parser


# -- finding the reports ---------------------------------------------------------------------------
def _job_dirs(directory: Path) -> List[Path]:
    """The job directories right below a sweep directory (each holds Hydra's ``.hydra``)."""
    try:
        return sorted((entry for entry in directory.iterdir() if (entry / ".hydra").is_dir()),
                      key=lambda entry: (not entry.name.isdigit(), len(entry.name), entry.name))
    except OSError:
        return []


def report_path(given: str, rank: int) -> Path:
    """The report ``given`` names: itself, or in a run directory the report of ``rank``."""
    path = Path(given)
    try:
        is_dir, exists = path.is_dir(), path.exists() or path.is_symlink()
    except (OSError, ValueError):  # a name with a NUL, a path too long
        raise Usage(f"{given!r}: not a path that can be read") from None
    if not exists:
        raise Usage(f"{given}: no such file or directory")
    if not is_dir or path.name == records.REPORT_NAME:  # a directory named bootstrap.json is read, and refused
        return path
    names = [p.name for p in records.report_paths(path)]
    if not names:
        jobs = _job_dirs(path)
        hint = f"job directories, not a report (a sweep?): name one job's directory, e.g. {jobs[0]}" if jobs else \
            "no bootstrap.json or bootstrap.rank<N>.json in it"
        raise Usage(f"{given}: {hint}")
    for name in (f"bootstrap.rank{rank}.json", records.REPORT_NAME if rank == 0 else None):
        if name in names:
            return path / name
    ranks = sorted({0 if n == records.REPORT_NAME else int(n[len("bootstrap.rank"):-len(".json")]) for n in names})
    raise Usage(f"{given}: no report of rank {rank} (ranks here: {', '.join(map(str, ranks))}); choose one with --rank")


def _read(given: str, rank: int) -> Tuple[Path, records.Report]:
    path = report_path(given, rank)
    try:
        return path, records.read_report(path)
    except Unreadable as error:
        raise Usage(f"{given}: cannot be read ({error})") from None


def _recorded_config(run_dir: Path) -> Tuple[Optional[Path], Optional[str]]:
    """The app's config directory and primary config as the run's ``.hydra/hydra.yaml`` records them (Hydra's
    ``runtime.config_sources``, provider ``main``, and ``job.config_name``); (None, None) without them."""
    try:
        hydra_cfg = inbound.read_yaml_mapping(run_dir / ".hydra" / "hydra.yaml").get("hydra")
    except (OSError, Unreadable):
        return None, None
    runtime, job = (hydra_cfg.get(key) if isinstance(hydra_cfg, dict) else None for key in ("runtime", "job"))
    sources = runtime.get("config_sources") if isinstance(runtime, dict) else None
    main = next((s for s in sources if isinstance(s, dict) and s.get("provider") == "main"
                 and s.get("schema") == "file"), None) if isinstance(sources, list) else None
    name = job.get("config_name") if isinstance(job, dict) else None
    if main is None or not isinstance(main.get("path"), str) or not Path(main["path"]).is_dir():
        return None, None
    return Path(main["path"]), name if isinstance(name, str) else None


def _here(a_path: Path, a_report: records.Report, args: argparse.Namespace) -> records.Report:
    """The doctor's preview with ``args.rest`` as overrides, or A's own; on the config A's app composed where its
    ``.hydra/`` record names it and no ``--config-path`` or ``--module`` is given."""
    from bootstrap.core import compose, jobconfig

    overrides = list(args.rest) if args.rest else list(a_report.overrides)
    masked_ones = [o for o in overrides if MASK in o]
    if not args.rest and masked_ones:
        raise Usage(f"A's override {masked_ones[0]} holds a masked secret, so it cannot be replayed: "
                    "give the overrides after A (bootstrap diff A --here OVERRIDES)")
    outbound.remember_overrides(overrides)
    config_dir, config_name, whence = None if args.config_path is None else Path(args.config_path), \
        args.config_name, ""
    if config_dir is None and args.module is None:  # the run's own, as its .hydra/hydra.yaml records it
        config_dir, config_name = _recorded_config(a_path.parent)
        whence = ", as the run's .hydra/hydra.yaml records it" if config_dir is not None else ""
    compose.say_which(compose.which(config_dir, config_name, args.module, whence), args.json)  # JSON: stdout's
    try:
        with compose.app_config(config_dir, config_name, overrides, args.module) as cfg:
            report, _ = jobconfig.preview(cfg)
    except Exception as error:  # noqa: BLE001 - any config gets a message and exit 2, never a traceback
        first = inbound.first_line(error) if str(error) else type(error).__name__
        fix = "" if config_dir is not None or args.module is not None else \
            " (the run's overrides are for its app's config, and the run has no .hydra/hydra.yaml naming it: pass " \
            "--config-path <the app's config directory> --config-name <its primary config>, e.g. --config-path " \
            "configs --config-name train)"
        raise Usage(masked_text(f"cannot preview this machine: {first}{fix}", overrides)) from None
    report.distributed.agreement = records.Agreement(fingerprint=_known_here())
    # where the code is now: A's repository if this machine has it, else the working directory's
    git = a_report.provenance.git if a_report.provenance else None
    app_dir = Path(git.root) if git is not None and Path(git.root).is_dir() else Path.cwd()
    report.provenance = collect.collect(app_dir, None, seconds=10.0)
    return report


# -- packages --------------------------------------------------------------------------------------
def _packages(report_file: Path, report: records.Report) -> Optional[Dict[str, str]]:
    """The run's packages (name -> version) from the packages.txt beside its report; None without one."""
    found = report.provenance
    if found is None or not found.packages_file:
        return None
    try:  # its name only: a report cannot send the reader out of its own directory
        return packages.parse(inbound.read_text(report_file.parent / Path(found.packages_file).name))
    except (OSError, Unreadable):
        return None


def _package_rows(a: Optional[Dict[str, str]], b: Optional[Dict[str, str]]) -> List[Dict[str, str]]:
    """One row per package added, removed or changed, where both runs' packages are known."""
    if a is None or b is None:
        return []
    rows = []
    for name, old, new in packages.compare(a, b):  # others' files: each shown as a fact is, masked and visible
        fact = f"package {job_facts.shown('', name)}"  # a version by its shape (packages.shown_version)
        rows.append({"name": fact, "a": old and job_facts.shown("", packages.shown_version(name, old)) or UNSET,
                     "b": new and job_facts.shown("", packages.shown_version(name, new)) or UNSET})
    return rows


def _ranks_apart(report_file: Path) -> List[str]:
    """In a run of several ranks, the ranks whose packages differ from rank 0's, named (from each rank's report)."""
    paths = records.report_paths(report_file.parent)
    if len(paths) < 2:
        return []
    from bootstrap.distributed.ranks import ranks_on_hosts

    digests: Dict[Optional[str], List[Tuple[int, Optional[str]]]] = {}
    for path in paths:
        try:
            report = records.read_report(path)
        except Unreadable:
            continue
        found = report.provenance
        digests.setdefault(found.packages_digest if found else None, []).append(
            (report.distributed.rank, found.host if found else None))
    known = {digest: ranks for digest, ranks in digests.items() if digest is not None}
    if len(known) < 2:
        return []
    first = next((digest for digest, ranks in known.items() if any(rank == 0 for rank, _ in ranks)), None)
    return [f"packages differ from rank 0's on {ranks_on_hosts(ranks)} (packages.txt {digest[:12]}; "
            "bootstrap diff RUN RUN --rank N names them)" for digest, ranks in known.items() if digest != first]


def _known_here() -> Dict[str, str]:
    """The known variables set in this process's environment, masked, as a job's fingerprint holds them."""
    from bootstrap.variables.difference_kinds import known_set

    return {f"var.{name}": masked(name, value) for name, value in known_set(os.environ).items()}


# -- comparing -------------------------------------------------------------------------------------
def compare(a: job_facts.Facts, b: job_facts.Facts, every: bool = False) -> Dict[str, List[Dict[str, str]]]:
    """``{section: [{"name", "a", "b"}]}`` for each fact whose values differ; unset shows as ``unset``.
    (``name``, not ``key``: the JSON door masks any value under a secret-looking key, and "key" is one.)"""
    result = {}
    for section in (*job_facts.SECTIONS, *([job_facts.ALWAYS_DIFFERS] if every else [])):
        left, right = a.get(section, {}), b.get(section, {})
        keys = list(dict.fromkeys([*left, *right]))
        rows = [{"name": key, "a": left.get(key, UNSET), "b": right.get(key, UNSET)} for key in keys
                if left.get(key) != right.get(key)]
        if rows:
            result[section] = rows
    return result


def _without_preview_gaps(found: job_facts.Facts) -> job_facts.Facts:
    return {section: {key: value for key, value in values.items() if (section, key) not in job_facts.NOT_IN_PREVIEW}
            for section, values in found.items()}


def _cut(value: str) -> str:
    """A fact (already masked by its name and visible: bootstrap.core.facts) as one bounded line."""
    return outbound.finding(value, MAX_VALUE)


def bounded(differences: Dict[str, List[Dict[str, str]]]) -> Dict[str, List[Dict[str, str]]]:
    """Every row's name and values as one bounded line (:func:`_cut`): what every output form shows, text and JSON
    alike, whatever a report holds (a 60,000-character package name)."""
    return {section: [{field: _cut(value) for field, value in row.items()} for row in rows]
            for section, rows in differences.items()}


def _without_variables(found: job_facts.Facts, names: List[str]) -> job_facts.Facts:
    return {**found, "variables": {key: value for key, value in found.get("variables", {}).items()
                                   if key not in names}}


def format_text(a: str, b: str, differences: Dict[str, List[Dict[str, str]]], every: bool,
                left_out: Sequence[str] = ()) -> str:
    """A header per section, then ``key: A-value -> B-value`` aligned, one line each; the count last, after the
    variables ``--here`` left out (:data:`PROCESS_SET`)."""
    shown = {section: [(f"{row['name']}:", row["a"], row["b"]) for row in rows]
             for section, rows in bounded(differences).items()}
    every_row = [row for rows in shown.values() for row in rows]
    key_width = max((len(key) for key, _, _ in every_row), default=0)
    a_width = max((len(left) for _, left, _ in every_row), default=0)
    lines = [f"A: {a}", f"B: {b}"]
    for section, rows in shown.items():
        lines += ["", TITLES[section]]
        lines += [f"  {key.ljust(key_width)} {left.ljust(a_width)} -> {right}" for key, left, right in rows]
    count = len(every_row)
    every_run = "" if every else " (times, job number, status and metrics left out; --all shows them)"
    if left_out:
        lines += ["", outbound.finding(f"left out: {', '.join(left_out)} ({PROCESS_SET})", 2000)]  # known names
    lines += ["", (f"{count} difference{'s' if count != 1 else ''}" if count else "no differences") + every_run]
    return "\n".join(lines)


FactNames = Set[Tuple[str, Optional[str]]]  # (section, fact), None for the whole section


def _versions_apart(a: records.Report, b: Optional[records.Report]) -> Tuple[List[str], FactNames]:
    """Notes on what two reports of different schema versions cannot compare, and the facts left out."""
    notes: List[str] = []
    left_out: FactNames = set()
    for side, report in (("A", a), ("B", b)):
        if report is not None and report.schema_version > records.SCHEMA_VERSION:
            notes.append(f"{side} was written by a newer hydra-train-bootstrap (schema_version "
                         f"{report.schema_version}; this one knows 1 to {records.SCHEMA_VERSION}): what it added is "
                         "not compared; upgrade hydra-train-bootstrap to compare it")
    older = min(a.schema_version, b.schema_version if b is not None else records.SCHEMA_VERSION)
    for version, added in records.ADDED_IN.items():
        if older < version:
            notes += [f"not compared: {what}, which schema_version {older} reports do not hold (added in {version})"
                      for what in added]
            left_out |= _ADDED_FACTS.get(version, set())
    return notes, left_out


# records.ADDED_IN, as the facts they show
_ADDED_FACTS: Dict[int, FactNames] = {2: {("lint", None), ("launch", "node_rank"), ("seeds", "global_seed")},
                                      3: {("preflight", None)}, 4: {("provenance", None)},
                                      5: {("preflight", "bad nodes"), ("preflight", "on_bad"),
                                          ("preflight", "restart_count")}}


def _leave_out(found: job_facts.Facts, left_out: FactNames) -> job_facts.Facts:
    return {section: {} if (section, None) in left_out else
            {key: value for key, value in values.items() if (section, key) not in left_out}
            for section, values in found.items()}


def run(args: argparse.Namespace) -> int:
    a_path, a_report = _read(args.a, args.rank)
    a_facts = job_facts.facts(a_report, a_path.parent)
    left_out: List[str] = []
    joined: List[str] = []
    if args.here:
        b_report = _here(a_path, a_report, args)
        left_out = sorted({*job_facts.set_by_process(a_report), *job_facts.set_by_process(b_report)})
        b_name, b_facts = HERE, job_facts.facts(b_report)
        a_facts, b_facts = (_without_variables(_without_preview_gaps(found), left_out) for found in (a_facts, b_facts))
        if job_facts.world_joined(a_report):  # Lightning made rank 0's world after the start: no preview starts it
            a_facts, b_facts = ({**found, "launch": {k: v for k, v in found.get("launch", {}).items()
                                                     if k not in job_facts.JOINED}} for found in (a_facts, b_facts))
            joined = [f"not compared: the launch ({', '.join(job_facts.JOINED)}): {a_report.distributed.launcher} made "
                      "rank 0's world after A's job started, and the preview starts no framework"]
    else:
        if len(args.rest) != 1:
            raise Usage("give two runs: bootstrap diff A B (or A --here)")
        b_path, b_report = _read(args.rest[0], args.rank)
        b_name, b_facts = str(b_path), job_facts.facts(b_report, b_path.parent)
    notes, not_comparable = _versions_apart(a_report, None if args.here else b_report)
    notes += joined
    differences = compare(_leave_out(a_facts, not_comparable), _leave_out(b_facts, not_comparable), args.all)
    b_packages = packages.parse(packages.text(packages.installed())) if args.here else _packages(b_path, b_report)
    package_rows = _package_rows(_packages(a_path, a_report), b_packages)
    if package_rows:
        differences.setdefault("provenance", []).extend(package_rows)
    notes += list(dict.fromkeys(_ranks_apart(a_path) + ([] if args.here else _ranks_apart(b_path))))
    try:
        if args.json:
            outbound.say_json({"a": str(a_path), "b": b_name, "same": not differences, "sections": bounded(differences),
                               "notes": notes, **({"left_out": left_out} if left_out else {})})
        else:
            outbound.say("\n".join([format_text(str(a_path), b_name, differences, args.all, left_out), *notes]))
    except BrokenPipeError:  # `bootstrap diff A B | head`: the reader has gone, which is not an error here
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stdout's descriptor: no second error when Python flushes
    return 1 if differences else 0


def main(argv: Optional[List[str]] = None) -> int:
    try:
        args = _parser().parse_intermixed_args(argv)  # A --here OVERRIDES: options anywhere
    except SystemExit as stop:  # argparse's usage error (2) or --help (0), already said
        return int(stop.code or 0)
    if args.rank < 0:
        outbound.say("bootstrap diff: --rank must be 0 or more", err=True)
        return 2
    try:
        return run(args)
    except Usage as error:
        outbound.say(f"bootstrap diff: {error}", err=True, one_line=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
