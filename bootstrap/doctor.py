"""``bootstrap doctor``: what the bootstrap would do here, without doing it.

Composes the config an app would compose, runs the version checks and works out
every setting, then prints the machine, the checks and the variables (or the same
as JSON, in the ``bootstrap.json`` schema). Nothing is applied and no task runs.
It is what a user pastes into a bug report.

Exit status: 0 when every check passes, 1 when one fails, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import List, Optional

from bootstrap import presets
from bootstrap.errors import BootstrapError
from bootstrap.masking import masked_text
from bootstrap.report import describe_resolved

FALLBACK_CONFIG = "bootstrap_doctor"  # used when the package has no train_stub config (installed from a wheel)


class UsageError(Exception):
    """Bad command line or config: exit status 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bootstrap doctor",
        description="Show the machine, the preset's checks and every setting the bootstrap would apply, "
                    "without applying anything.")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. env=h100 env.threads.intra_op=4")
    parser.add_argument("--config-path", help="the app's config directory (default: this package's conf/)")
    parser.add_argument("--config-name", default=None, help="the app's primary config (default: config)")
    parser.add_argument("--json", action="store_true", help="print JSON in the bootstrap.json schema")
    parser.add_argument("--run-dir", type=Path, help="a job's output directory: also say what its flight-recorder "
                                                      "dumps show (distributed.hang)")
    return parser


def diagnose(config_path: Optional[str], config_name: Optional[str], overrides: List[str]) -> dict:
    """Compose the job config the app would compose and preview the bootstrap on it.

    Both happen inside one Hydra context, so env=auto loads its preset from the app's
    own search path. UsageError on bad input.
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    import bootstrap  # noqa: F401  registers the schema

    if config_path is None:
        config_dir = presets.CONF_DIR
        if config_name is None and not (config_dir / "config.yaml").exists():
            ConfigStore.instance().store(name=FALLBACK_CONFIG,
                                         node={"defaults": [{presets.GROUP: presets.CPU_PRESET}, "_self_"]})
            config_name = FALLBACK_CONFIG
    else:
        config_dir = Path(config_path).resolve()
        if not config_dir.is_dir():
            raise UsageError(f"--config-path {config_path}: no such directory.")
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        try:
            cfg = hydra_compose(config_name=config_name or "config", overrides=overrides, return_hydra_config=True)
        except MissingConfigException as error:
            missing = re.search(r"Could not find '(?:bootstrap_)?env/([^']+)'", str(error))
            what = f"unknown preset '{missing.group(1)}'" if missing else str(error).splitlines()[0]
            raise UsageError(f"{what}. Presets that exist: {', '.join(_presets())}.") from None
        except (HydraException, OmegaConfBaseException) as error:
            raise UsageError(masked_text(str(error), overrides)) from None
        return preview(cfg)


def _presets() -> List[str]:
    from hydra.core.global_hydra import GlobalHydra

    loader = GlobalHydra.instance().config_loader()
    groups = (presets.GROUP, presets.ALIAS_GROUP)
    return sorted({option for group in groups for option in loader.get_group_options(group)})


def preview(cfg) -> dict:
    """The report the bootstrap would write for this config, without applying it."""
    from bootstrap.jobconfig import session_args
    from bootstrap.session import Session

    if not any(key in cfg for key in presets.KEYS):
        raise UsageError(f"The composed config has no '{presets.GROUP}' node: choose a preset, "
                         f"e.g. {presets.GROUP}={presets.CPU_PRESET}.")
    return Session(**session_args(cfg)).preview()


def _table(rows: List[tuple], indent: str = "  ") -> str:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)
    return "\n".join(indent + line for line in lines)


def _takes_effect(name: str, effective: bool, withheld: bool = False) -> str:
    from bootstrap.readers import reader_for

    if withheld:
        return "not set: too late here, and ranks must agree"
    if effective:
        return "now, through torch's API" if reader_for(name).apply_now else "now"
    if not reader_for(name).warn_when_late:  # threads and seeding reach this process through torch's API
        return "child processes (this process: through torch)"
    return "child processes only"


def _flight_recorder(hang: dict) -> List[str]:
    if not hang["dumps"]:
        return ["", "Flight recorder", f"  no dumps in {hang['dump_dir']} (a healthy run writes none)"]
    lines = ["", "Flight recorder", f"  dumps in {hang['dump_dir']}: {', '.join(hang['dumps'])}"]
    lines += [f"  {line}" for line in hang["groups"]]
    lines += [f"  {line}" for line in hang["findings"]] or ["  no divergence between the ranks"]
    return lines + [f"  (python -m bootstrap hang {hang['dump_dir']})"]


def format_text(report: dict) -> str:
    found, dist = report["found"], report["distributed"]
    gpus = ", ".join(f"{name}" for name in found["gpu_names"]) or "none"
    machine = [
        ("python", found["python"]),
        ("torch", found["torch"]),
        ("CUDA", found["cuda"] or "none (a CPU build of torch)"),
        ("cuDNN", found["cudnn"] or "none"),
        ("NCCL", found["nccl"] or "none"),
        ("GPUs", f"{found['gpus']}: {gpus}" if found["gpus"] else "none"),
        ("compute capability", found["compute_capability"] or "-"),
        ("CPUs", f"{found['cpus']} ({found['cpus_usable']} usable, affinity {found['cpu_affinity']})"),
        ("launcher", f"{dist['launcher']} (rank {dist['rank']} of {dist['world_size']}, "
                     f"{dist['local_world_size']} on this node)"),
    ]
    checks = [("check", "required", "found", "ok")] + [
        (c["name"], c["required"], c["found"] or "-", "yes" if c["ok"] else "NO") for c in report["checks"]]
    variables = [("variable", "value", "source", "takes effect")] + [
        (name, v["value"], v["source"], _takes_effect(name, v["effective"], v.get("withheld", False)))
        for name, v in report["vars"].items()]
    threads, torch_cfg = report["threads"], report["torch"]
    failed = [c["name"] for c in report["checks"] if not c["ok"]]
    lines = [
        f"hydra-train-bootstrap doctor: preset {report['preset']}"
        + (f" ({' '.join(report['overrides'])})" if report["overrides"] else ""),
        *([f"resolved: {describe_resolved(report['resolved'])}"] if report["resolved"] else []),
        "", "Machine", _table(machine),
        "", "Checks", _table(checks) if report["checks"] else "  (the preset requires nothing)",
        "", "Variables", _table(variables),
        "", "Lint", _table([("variable", "finding", "")]
                           + [(f["name"], f["kind"], f["message"]) for f in report["lint"]])
        if report["lint"] else "  (nothing to report)",
        *(_flight_recorder(report["distributed"]["hang"]) if report["distributed"].get("hang") else []),
        "", "Torch",
        _table([("threads", f"intra_op {threads['intra_op']}, inter_op {threads['inter_op']}"),
                ("matmul precision", torch_cfg["matmul_precision"]),
                ("cuDNN", f"allow_tf32 {torch_cfg['cudnn_allow_tf32']}, benchmark {torch_cfg['cudnn_benchmark']}"),
                ("deterministic", torch_cfg["deterministic"]),
                ("device", report["device"]),
                ("seed", f"{report['seed']['value']} (data seed {report['seed']['data_seed']})")]),
        "",
        "Result: " + (f"FAILED checks: {', '.join(failed)}" if failed else "every check passes"),
    ]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        report = diagnose(args.config_path, args.config_name, args.overrides)
    except (UsageError, BootstrapError) as error:
        print(f"bootstrap doctor: {masked_text(str(error), args.overrides)}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - any input gets a message and an exit status, never a traceback
        first = str(error).splitlines()[0] if str(error) else ""
        print(f"bootstrap doctor: {type(error).__name__}: {masked_text(first, args.overrides)}", file=sys.stderr)
        return 2
    if args.run_dir is not None:
        from bootstrap import hang  # only here: the dumps' reader is not needed for the rest

        report["distributed"]["hang"] = hang.findings(args.run_dir)
    try:
        print(json.dumps(report, indent=2) if args.json else format_text(report), flush=True)
    except BrokenPipeError:  # `bootstrap doctor | head`: the reader has gone, which is not an error here
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
    return 0 if all(c["ok"] for c in report["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
