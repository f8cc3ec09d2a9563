"""hydra-train-bootstrap: the start-up step of a PyTorch training job, as Hydra config.

    with bootstrap.initialize(cfg.env) as session:   # plain Python
        ...

    hydra/callbacks=bootstrap                        # in a Hydra app

Importing the package registers the ``env`` group's schema in Hydra's ConfigStore and the resolver
``${bootstrap_exclude:FILE}`` (:mod:`bootstrap.adapter.resolvers`), and nothing else: the names that need torch
are imported on first use.
"""

from typing import TYPE_CHECKING, Any

from bootstrap.adapter.resolvers import register as _register_resolvers
from bootstrap.core.schema import EnvConfig
from bootstrap.core.config_store import register as _register_schema
from bootstrap.doors.errors import (
    BadNodeError,
    BootstrapError,
    ConfigError,
    DisagreementError,
    LintError,
    MismatchError,
    PreflightError,
    RequeuedError,
    WatchError,
)
from bootstrap.doors.statuses import JobStatus

if TYPE_CHECKING:  # what __getattr__ gives, for a type checker (it imports them on first use)
    from bootstrap.adapter.callback import BootstrapCallback
    from bootstrap.core.session import Session, current, initialize

    __version__: str

_register_schema()
_register_resolvers()

__all__ = [
    # the session: in a task, bootstrap.current(); in plain Python, bootstrap.initialize(cfg.env)
    "current", "initialize", "Session", "BootstrapCallback", "JobStatus",
    # the record: bootstrap.json, read strictly
    "Report", "read_report",
    # the env group's schema (a hydra-zen app builds on it)
    "EnvConfig",
    # what a job stops with
    "BootstrapError", "ConfigError", "MismatchError", "LintError", "DisagreementError", "PreflightError",
    "BadNodeError", "RequeuedError", "WatchError",
]


def __getattr__(name: str) -> Any:
    # Import torch-touching parts on first use, so ``import bootstrap`` (done by the
    # config schema's registration) stays cheap for tools that never apply a preset.
    if name in ("Session", "current", "initialize"):
        from bootstrap.core import session

        return getattr(session, name)
    if name == "__version__":
        from bootstrap.core.versions import PACKAGE_VERSION

        return PACKAGE_VERSION
    if name in ("Report", "read_report"):  # the typed report: its sections are made at import (a few ms)
        from bootstrap.doors import records

        return getattr(records, name)
    if name == "BootstrapCallback":
        from bootstrap.adapter.callback import BootstrapCallback

        return BootstrapCallback
    raise AttributeError(f"module 'bootstrap' has no attribute {name!r}")
