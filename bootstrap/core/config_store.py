"""The preset schema and the shipped presets in Hydra's ConfigStore, registered when ``bootstrap`` is imported (every
Hydra app of the environment imports it through the package's plugin), each entry built when a composition first loads
it."""

from __future__ import annotations

from typing import Any, Optional

from bootstrap.core import presets
from bootstrap.core.schema import FREE_FORM, EnvConfig


def register() -> None:
    """Store the schema where presets find it (``defaults: [/bootstrap/schema/env@_here_]``),
    and the shipped presets a second time as the group ``bootstrap_env``, for apps that
    already have a config group named ``env``. The YAML files stay the single source.

    This runs in every Hydra app of an environment that has the package (through its
    plugin), so it is kept cheap: each entry is built when a composition first loads it
    (see :func:`_store_on_first_use`), from libyaml's parser where available.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    _store_on_first_use("bootstrap/schema", "env", free_form_schema)
    for group, folder in ((presets.ALIAS_GROUP, presets.PRESET_DIR),
                          (f"{presets.ALIAS_GROUP}/{presets.FABRIC_GROUP}", presets.PRESET_DIR / presets.FABRIC_GROUP)):
        for path in sorted(folder.glob("*.yaml")):
            _store_on_first_use(group, path.stem, provider="hydra-train-bootstrap",
                                make=lambda path=path: yaml.load(path.read_text(), Loader=loader))


def free_form_schema() -> Any:
    """The schema as presets extend it, its free-form maps (:data:`FREE_FORM`) open to new keys: Hydra merges an
    override into struct mode, where ``env.distributed.mesh={dp: -1, tp: 2}`` or ``env.vars.NCCL_ALGO=Ring`` would
    need a ``+`` that docs/presets.md never asks for (a mesh's dimensions, a variable's name, are the user's)."""
    from omegaconf import OmegaConf

    node = OmegaConf.structured(EnvConfig)
    for path in FREE_FORM:
        OmegaConf.set_struct(OmegaConf.select(node, path), False)
    return node


def _store_on_first_use(group: str, name: str, make: Any, provider: Optional[str] = None) -> None:
    """``ConfigStore.store(group=group, name=name, node=make())``, the node built when first loaded.

    ``store`` types its node at once (``OmegaConf.structured``): about 6 ms for the schema and 4 ms for
    the five presets, paid by every Hydra app of the environment, though a job loads at most the schema
    and one preset. Hydra lists a group's options from the store's keys, and loads an entry by reading
    its ``node`` (then copies it): so the entry is a ``ConfigNode`` whose node is made on that read,
    once, and shared by every copy. A Hydra without that layout gets the plain ``store``."""
    from hydra.core.config_store import ConfigNode, ConfigStore
    from omegaconf import OmegaConf

    store = ConfigStore.instance()
    repo = getattr(store, "repo", None)
    if not (isinstance(repo, dict) and "node" in getattr(ConfigNode, "__dataclass_fields__", {})):
        store.store(group=group, name=name, node=make(), provider=provider)
        return

    class Deferred(ConfigNode):
        built: list = [None]  # a class per entry: its node, shared by the copies ConfigStore.load makes

        @property
        def node(self) -> Any:
            own = self.__dict__.get("own")  # a copy's own deep copy (ConfigStore.load sets it)
            if own is not None:
                return own
            if self.built[0] is None:
                self.built[0] = OmegaConf.structured(make())
            return self.built[0]

        @node.setter
        def node(self, value: Any) -> None:
            self.__dict__["own"] = value

    folder = repo
    for part in group.split("/"):
        folder = folder.setdefault(part, {})
    # node: built on first load, by the property above
    folder[f"{name}.yaml"] = Deferred(name=f"{name}.yaml", node=None,  # type: ignore[arg-type]
                                      group=group, package=None, provider=provider)
