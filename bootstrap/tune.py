"""``python -m bootstrap tune SWEEP_DIR --name my_node``: keep a sweep's winner as a preset.

Reads the sweep's per-job reports, takes the completed job that did best on the
objective (``--objective``/``--mode``, with the sweep summary's defaults), and writes
``conf/env/<name>.yaml`` (or ``<--out>/env/<name>.yaml``): it extends the winner's base
preset and sets only the ``env`` keys the sweep varied, at the winner's values, under
a header that records where the numbers came from.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from bootstrap import summary
from bootstrap.report import is_secret, masked_override

PRESET_KEYS = ("env", "bootstrap_env")


class TuneError(Exception):
    """The sweep cannot give a preset; the message says why and what to do."""


@dataclass
class Job:
    directory: Path
    overrides: List[str]  # as Hydra recorded them (.hydra/overrides.yaml), unmasked
    report: Optional[dict]  # rank 0's report
    row: summary.Row

    @property
    def status(self) -> str:
        return self.row.status


def _jobs(sweep_dir: Path) -> List[Job]:
    jobs = []
    for job_dir in summary.job_dirs(sweep_dir):
        reports = summary.read_reports(job_dir)
        row = summary.row_from_reports(job_dir, reports) if reports else \
            summary.Row(job_dir.name, "", "no report", None, None)
        overrides = yaml.safe_load((job_dir / ".hydra" / "overrides.yaml").read_text()) or []
        jobs.append(Job(job_dir, overrides, reports[0] if reports else None, row))
    return jobs


def _shown(job: "Job") -> str:
    return " ".join(masked_override(o) for o in job.overrides)


def _parse(overrides: List[str]) -> Dict[str, Any]:
    """``[+]env.threads.intra_op=2`` -> {"env.threads.intra_op": 2}, typed as Hydra types them."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    return {o.key_or_group: o.value() for o in parsed if not o.is_delete()}


def _preset_key(values: Dict[str, Any]) -> str:
    return next((k for k in PRESET_KEYS if k in values or any(v.startswith(f"{k}.") for v in values)), "env")


def build(sweep_dir: Path, name: str, objective: Optional[str] = None, mode: Optional[str] = None) -> str:
    """The YAML text of the tuned preset."""
    jobs = _jobs(sweep_dir)
    if not jobs:
        raise TuneError(f"{sweep_dir} holds no sweep jobs (no */.hydra/overrides.yaml). "
                        "Point tune at a multirun directory, e.g. multirun/2026-12-02/10-00-00.")
    counts = ", ".join(f"{s}: {sum(j.status == s for j in jobs)}" for s in sorted({j.status for j in jobs}))
    chosen = summary.objective_for([j.row for j in jobs], objective, mode)
    if chosen is None:
        if not any(j.status == "completed" for j in jobs):
            raise TuneError(f"no job of {sweep_dir} completed with a metric to compare ({counts}). "
                            "Fix the failing jobs and sweep again.")
        raise TuneError(f"the jobs of {sweep_dir} report no metric to compare (none of "
                        f"{', '.join(n for n, _ in summary.AUTO_OBJECTIVES)}). Name the one to use: --objective NAME.")
    metric, direction = chosen
    measured = sorted((j for j in jobs if summary.score(j.row, chosen) is not None),
                      key=lambda j: -summary.score(j.row, chosen))
    if not any(j.status == "completed" for j in measured):
        raise TuneError(f"no job of {sweep_dir} completed with a {metric} to compare ({counts}). "
                        "Fix the failing jobs and sweep again, or choose another --objective.")
    winner = measured[0]
    if winner.status != "completed":
        raise TuneError(f"the best job by {metric} ({_shown(winner)}) has status '{winner.status}': a preset "
                        "made from it would not run cleanly here. Sweep again without it, or fix its checks.")
    runner_up = measured[1] if len(measured) > 1 else None

    parsed = {job.directory: _parse(job.overrides) for job in jobs}
    all_keys = {k for values in parsed.values() for k in values}
    varied = sorted(k for k in all_keys if len({repr(values.get(k)) for values in parsed.values()}) > 1)
    key = _preset_key(parsed[winner.directory])
    chosen = parsed[winner.directory]
    settings: Dict[str, Any] = {}
    for dotted in varied:
        if not dotted.startswith(f"{key}."):
            continue
        value = chosen.get(dotted)
        if is_secret(dotted.rsplit(".", 1)[-1]):
            raise TuneError(f"the sweep varied {dotted}, which looks like a secret: a tuned preset will not "
                            "hold it. Sweep it without tune, or set it in the environment.")
        node = settings
        *parents, leaf = dotted[len(key) + 1:].split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    report = winner.report
    resolved = report.get("resolved")
    base = resolved.split(" -> ", 1)[1].split(" ", 1)[0] if resolved else report["preset"]

    found = report["found"]
    gpus = ", ".join(found.get("gpu_names") or []) or "no GPU"
    not_preset = [k for k in varied if not k.startswith(f"{key}.") and k != key]
    header = [
        f"Tuned by `python -m bootstrap tune` on {time.strftime('%Y-%m-%d')} from {sweep_dir.resolve()}",
        f"machine: {found.get('cpus')} CPUs (affinity {found.get('cpu_affinity', '?')}), {gpus}, "
        f"torch {found.get('torch')}, python {found.get('python')}",
        f"objective: {metric}, {'higher' if direction == 'max' else 'lower'} is better",
        f"winner:    {winner.row.metrics[metric]:.6g} {metric}  ({_shown(winner)})",
        f"runner-up: {runner_up.row.metrics[metric]:.6g} {metric}  ({_shown(runner_up)})" if runner_up
        else "runner-up: none (one measured job)",
        f"sweep varied: {', '.join(varied) or 'nothing'}",
    ]
    if not_preset:
        header.append(f"not part of a preset, so not set here: {', '.join(not_preset)}")
    body = yaml.safe_dump({"defaults": [base, "_self_"]}, sort_keys=False)
    if settings:
        body += "\n" + yaml.safe_dump(settings, sort_keys=False)
    return "".join(f"# {line}\n" for line in header) + body


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="bootstrap tune", description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path, help="the multirun directory (hydra.sweep.dir)")
    parser.add_argument("--name", required=True, help="the new preset's name: env=<name>")
    parser.add_argument("--out", type=Path, default=Path("conf"),
                        help="the config directory to write into (default: ./conf, giving conf/env/<name>.yaml)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing preset file")
    parser.add_argument("--objective", default=None,
                        help="the metric to pick the winner by (default: samples_per_s if reported, else return)")
    parser.add_argument("--mode", choices=summary.MODES, default=None,
                        help="max or min (default: max for samples_per_s, min for anything else)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", args.name):
        parser.error(f"--name {args.name!r}: use letters, digits, '_', '-' and '.' only")
    target = args.out / "env" / f"{args.name}.yaml"
    try:
        if not args.sweep_dir.is_dir():
            raise TuneError(f"{args.sweep_dir} is not a directory.")
        if target.exists() and not args.force:
            raise TuneError(f"{target} exists; pass --force to overwrite it.")
        text = build(args.sweep_dir, args.name, args.objective, args.mode)
    except TuneError as error:
        print(f"bootstrap tune: {error}", file=sys.stderr)
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(f"wrote {target}\n\n{text}\nuse it with: env={args.name}")
    return 0
