"""``bootstrap doctor``: what the bootstrap would do here, without doing it.

Composes the config an app would compose, runs the version checks and works out
every setting, then prints the machine, the checks and the variables (or the same
as JSON, in the ``bootstrap.json`` schema). Nothing is applied and no task runs.
It is what a user pastes into a bug report.

Exit status, the job's verdict (:mod:`bootstrap.verdict`, which the job itself stops by):

- 0: the job would start (a failed check under ``on_mismatch=warn`` is shown, and starts);
- 1: the job would stop, and every reason is said: a value the bootstrap refuses (a thread
  count, a bad ``MASTER_PORT``, launcher variables that do not add up), a lint finding under
  ``env.lint=error``, a value torch would refuse (``TORCH_DISTRIBUTED_DEBUG=1``), a failed
  check under ``on_mismatch=error``;
- 2: no verdict: bad usage, or a config Hydra cannot compose (the job would not reach the
  bootstrap either).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import List, Optional, Tuple

from bootstrap import outbound, presets
from bootstrap.errors import BootstrapError
from bootstrap.masking import masked_text

FALLBACK_CONFIG = "bootstrap_doctor"  # used when the package has no train_stub config (installed from a wheel)


class UsageError(Exception):
    """Bad command line or config: exit status 2."""


def _parser() -> outbound.ArgumentParser:
    parser = outbound.ArgumentParser(
        prog="bootstrap doctor",
        description="Show the machine, the preset's checks and every setting the bootstrap would apply, "
                    "without applying anything.")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. env=h100 env.threads.intra_op=4")
    parser.add_argument("--config-path", help="the app's config directory (default: this package's conf/)")
    parser.add_argument("--config-name", default=None, help="the app's primary config (default: config)")
    parser.add_argument("--module", default=None,
                        help="import this module first: an app whose configs are registered in Python "
                             "(hydra-zen's store, Hydra's ConfigStore), e.g. --module my_app.train; with no "
                             "--config-path, only what it registers (and the presets) is searched")
    parser.add_argument("--json", action="store_true", help="print JSON in the bootstrap.json schema")
    parser.add_argument("--run-dir", type=Path, help="a job's output directory: also say what its flight-recorder "
                                                      "dumps show (distributed.hang)")
    return parser


def _import_app(module: str) -> None:
    """Import the app's module so its configs reach Hydra's ConfigStore. hydra-zen's ``store`` holds
    them until ``store.add_to_hydra_store()``, which an app calls only under ``__main__``: so it is
    called here too."""
    import importlib
    import sys

    here = str(Path.cwd())
    sys.path.insert(0, here)  # `python -m bootstrap doctor --module app` from the app's folder
    try:
        importlib.import_module(module)
    except Exception as error:  # noqa: BLE001 - the app's own import error: a usage problem here
        raise UsageError(f"--module {module}: cannot import it ({type(error).__name__}: "
                         f"{str(error).splitlines()[0] if str(error) else ''}).") from None
    finally:
        if here in sys.path:  # the app may have put entries of its own first (rootutils does)
            sys.path.remove(here)
    zen = sys.modules.get("hydra_zen")
    if zen is not None:
        zen.store.add_to_hydra_store(overwrite_ok=True)


def diagnose(config_path: Optional[str], config_name: Optional[str], overrides: List[str],
             module: Optional[str] = None) -> Tuple[dict, list]:
    """Compose the job config the app would compose, preview the bootstrap on it and say why the job
    would stop: ``(report, [verdict.Refusal, ...])``.

    Both happen inside one Hydra context, so env=auto loads its preset from the app's
    own search path. UsageError when there is nothing to preview; the BootstrapError the job
    would stop with when the preset or the launcher's variables are refused.
    """
    from hydra import compose as hydra_compose
    from hydra.core.config_store import ConfigStore
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    import bootstrap  # noqa: F401  registers the schema

    if module is not None:
        _import_app(module)
    if config_path is None and module is not None:
        config_dir = None  # the app's configs are in the ConfigStore
    elif config_path is None:
        config_dir = presets.CONF_DIR
        if config_name is None and not (config_dir / "config.yaml").exists():
            ConfigStore.instance().store(name=FALLBACK_CONFIG,
                                         node={"defaults": [{presets.GROUP: presets.CPU_PRESET}, "_self_"]})
            config_name = FALLBACK_CONFIG
    else:
        config_dir = Path(config_path).resolve()
        if not config_dir.is_dir():
            raise UsageError(f"--config-path {config_path}: no such directory.")
    with _hydra_context(config_dir):
        try:
            cfg = hydra_compose(config_name=config_name or "config", overrides=overrides, return_hydra_config=True)
        except MissingConfigException as error:
            missing = re.search(r"Could not find '(?:bootstrap_)?env/([^']+)'", str(error))
            if missing:
                raise UsageError(f"unknown preset '{missing.group(1)}'. Presets that exist: "
                                 f"{', '.join(_presets())}.") from None
            where = f"in {config_dir}" if config_dir else "in the ConfigStore"
            hint = "" if module or config_path else \
                " If the app registers its configs in Python (hydra-zen), add --module <its module>."
            raise UsageError(f"no primary config '{config_name or 'config'}' {where} "
                             f"({str(error).splitlines()[0].rstrip('.')}).{hint}") from None
        except (HydraException, OmegaConfBaseException) as error:
            raise UsageError(masked_text(str(error), overrides)) from None
        return preview(cfg)


def _hydra_context(config_dir: Optional[Path]):
    from hydra import initialize, initialize_config_dir

    if config_dir is None:
        return initialize(config_path=None, version_base="1.3")
    return initialize_config_dir(config_dir=str(config_dir), version_base="1.3")


def _presets() -> List[str]:
    from hydra.core.global_hydra import GlobalHydra

    loader = GlobalHydra.instance().config_loader()
    groups = (presets.GROUP, presets.ALIAS_GROUP)
    return sorted({option for group in groups for option in loader.get_group_options(group)})


def preview(cfg) -> Tuple[dict, list]:
    """The report the bootstrap would write for this config, without applying it, and the reasons
    the job would stop (:func:`bootstrap.verdict.of_preview`)."""
    from omegaconf import OmegaConf

    from bootstrap import verdict
    from bootstrap.jobconfig import session_args
    from bootstrap.session import Session

    if not any(key in cfg for key in presets.KEYS) and OmegaConf.select(cfg, presets.CALLBACK_KEY) is None:
        raise UsageError(f"The composed config has no preset: choose one, e.g. {presets.GROUP}={presets.CPU_PRESET}, "
                         f"or '{presets.choose_override(presets.CALLBACK_KEY, presets.CPU_PRESET)}' for an app whose "
                         "primary config is a dataclass.")
    session = Session(**session_args(cfg))
    report = session.preview()
    if hasattr(report, "to_json"):  # a typed bootstrap.records.Report: printed in the bootstrap.json schema
        report = report.to_json()
    return report, verdict.of_preview(session)


def _table(rows: List[tuple], indent: str = "  ") -> str:
    """Aligned columns; every cell one line, whatever a value holds (a variable's value may hold a newline)."""
    rows = [tuple(outbound.clean(cell, one_line=True) for cell in row) for row in rows]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)
    return "\n".join(indent + line for line in lines)


def _describe_resolved(resolved: dict) -> str:
    """A report's ``resolved`` as one phrase: ``auto -> cpu_debug (no CUDA device)``."""
    return f"{resolved['from']} -> {resolved['preset']} ({resolved['reason']})"


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
    """What the dumps show; each line stays one line, whatever a dump's fields hold."""
    if not hang["dumps"]:
        lines = [f"no dumps of this run in {hang['dump_dir']} (a healthy run writes none)", *hang.get("notes", [])]
    else:
        lines = [f"dumps in {hang['dump_dir']}: {', '.join(hang['dumps'])}", *hang["groups"],
                 *(hang["findings"] or ["no divergence between the ranks"]), *hang.get("notes", []),
                 f"(python -m bootstrap hang {hang['dump_dir']})"]
    return ["", "Flight recorder", *("  " + outbound.clean(line, one_line=True) for line in lines)]


def format_text(report: dict, refusals: Optional[list] = None) -> str:
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
        outbound.clean(f"hydra-train-bootstrap doctor: preset {report['preset']}"
                       + (f" ({' '.join(report['overrides'])})" if report["overrides"] else ""), one_line=True),
        *([outbound.clean(f"resolved: {_describe_resolved(report['resolved'])}", one_line=True)]
          if report["resolved"] else []),
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
        *_result(failed, refusals or []),
    ]
    return "\n".join(lines)


def _result(failed: List[str], refusals: list) -> List[str]:
    """The last lines: the job's verdict, and each reason it would stop for."""
    if not refusals:
        return [f"Result: FAILED checks: {', '.join(failed)}; the job starts anyway (on_mismatch=warn)" if failed
                else "Result: every check passes"]
    head = f"FAILED checks: {', '.join(failed)}; the job would stop" if failed else "the job would stop"
    lines = [f"Result: {head}:"]
    for refusal in refusals:
        lines += ["  " + line for line in refusal.message.splitlines()]
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    outbound.remember_overrides(args.overrides)  # a secret typed on the command line stays out of every answer
    try:
        report, refusals = diagnose(args.config_path, args.config_name, args.overrides, args.module)
    except UsageError as error:
        return _say_error(str(error), args.overrides, 2)
    except BootstrapError as error:  # what the job would stop with, before there is a plan to show
        return _say_error(f"the job would stop: {error}", args.overrides, 1)
    except Exception as error:  # noqa: BLE001 - any input gets a message and an exit status, never a traceback
        first = str(error).splitlines()[0] if str(error) else ""
        return _say_error(f"{type(error).__name__}: {first}", args.overrides, 2)
    if args.run_dir is not None:
        from bootstrap import hang  # only here: the dumps' reader is not needed for the rest

        report["distributed"]["hang"] = hang.findings(args.run_dir)
    if refusals:  # the job's own record of a stop holds its reason here too
        report["job"]["error"] = "\n".join(refusal.message for refusal in refusals)
    try:
        if args.json:
            outbound.say_json(report)
        else:
            outbound.say(format_text(report, refusals))
        if refusals:  # one line for whoever reads only stderr (--json into a file, a CI log)
            _say_error("the job would stop: " + "; ".join(r.message.splitlines()[0].rstrip(":") for r in refusals),
                       args.overrides)
    except BrokenPipeError:  # `bootstrap doctor | head`: the reader has gone, which is not an error here
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stdout's descriptor: no second error when Python flushes
    return 1 if refusals else 0


def _say_error(message: str, overrides: List[str], code: int = 1) -> int:
    outbound.say(f"bootstrap doctor: {masked_text(message, overrides)}", err=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
