"""``python -m bootstrap tune SWEEP_DIR --name my_node``: keep a sweep's winner as a preset.

Reads the sweep's per-job reports, takes the fastest completed job, and writes
``conf/env/<name>.yaml`` (or ``<--out>/env/<name>.yaml``): it extends the winner's base
preset and sets only the ``env`` keys the sweep varied, at the winner's values, under
a header that records where the numbers came from.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from bootstrap import summary
from bootstrap.report import is_secret, masked_override

METRIC = "samples_per_s"
PRESET_KEYS = ("env", "bootstrap_env")


class TuneError(Exception):
    """The sweep cannot give a preset; the message says why and what to do."""


@dataclass
class Job:
    directory: Path
    overrides: List[str]  # as Hydra recorded them (.hydra/overrides.yaml), unmasked
    report: Optional[dict]  # rank 0's report
    status: str
    speed: Optional[float]


def _jobs(sweep_dir: Path) -> List[Job]:
    jobs = []
    for overrides_file in sorted(sweep_dir.rglob(".hydra/overrides.yaml")):
        job_dir = overrides_file.parent.parent
        reports = summary.read_reports(job_dir)
        report = reports[0] if reports else None
        row = summary.row_from_reports(job_dir, reports) if reports else None
        jobs.append(Job(job_dir, yaml.safe_load(overrides_file.read_text()) or [], report,
                        row.status if row else "no report", row.samples_per_s if row else None))
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


def build(sweep_dir: Path, name: str) -> str:
    """The YAML text of the tuned preset."""
    jobs = _jobs(sweep_dir)
    if not jobs:
        raise TuneError(f"{sweep_dir} holds no sweep jobs (no */.hydra/overrides.yaml). "
                        "Point tune at a multirun directory, e.g. multirun/2026-12-02/10-00-00.")
    measured = sorted((j for j in jobs if j.speed is not None and math.isfinite(j.speed)), key=lambda j: -j.speed)
    if not any(j.status == "completed" for j in measured):
        counts = ", ".join(f"{s}: {sum(j.status == s for j in jobs)}" for s in sorted({j.status for j in jobs}))
        raise TuneError(f"no job of {sweep_dir} completed with a {METRIC} to compare ({counts}). "
                        "Fix the failing jobs and sweep again.")
    winner = measured[0]
    if winner.status != "completed":
        raise TuneError(f"the fastest job ({_shown(winner)}) has status '{winner.status}': a preset "
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
        f"metric: {METRIC}, higher is better",
        f"winner:    {winner.speed:.1f} {METRIC}  ({_shown(winner)})",
        f"runner-up: {runner_up.speed:.1f} {METRIC}  ({_shown(runner_up)})" if runner_up
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
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", args.name):
        parser.error(f"--name {args.name!r}: use letters, digits, '_', '-' and '.' only")
    target = args.out / "env" / f"{args.name}.yaml"
    try:
        if not args.sweep_dir.is_dir():
            raise TuneError(f"{args.sweep_dir} is not a directory.")
        if target.exists() and not args.force:
            raise TuneError(f"{target} exists; pass --force to overwrite it.")
        text = build(args.sweep_dir, args.name)
    except TuneError as error:
        print(f"bootstrap tune: {error}", file=sys.stderr)
        return 1
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(f"wrote {target}\n\n{text}\nuse it with: env={args.name}")
    return 0
