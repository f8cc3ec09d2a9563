"""``${bootstrap_exclude:FILE}``: the nodes the bad-node ledger excludes now, for Hydra's submitit launcher.

Its value is SLURM's compressed host list (``node[3,7]``), the form of the launcher's own ``exclude`` option (it
becomes ``sbatch --exclude``), or null where no node is excluded (the launcher then passes no ``--exclude``)::

    hydra.launcher.exclude: ${bootstrap_exclude:/shared/bad_nodes.jsonl}
    hydra.launcher.exclude: ${bootstrap_exclude:/shared/bad_nodes.jsonl,node9}   # and nodes of your own

The evidence rule is the jobs' own: the config's ``env.nodes`` (``exclude_ttl_h``, ``min_observations``) where it has
one, else their defaults. A ledger that cannot be read or believed is one line on stderr, and adds no node. The
launcher resolves its options once, as the sweep starts: its jobs avoid the nodes excluded by then, and each job's
start still reads the ledger (``env.nodes.exclude_file``) and stops on a node excluded since.

Importing :mod:`bootstrap` registers it (:func:`register`), for every Hydra app of an environment that has the
package: Hydra imports the package's search-path plugin before it composes a config.
"""

from __future__ import annotations

from typing import Any, Optional

NAME = "bootstrap_exclude"


def exclude(path: str, extra: Any = None, *, _root_: Any = None) -> Optional[str]:
    """The resolver: ``path``'s excluded nodes, with ``extra`` (a host list of the user's own), compressed; None
    for none."""
    from datetime import datetime, timezone

    from omegaconf import OmegaConf

    from bootstrap.core import nodes
    from bootstrap.core.schema import Nodes
    from bootstrap.distributed import hostlist, ledger
    from bootstrap.doors import inbound, outbound
    from bootstrap.doors.errors import ConfigError

    def setting(name: str, default: Any) -> Any:
        found = OmegaConf.select(_root_, f"env.nodes.{name}", default=None) if _root_ is not None else None
        return found if isinstance(found, (int, float)) and not isinstance(found, bool) and found > 0 else default

    where = f"${{{NAME}:{outbound.shown(path)}}}"
    rule = ledger.Rule(ttl_h=float(setting("exclude_ttl_h", Nodes.exclude_ttl_h)),
                       min_observations=int(setting("min_observations", Nodes.min_observations)))
    now, chosen = datetime.now(timezone.utc), list[str]()
    try:
        chosen += hostlist.expand(str(extra), where) if extra not in (None, "") else []
        read = nodes.load_ledger(str(path), now)
        dropped = read.dropped_line(where)
        if dropped:
            outbound.say(f"bootstrap: {dropped}", err=True, one_line=True)
        chosen += ledger.excluded(read, now, rule)
    except (inbound.Unreadable, ConfigError) as error:
        outbound.say(f"bootstrap: {where}: {error}: no node of the ledger is excluded", err=True, one_line=True)
    return hostlist.compress(chosen) if chosen else None


def register() -> None:
    """Make ``${bootstrap_exclude:...}`` known to OmegaConf (again: replacing an older registration). Cheap: the
    resolver imports what it needs when a config first uses it."""
    from omegaconf import OmegaConf

    OmegaConf.register_new_resolver(NAME, exclude, replace=True)
