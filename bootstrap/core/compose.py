"""Compose a preset, or an app's whole config, through Hydra's compose API: the one place that does.

Hydra composes only inside a global context. A running Hydra app has one, whose search path
holds the app's own presets (which shadow ours), and ``env=auto`` composes its preset there.
Elsewhere (``doctor``, ``lint``, ``tune``, the plain API) :func:`context` makes a temporary
one, and puts back whatever was there when it ends.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager, Iterator, List, Optional, Sequence

from bootstrap.core import presets
from bootstrap.doors import inbound
from bootstrap.doors.masking import masked_text

if TYPE_CHECKING:
    from omegaconf import DictConfig

FALLBACK_CONFIG = "bootstrap_doctor"  # the doctor's primary config when the package has none (a wheel)


class ComposeError(Exception):
    """Nothing to compose as asked: the message says what to pass instead. ``usage``: the command's own flags are
    wrong (``--config-path`` names no directory, ``--module`` does not import, no primary config there), not the
    config: a job started as asked would not even reach Hydra. Otherwise Hydra refuses the config as the job's own
    Hydra would (an unknown preset, a key or a value it cannot merge): the job stops there, with exit status 1."""

    def __init__(self, message: str, usage: bool = False):
        super().__init__(message)
        self.usage = usage


_PLUS_ADVICE = re.compile(r"\nTo append to your config use \+\S.*")
_UNKNOWN_KEY = re.compile(r"Key '[^']+' not in '\w+'\s+full_key: (\S+)")


def explained(error: BaseException) -> str:
    """Hydra's message with its cause, as Hydra prints it when it stops a job (``Error merging override env.seed=abc``
    then ``Value 'abc' of type 'str' could not be converted to Integer``): the outer line alone says no reason. For a
    key the preset does not have, Hydra's advice (``To append to your config use +env.threds.intra_op=2``) is
    replaced by the nearest setting: a ``+`` would add the key, and the job would then refuse it."""
    text = str(error)
    cause = error.__cause__
    if cause is not None and str(cause) and str(cause) not in text:
        text += "\n" + str(cause)
    unknown = _UNKNOWN_KEY.search(text)
    if unknown and _PLUS_ADVICE.search(text):
        text = _PLUS_ADVICE.sub("", text, count=1)
        text += "\n" + nearest_setting(unknown.group(1), (*presets.KEYS, presets.CALLBACK_KEY))
    return text


def nearest_setting(full_key: str, preset_keys: Sequence[str]) -> str:
    """For a key Hydra refused while composing (``env.threds``, beneath one of ``preset_keys``): the line
    ``schema.check_keys`` says, naming the nearest setting (Hydra's own advice, a ``+``, would add the key)."""
    from bootstrap.core import schema
    from bootstrap.doors.errors import PRESET_KEY

    under = next((key for key in sorted(preset_keys, key=len, reverse=True) if full_key.startswith(key + ".")), None)
    tree: Any = None
    for part in reversed(full_key[len(under) + 1:].split(".") if under else []):
        tree = {part: tree}
    found = schema.unknown_key(tree) if under else None
    if found is None or under is None:
        return f"{full_key}: no such key in the config."
    return schema.no_such_setting(*found, "and a '+' would add it for the job to refuse").replace(PRESET_KEY, under)


def running() -> bool:
    """Is there a Hydra context already: a running app's, or one :func:`context` made?"""
    from hydra.core.global_hydra import GlobalHydra

    return GlobalHydra.instance().is_initialized()


def context(config_dir: Optional[Path] = None, job_name: str = "bootstrap") -> ContextManager[None]:
    """A temporary Hydra context (a ``with`` block) searching ``config_dir`` first, then the search
    path plugins (our presets); with ``config_dir`` None, only those and Hydra's ConfigStore."""
    from hydra import initialize, initialize_config_dir

    if config_dir is None:
        return initialize(config_path=None, job_name=job_name, version_base="1.3")
    return initialize_config_dir(config_dir=str(Path(config_dir).resolve()), job_name=job_name, version_base="1.3")


def preset(name: str, key: str, overrides: Sequence[str] = (), group: Optional[str] = None,
           config_name: Optional[str] = None) -> DictConfig:
    """The preset ``name`` composed into the node ``key`` (from ``group``, by default the one that
    fills ``key``), ``overrides`` on top, on ``config_name`` (None: an empty primary config).

    In the Hydra context there is; with none (the plain API), from this package's config directory.
    """
    from hydra import compose

    arguments = [f"+{group or presets.group_for(key)}@{key}={name}", *overrides]
    if running():
        return compose(config_name=config_name, overrides=arguments)[key]
    with context(presets.CONF_DIR):
        return compose(config_name=config_name, overrides=arguments)[key]


def import_app(module: str) -> None:
    """Import an app's module so its configs reach Hydra's ConfigStore. hydra-zen's ``store`` holds
    them until ``store.add_to_hydra_store()``, which an app calls only under ``__main__``: so it is
    called here too."""
    import importlib
    import sys

    here = str(Path.cwd())
    sys.path.insert(0, here)  # `python -m bootstrap doctor --module app` from the app's folder
    try:
        importlib.import_module(module)
    except Exception as error:  # noqa: BLE001 - the app's own import error: a usage problem here
        raise ComposeError(f"--module {module}: cannot import it ({type(error).__name__}: "
                           f"{inbound.first_line(error) if str(error) else ''}).", usage=True) from None
    finally:
        if here in sys.path:  # the app may have put entries of its own first (rootutils does)
            sys.path.remove(here)
    zen = sys.modules.get("hydra_zen")
    if zen is not None:
        zen.store.add_to_hydra_store(overwrite_ok=True)


@contextmanager
def app_config(config_dir: Optional[Path], config_name: Optional[str], overrides: List[str],
               module: Optional[str] = None) -> Iterator:
    """The job config an app would compose (its ``hydra`` node included), used inside the app's Hydra
    context, so that ``env=auto`` composes its preset from the app's own search path.

    ``config_dir`` None: this package's ``conf/`` (train_stub's), or with ``module`` (imported first,
    :func:`import_app`) only what the module registers and the presets. :class:`ComposeError` when
    there is nothing to compose: an unknown preset or primary config, an override Hydra refuses.
    """
    from hydra import compose
    from hydra.core.config_store import ConfigStore
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    if config_dir is not None and not Path(config_dir).is_dir():
        raise ComposeError(f"--config-path {config_dir}: no such directory.", usage=True)
    suggest_module = module is None and config_dir is None  # the configs may be in the app's Python
    if module is not None:
        import_app(module)
    elif config_dir is None:
        config_dir = presets.CONF_DIR
        if config_name is None and not (config_dir / "config.yaml").exists():
            ConfigStore.instance().store(name=FALLBACK_CONFIG,
                                         node={"defaults": [{presets.GROUP: presets.CPU_PRESET}, "_self_"]})
            config_name = FALLBACK_CONFIG
    with context(config_dir):
        try:
            cfg = compose(config_name=config_name or "config", overrides=overrides, return_hydra_config=True)
        except MissingConfigException as error:
            missing = re.search(r"Could not find '(?:bootstrap_)?env/([^']+)'", str(error))
            if missing:
                raise ComposeError(f"unknown preset '{missing.group(1)}'. Presets that exist: "
                                   f"{', '.join(_preset_names())}.") from None
            where = f"in {config_dir}" if config_dir else "in the ConfigStore"
            hint = "" if not suggest_module else \
                " If the app registers its configs in Python (hydra-zen), add --module <its module>."
            raise ComposeError(f"no primary config '{config_name or 'config'}' {where} "
                               f"({inbound.first_line(error).rstrip('.')}).{hint}", usage=True) from None
        except (HydraException, OmegaConfBaseException) as error:
            raise ComposeError(masked_text(explained(error), overrides)) from None
        yield cfg


def _preset_names() -> List[str]:
    from hydra.core.global_hydra import GlobalHydra

    loader = GlobalHydra.instance().config_loader()
    groups = (presets.GROUP, presets.ALIAS_GROUP)
    return sorted({option for group in groups for option in loader.get_group_options(group)})


def which(config_dir: Optional[Path], config_name: Optional[str], module: Optional[str] = None,
          whence: str = "") -> str:
    """One line naming the config a command composes (``whence``: where the command found it, if not typed)."""
    if module is not None:
        return f"config: {config_name or 'config'} from what --module {module} registers, and the presets"
    if config_dir is None:
        return (f"config: the package's own ({presets.CONF_DIR / 'config.yaml'}, train_stub's), not an app's: for "
                "your app's, pass --config-path <its config directory> --config-name <its primary config>")
    return f"config: {config_name or 'config'} from {Path(config_dir).resolve()}{whence}"


def say_which(line: str, err: bool) -> None:
    """Say :func:`which`'s line first (``err``: on stderr, where stdout holds JSON). A reader that has gone
    (``bootstrap doctor | head -0``) is no error here: stdout then goes nowhere, and the command goes on."""
    import os

    from bootstrap.doors import outbound

    try:
        outbound.say(line, err=err)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2 if err else 1)
