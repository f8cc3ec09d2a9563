"""A Hydra job's config, read into the arguments of a :class:`~bootstrap.core.session.Session`.

The one place that reads Hydra's job config, used by the callback (at job start) and by
``bootstrap doctor`` (:func:`preview`, on a config :mod:`bootstrap.core.compose` composed), so
both find the preset and the overrides the same way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from omegaconf import DictConfig, OmegaConf

from bootstrap.core import presets
from bootstrap.doors import overrides
from bootstrap.doors.errors import BootstrapError
from bootstrap.doors.records import Report


def typed_overrides(config: DictConfig) -> List[str]:
    """The job's command-line overrides as typed. Reading ``hydra.overrides.task`` through
    OmegaConf would resolve interpolations inside the strings: a secret's value from
    ``${oc.env:HF_TOKEN}``, or an error for ``${.lr}``."""
    def listed(key: str) -> List[str]:
        node = OmegaConf.select(config, key, default=None)
        items = OmegaConf.to_container(node, resolve=False) if node is not None else None
        return [str(o) for o in items] if isinstance(items, list) else []

    # Hydra files overrides of `hydra.*` keys apart, the callback form's among them
    # (`+env@hydra.callbacks.bootstrap.env=h100`, `hydra.callbacks.bootstrap.env.threads.intra_op=1`).
    # A key and a package stand in the text as typed: one that does not hold the callback's key is not parsed
    # (Hydra's parser takes about a millisecond an override, and each job of a sweep has its own).
    callback = presets.CALLBACK_KEY
    return listed("hydra.overrides.task") + [
        text for text in listed("hydra.overrides.hydra")
        if callback in text
        and ((o := overrides.split(text)).key.startswith(callback) or o.package.startswith(callback))]


def find_preset(config: DictConfig, config_key: Optional[str] = None) -> Tuple[str, Any]:
    """``(key, node)`` of the job's preset: ``config_key`` if given, else the callback's own
    (``hydra.callbacks.bootstrap.env``), else the first of ``presets.KEYS``.

    Two presets in one job (the callback's and a top-level one of ours) are refused: which one
    applies would be a guess."""
    if config_key:
        node = OmegaConf.select(config, config_key)
        if node is None:
            raise BootstrapError(f"hydra.callbacks.bootstrap.config_key={config_key!r}, but the config has no "
                                 f"{config_key!r} node. Choose a preset there, or set config_key to null.")
        return config_key, node
    beneath_callback = OmegaConf.select(config, presets.CALLBACK_KEY)
    top_level = [(key, node) for key in presets.KEYS if (node := OmegaConf.select(config, key)) is not None]
    if beneath_callback is not None:
        ours = [key for key, node in top_level if key == presets.ALIAS_GROUP or _is_preset(node)]
        if ours:
            raise BootstrapError(
                f"Two presets in one job: {presets.CALLBACK_KEY} and {ours[0]}. Keep one: drop "
                f"'{presets.choose_override(presets.CALLBACK_KEY, '...')}' from the command line, or the "
                f"'{ours[0]}' entry from the defaults list.")
        return presets.CALLBACK_KEY, beneath_callback
    if top_level:
        key, node = top_level[0]
        kind = OmegaConf.get_type(node) if isinstance(node, DictConfig) else None
        if key == presets.GROUP and kind not in (None, dict) and not _is_preset(node):
            raise BootstrapError(
                f"'{key}' holds the app's own config ({kind.__name__}), not a bootstrap preset. Choose ours under "
                f"its second name, '- {presets.ALIAS_GROUP}: {presets.CPU_PRESET}' in the defaults list, or "
                f"beneath the callback: '{presets.choose_override(presets.CALLBACK_KEY, presets.CPU_PRESET)}'.")
        return key, node
    raise BootstrapError(
        "hydra/callbacks=bootstrap is enabled but the job has no preset. "
        + (f"This app's primary config is a dataclass, which takes no new top-level key: pass "
           f"'{presets.choose_override(presets.CALLBACK_KEY, presets.CPU_PRESET)}'. (If its defaults list chooses "
           f"one, put '_self_' first there: merged last, the dataclass's own '{presets.GROUP}' field replaces it.)"
           if _is_structured(config) else
           f"Choose one: add '- {presets.GROUP}: {presets.CPU_PRESET}' to the defaults list (after the app's own "
           f"defaults), or pass +{presets.GROUP}={presets.CPU_PRESET} (or, for any app, "
           f"'{presets.choose_override(presets.CALLBACK_KEY, presets.CPU_PRESET)}')."))


def timeout_s(config: DictConfig, config_key: Optional[str] = None) -> int:
    """The job's ``env.distributed.timeout_s``, read before the preset is (the run directory is agreed on
    before the job starts): the schema's default where the job has no preset or the value is not one the
    schema takes (the job's start then refuses it, naming the key)."""
    from bootstrap.core.schema import Distributed, is_timeout

    try:
        _, node = find_preset(config, config_key)
        value = OmegaConf.select(node, "distributed.timeout_s", default=None)
    except Exception:  # noqa: BLE001 - no preset, or one that does not resolve: the job's start says why
        value = None
    return value if is_timeout(value) else Distributed.timeout_s


def _is_preset(node: Any) -> bool:
    from bootstrap.core.schema import EnvConfig

    return isinstance(node, DictConfig) and OmegaConf.get_type(node) is EnvConfig


def _is_structured(config: DictConfig) -> bool:
    """A dataclass primary config (hydra-zen's builds/make_config, Hydra's structured configs)."""
    kind = OmegaConf.get_type(config)
    return kind is not None and kind is not dict


def remember_secrets(config: DictConfig) -> None:
    """The app's own secrets (``db.password: x`` in its config) are masked in everything the package
    writes, the task's error included. A secret built by interpolation (``pw_${suffix}``) is resolved
    as the task would resolve it; one that cannot be resolved here is left to the task."""
    from bootstrap.doors import outbound
    from bootstrap.doors.masking import names_a_credential

    def visit(node: Any, path: str, name: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                visit(value, f"{path}.{key}" if path else str(key), str(key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                visit(value, f"{path}.{index}", name)
        elif isinstance(node, str) and names_a_credential(name):
            if "${" not in node:
                outbound.remember(node)
                return
            try:
                outbound.remember(OmegaConf.select(config, path))
            except Exception:  # noqa: BLE001 - an interpolation that fails here fails in the task too
                pass

    try:
        tree = OmegaConf.to_container(config, resolve=False)
    except Exception:  # noqa: BLE001 - a config OmegaConf cannot convert: the preset's checks still run
        return
    if not isinstance(tree, dict):  # a DictConfig's is
        return
    tree.pop("hydra", None)
    visit(tree, "", "")


def _thread_vars(typed: List[str], key: str) -> frozenset:
    """A thread count given on the command line (``env.threads.intra_op=2``) is an override: the
    variables derived from it win over the shell and the launcher as it does, so torch, OpenMP and
    MKL agree (Ray exports OMP_NUM_THREADS=1 in every worker). ``auto`` is no count: the user's own
    OMP_NUM_THREADS still feeds it."""
    name = f"{key}.threads.intra_op"
    given = [o for o in map(overrides.split, (t for t in typed if name in t)) if o.key == name and o.prefix != "~"]
    if given and given[-1].value not in (None, "auto"):
        return frozenset({"OMP_NUM_THREADS", "MKL_NUM_THREADS"})
    return frozenset()


def app_seed(config: DictConfig, key: str, env_cfg: Any, typed: List[str]) -> Optional[str]:
    """The app's own top-level ``seed`` (lightning-hydra-template's, which its ``train.py`` hands to
    ``L.seed_everything``; ``null``: unseeded) wins over the preset's ``<key>.seed``: the app's config is the user's,
    the preset ours, as the user's environment wins over the preset's variables. Set into the preset's node here,
    unless the command line gives ``<key>.seed`` (that wins over both). Returns the line that says so, once, where
    the two differed; None where the app has no such seed, or it agrees."""
    if "seed" not in config or \
            any(o.key == f"{key}.seed" for o in map(overrides.split, (t for t in typed if f"{key}.seed" in t))):
        return None
    try:
        theirs, ours = OmegaConf.select(config, "seed"), OmegaConf.select(env_cfg, "seed")
    except Exception:  # noqa: BLE001 - a seed that does not resolve here is the app's own business
        return None
    if theirs == ours or isinstance(theirs, bool) or not (theirs is None or isinstance(theirs, int)):
        return None
    from omegaconf import read_write

    with read_write(env_cfg):
        env_cfg.seed = theirs
    seeded = "nothing is seeded (the app leaves it unseeded)" if theirs is None else f"the job is seeded with {theirs}"
    return (f"{key}.seed: the app's own seed={theirs if theirs is not None else 'null'} wins over the preset's "
            f"{key}.seed={ours} (the app's config is yours): {seeded}; give {key}.seed=N on the command line to "
            "choose another")


def session_args(config: DictConfig, config_key: Optional[str] = None) -> Dict[str, Any]:
    """Keyword arguments for ``Session(...)`` from a job config that holds its ``hydra`` node."""
    hydra_cfg = config.hydra
    typed = typed_overrides(config)
    remember_secrets(config)
    key, env_cfg = find_preset(config, config_key)
    choices = hydra_cfg.runtime.choices  # a group chosen into another node is listed as group@node
    name = choices.get(key) or choices.get(f"{presets.group_for(key)}@{key}")
    seeded = app_seed(config, key, env_cfg, typed)
    return dict(env_cfg=env_cfg, name=name, key=key,
                env_set=hydra_cfg.job.env_set, explicit_vars=overrides.var_names(typed, key) | _thread_vars(typed, key),
                job_overrides=typed, job_num=hydra_cfg.job.get("num"), notes=[seeded] if seeded else [])


def require_preset(config: DictConfig) -> None:
    """A config a command composed (``bootstrap doctor``, ``bootstrap dryrun``) holds a preset, or ComposeError saying
    what to add: the commands compose as the app does, and the callback's own message (a job whose callback is
    enabled) would name a setting the app never made."""
    from bootstrap.core.compose import ComposeError

    if not any(key in config for key in presets.KEYS) and OmegaConf.select(config, presets.CALLBACK_KEY) is None:
        raise ComposeError(f"The composed config has no preset: add +{presets.GROUP}={presets.CPU_PRESET} (or another "
                           f"preset) to the command ({presets.GROUP}={presets.CPU_PRESET} where the primary config's "
                           f"defaults list {presets.GROUP}), or "
                           f"'{presets.choose_override(presets.CALLBACK_KEY, presets.CPU_PRESET)}' for an app whose "
                           "primary config is a dataclass.", usage=True)  # the command's to fix: the app runs without


def preview(config: DictConfig) -> Tuple[Report, list]:
    """``bootstrap doctor``'s answer for a composed job config: the report the bootstrap would write,
    without applying anything, and the reasons the job would stop (:func:`bootstrap.core.verdict.of_preview`).
    :class:`~bootstrap.core.compose.ComposeError` when the config holds no preset."""
    from bootstrap.core import verdict
    from bootstrap.core.session import Session

    require_preset(config)
    session = Session(**session_args(config))
    environ_now = {**os.environ, **{k: str(v) for k, v in session.env_set.items()}}
    preview, plan = session.preview(), session.plan
    assert plan is not None  # preview() made it
    return preview, verdict.of_preview(session.preset, plan, environ_now, session.name, session.cpu_override,
                                       session.named, session.key, preview.warnings)


def measure_preflight(config: DictConfig) -> Report:
    """``bootstrap doctor --preflight``: the job's preset applied here for a moment, its preflight check run (a
    lone process measures its matmul too; a finding is reported, not raised), and everything put back. Under
    torchrun every rank runs it, and the collective part runs too. Returns the report the job would start with."""
    import tempfile

    from bootstrap.core.schema import PreflightMode
    from bootstrap.core.session import Session

    with tempfile.TemporaryDirectory(prefix="bootstrap-doctor-") as scratch:
        session = Session(**session_args(config))
        wanted = session.preset.preflight
        if wanted.network is not None and session.preset.distributed.backend.value == "nccl":
            session.output_dir = Path(scratch)  # where NCCL logs its start, to read the network it chose
        wanted.mode = PreflightMode.warn
        session.preflight_always = True
        with session:
            return session.report  # type: ignore[return-value]
