"""Keep a sweep's winner as a preset (``bootstrap tune``, :mod:`bootstrap.cli.tune`).

Reads the latest sweep's per-job reports (a reused sweep directory's older jobs are left
out, see :func:`bootstrap.sweep.walk.latest`), takes the completed job that did best on the
objective (``--objective``/``--mode``, with the sweep summary's defaults), and writes
``conf/env/<name>.yaml`` (or ``<--out>/env/<name>.yaml``): it extends the winner's base
preset and sets only the ``env`` keys the sweep varied and the winner set, at the
winner's values, under a header that records where the numbers came from.

What it refuses, each with a one-line ``bootstrap tune: ...`` error and nothing written:

- a sweep with no job, no completed job, or a best job that did not complete cleanly;
- **a secret.** A varied ``env`` key counts as secret when any part of its path looks
  secret (``env.vars.HF_TOKEN``), or when the winner's value holds one: a dict or list
  with a secret-looking key at any depth (``env.vars={HF_TOKEN: ...}``), or text carrying
  a credential (``postgres://user:pw@host``, a ``ghp_``/``hf_`` token, ``'{API_KEY: x}'``).
  Tune refuses such a sweep rather than leave the key out (a preset that silently lacks
  a setting the winner ran with would not be the winner); the message names the key,
  never the value. Every override it shows is masked (:mod:`bootstrap.doors.masking`);
- **a preset that would not load.** Before writing, the text is composed the way an app
  would compose ``env=<name>`` (:mod:`bootstrap.core.compose`, searching a temporary directory
  that holds the new file, then ``--out``, then the shipped presets), merged into the schema
  and checked with :func:`bootstrap.core.schema.validate`. So a base preset that cannot be
  found, a value of the wrong type, or a name that would extend itself is refused. (Inside
  a running Hydra app, whose compose API is taken, the settings alone are checked.)
  Varied keys the winner did not set are left out, and named in the header;
- an ``--out`` that cannot be written (a file, a read-only directory, a name too long).
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, cast

import yaml

from bootstrap.core import compose, presets
from bootstrap.doors import inbound, outbound
from bootstrap.doors.masking import holds_secret, is_secret, masked_line, masked_override
from bootstrap.doors.overrides import split, typed_values
from bootstrap.doors.records import Report
from bootstrap.sweep import rank, read
from bootstrap.sweep.read import Job, RowStatus
from bootstrap.sweep.render import one_line

if TYPE_CHECKING:
    from omegaconf import DictConfig

NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_PRESET_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")  # env=gpu/h100 too
_MISSING = object()


class TuneError(Exception):
    """The sweep cannot give a preset; the message says why and what to do."""


def _shown(job: Job) -> str:
    return one_line(" ".join(masked_override(o) for o in job.overrides or [])) or "(no overrides)"


def _preset_key(values: Dict[str, Any]) -> str:
    """The key the winner's preset sits under, tried in the callback's order (``presets.KEYS``)."""
    return next((k for k in presets.KEYS if k in values or any(v.startswith(f"{k}.") for v in values)), presets.GROUP)


def _secret(dotted: str, value: Any, typed: Optional[str]) -> bool:
    """A setting tune must not write: by its path, by its value, or because the override as
    typed would be masked wherever it is shown."""
    return is_secret(dotted) or holds_secret(value) or (typed is not None and masked_override(typed) != typed)


def _fact(value: Any, limit: int = 120) -> str:
    """A value from a report, fit for one header line: masked, printable, short."""
    if value is None or isinstance(value, (dict, list)) and not value:
        return "?"
    if isinstance(value, list):
        text = ", ".join(str(v) for v in value if isinstance(v, (str, int, float)))
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = str(value)
    else:
        return "?"
    text = one_line(masked_line(text))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _comment(line: str) -> str:
    """One header line: masked, printable, every line break a space (a YAML comment ends at one)."""
    return "".join(" " if c.isspace() else c for c in outbound.printable(masked_line(line)))


def _base(report: Report) -> str:
    """The preset the winner ran with: what ``auto`` resolved to, or the one it named."""
    base = report.resolved.preset if report.resolved is not None else report.preset
    if base is None or not _PRESET_NAME.fullmatch(base):
        raise TuneError("the best job's report names no preset a tuned preset could extend; "
                        "sweep again with env=<preset> on the command line.")
    return base


def _settings(varied: List[str], key: str, winner: Dict[str, Any], typed: Dict[str, str]) -> tuple:
    """The tree of ``key.*`` settings the winner made, and the varied keys it did not set."""
    settings: Dict[str, Any] = {}
    unset = []
    for dotted in varied:
        if not dotted.startswith(f"{key}."):
            continue
        if dotted not in winner:  # another job set it; the winner ran with the base preset's value
            unset.append(dotted)
            continue
        value = winner[dotted]
        if _secret(dotted, value, typed.get(dotted)):
            raise TuneError(f"the sweep varied {one_line(masked_line(dotted))}, which holds or looks like a secret: "
                            "a tuned preset will not hold it. Sweep it without tune, or set it in the environment.")
        node = settings
        *parents, leaf = dotted[len(key) + 1:].split(".")
        for part in parents:  # sorted: a key comes before the keys below it
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise TuneError(f"the sweep set both {one_line(dotted)} and a value above it: "
                                "tune cannot tell which the winner used. Sweep one of them.")
        node[leaf] = value
    if "defaults" in settings:
        raise TuneError(f"the sweep varied {key}.defaults: a preset's defaults list is not a setting.")
    return settings, unset


def _compose(text: str, name: str, conf_dir: Optional[Path]) -> DictConfig:
    """The preset as an app composes ``env=<name>``: the new file first, then ``conf_dir``,
    then the shipped presets (the bootstrap's search path plugin)."""
    from omegaconf import OmegaConf

    if compose.running():  # inside a running Hydra app (compose API taken): the settings alone
        loaded = yaml.safe_load(text)
        return OmegaConf.create({k: v for k, v in loaded.items() if k != "defaults"})
    with tempfile.TemporaryDirectory(prefix="bootstrap_tune_") as tmp:
        outbound.write_text(Path(tmp) / presets.GROUP / f"{name}.yaml", text)
        primary = {"hydra": {"searchpath": [f"file://{Path(conf_dir).resolve()}"]}} \
            if conf_dir is not None and Path(conf_dir).is_dir() else {}
        outbound.write_text(Path(tmp) / "tune_check.yaml", yaml.safe_dump(primary))
        with compose.context(Path(tmp), job_name="bootstrap_tune"):
            return compose.preset(name, presets.GROUP, config_name="tune_check")


def check_loads(text: str, name: str, conf_dir: Optional[Path] = None) -> None:
    """Raise :class:`TuneError` unless the preset text composes and validates as ``env=<name>``."""
    from omegaconf import OmegaConf

    from bootstrap.core.schema import EnvConfig, validate

    try:
        env = _compose(text, name, conf_dir)
        validate(cast(EnvConfig, OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(EnvConfig), env))))
    except Exception as error:  # noqa: BLE001 - Hydra's, OmegaConf's and the schema's errors alike
        # Hydra's first line says where ("In 'env/mine': ConfigKeyError raised while composing config:"),
        # the next what ("Key 'bogus' not in 'Threads'"), and a later one the key ("full_key: env.threads.bogus").
        lines = [line.strip() for line in inbound.lines(str(error)) if line.strip()]
        picked = lines[:2] + [line for line in lines[2:] if line.startswith("full_key:")][:1]
        reason = one_line(masked_line(" ".join(picked))) if picked else type(error).__name__
        raise TuneError(f"the tuned preset would not load ({reason[:300]}); nothing was written. "
                        f"Pass --out the app's config directory if its base preset lives there.") from None


def build(sweep_dir: Path, name: str, objective: Optional[str] = None, mode: Optional[str] = None,
          conf_dir: Optional[Path] = Path("conf")) -> str:
    """The YAML text of the tuned preset, checked to load from ``conf_dir`` (see the module's docstring)."""
    sweep_dir = Path(sweep_dir)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise TuneError("--name: use letters, digits, '_', '-' and '.' only.")
    if mode is not None and mode not in rank.MODES:
        raise TuneError(f"--mode {one_line(mode)!r}: use max or min.")
    jobs, older = read.jobs(sweep_dir)
    if not jobs:
        raise TuneError(f"{sweep_dir} holds no sweep jobs (no */.hydra/overrides.yaml). "
                        "Point tune at a multirun directory, e.g. multirun/2026-12-02/10-00-00.")
    statuses = sorted({j.row.status for j in jobs})
    counts = one_line(", ".join(f"{s}: {sum(j.row.status == s for j in jobs)}" for s in statuses))
    directions = read.sweepers_directions(job.directory for job in jobs)
    chosen = rank.objective_for([j.row for j in jobs], objective, mode, directions)
    if chosen is None and objective is None and directions and len(directions) > 1:
        raise TuneError(f"the sweep optimised {len(directions)} objectives ({', '.join(directions)}): no single "
                        "best. Name the one to use: --objective return/0.")
    if chosen is None:
        if not any(j.row.status == RowStatus.COMPLETED for j in jobs):
            raise TuneError(f"no job of {sweep_dir} completed with a metric to compare ({counts}). "
                            "Fix the failing jobs and sweep again.")
        raise TuneError(f"the jobs of {sweep_dir} report no metric to compare (none of "
                        f"{', '.join(n for n, _ in rank.AUTO_OBJECTIVES)}). Name the one to use: --objective NAME.")
    metric, direction = chosen
    shown_metric = one_line(masked_line(metric))
    scored = [(score, j) for j in jobs if (score := rank.score(j.row, chosen)) is not None]
    measured = [j for _, j in sorted(scored, key=lambda pair: -pair[0])]
    if not any(j.row.status == RowStatus.COMPLETED for j in measured):
        raise TuneError(f"no job of {sweep_dir} completed with a {shown_metric} to compare ({counts}). "
                        "Fix the failing jobs and sweep again, or choose another --objective.")
    winner = measured[0]
    if winner.row.status != RowStatus.COMPLETED:
        raise TuneError(f"the best job by {shown_metric} ({_shown(winner)}) has status "
                        f"'{one_line(winner.row.status)}': a preset made from it would not run cleanly here. "
                        "Sweep again without it, or fix its checks.")
    runner_up = measured[1] if len(measured) > 1 else None

    won = typed_values(winner.overrides)
    if won is None or winner.overrides is None:  # (the second: None gives None)
        raise TuneError(f"the best job's overrides ({_shown(winner)}) are not plain Hydra overrides: "
                        "tune cannot tell what it set.")
    typed = {o.key: text for text in winner.overrides for o in [split(text)] if o.prefix != "~"}  # as typed
    every = [typed_values(j.overrides) for j in jobs]
    compared = [values for values in every if values is not None]
    all_keys = {k for values in compared for k in values}
    varied = sorted(k for k in all_keys if len({repr(values.get(k, _MISSING)) for values in compared}) > 1)
    key = _preset_key(won)
    settings, unset = _settings(varied, key, won, typed)
    report = winner.reports[0]  # completed: its reports were read
    base = _base(report)

    found = report.found
    not_preset = [k for k in varied if not k.startswith(f"{key}.") and k != key]
    header = [
        f"Tuned by `bootstrap tune` on {time.strftime('%Y-%m-%d')} from {sweep_dir.resolve()}",
        f"machine: {_fact(found.cpus)} CPUs (affinity {_fact(found.cpu_affinity)}), "
        f"{_fact(found.gpu_names) if found.gpu_names else 'no GPU'}, "
        f"torch {_fact(found.torch)}, python {_fact(found.python)}",
        f"objective: {shown_metric}, {'higher' if direction == 'max' else 'lower'} is better",
        f"winner:    {winner.row.metrics[metric]:.6g} {shown_metric}  ({_shown(winner)})",
        f"runner-up: {runner_up.row.metrics[metric]:.6g} {shown_metric}  ({_shown(runner_up)})" if runner_up
        else "runner-up: none (one measured job)",
        f"sweep varied: {', '.join(varied) or 'nothing'}",
    ]
    if unset:
        header.append(f"varied, but not set by the winner (the base preset's value stands): {', '.join(unset)}")
    if not_preset:
        header.append(f"not part of a preset, so not set here: {', '.join(not_preset)}")
    unparsed = len(every) - len(compared)
    if unparsed:
        header.append(f"jobs whose overrides could not be read, not compared: {unparsed}")
    if older:
        header.append(f"job directories of earlier sweeps into this directory, ignored: {older}")
    body = yaml.safe_dump({"defaults": [base, "_self_"]}, sort_keys=False)
    if settings:
        body += "\n" + yaml.safe_dump(settings, sort_keys=False, allow_unicode=True)
    # Cleaned before the check: the text checked is the text written (outbound.write_text cleans it alike).
    text = outbound.clean("".join(f"# {_comment(line)}\n" for line in header) + body)
    check_loads(text, name, conf_dir)
    return text


def _exists(path: Path) -> bool:
    """Is there anything (a dangling link too) at ``path``? Raises OSError for a name too long."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    return True


def _name_too_long(path: Path) -> bool:
    """Is the file name longer than its directory's filesystem allows? (Checked before the
    directory exists, where the OS would only say that it does not.)"""
    existing = path.parent
    while not existing.is_dir() and existing != existing.parent:
        existing = existing.parent
    try:
        limit = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    return len(os.fsencode(path.name)) > limit


def write(sweep_dir: Path, name: str, out: Path, force: bool = False, objective: Optional[str] = None,
          mode: Optional[str] = None) -> Tuple[Path, str]:
    """Build the tuned preset and write it as ``<out>/env/<name>.yaml``: ``(that path, its text)``.
    Raises only :class:`TuneError`, before anything is written when the preset cannot be made."""
    sweep_dir, out = Path(sweep_dir), Path(out)
    target = out / presets.GROUP / f"{name}.yaml"
    try:
        if not sweep_dir.is_dir():
            raise TuneError(f"{sweep_dir} is not a directory.")
    except OSError as error:
        raise TuneError(f"cannot read {sweep_dir}: {error.strerror or type(error).__name__}.") from None
    try:
        if out.exists() and not out.is_dir():
            raise TuneError(f"--out {out} is not a directory: give the app's config directory.")
        if _name_too_long(target):
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
        if _exists(target) and not force:
            raise TuneError(f"{target} exists; pass --force to overwrite it.")
    except OSError as error:
        raise TuneError(f"cannot write {target}: {error.strerror or type(error).__name__}.") from None
    text = build(sweep_dir, name, objective, mode, conf_dir=out)
    try:
        outbound.write_text(target, text)
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
        raise TuneError(f"cannot write {target}: {reason}.") from None
    return target, text
