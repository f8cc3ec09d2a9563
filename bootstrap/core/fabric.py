"""The fabric preset inside a preset (``env/fabric=NAME``, docs/fabrics.md): merged into what the preset sets, kept
through ``env=auto``, its stale variables warned and its profile's variables. Pure, apart from :func:`prepare`,
which runs the profile.

A fabric's variables sit beneath the preset's own (``env.vars`` wins over ``env.fabric.vars``), and the user's
environment wins over both, as everywhere. Its ``network`` replaces a ``preflight.network`` of ``any`` or null; a
value the preset chose itself is kept.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Mapping

from bootstrap.core.presets import ALIAS_GROUP, CALLBACK_KEY, FABRIC_GROUP, GROUP
from bootstrap.core.schema import EnvConfig, Fabric, FabricName, with_fabric


def carried(chosen: EnvConfig, fabric: Fabric) -> EnvConfig:
    """``env=auto``: the preset it chose, with the fabric the job named (``env=auto env/fabric=ib``)."""
    return with_fabric(dataclasses.replace(chosen, fabric=fabric)) if fabric.name is not FabricName.none else chosen


def override(key: str, name: str) -> str:
    """The override that chooses the fabric ``name`` for the preset in the node ``key``: each form's own spelling."""
    if key == CALLBACK_KEY:
        return f"{GROUP}/{FABRIC_GROUP}@{CALLBACK_KEY}.{FABRIC_GROUP}={name}"
    return f"{ALIAS_GROUP if key == ALIAS_GROUP else GROUP}/{FABRIC_GROUP}={name}"


def prepare(preset: EnvConfig, environ: Mapping[str, str], warnings: List[str]) -> Dict[str, str]:
    """Before the group: each stale variable as a warning (its version rule and source: the plugin's version is
    known only once NCCL loads it), and what the fabric's profile script exports (gcp_tcpxo's nccl-env-profile.sh),
    run once in a subshell; nothing for a fabric without one. Raises ConfigError, with the fix, when the fabric
    needs a profile and it is absent or not safe to run."""
    if preset.fabric.name is FabricName.none:
        return {}
    from bootstrap.core import report
    from bootstrap.fabric import profile as fabric_profile
    from bootstrap.fabric import rules as fabric_rules

    variables = {**{name: _text(value) for name, value in preset.vars.items() if value is not None}, **environ}
    for line, _ in fabric_rules.stale(preset.fabric.name.value, variables):
        report.warn(warnings, line, once=True)
    if not preset.fabric.profile:
        return {}
    return fabric_profile.exports(preset.fabric.profile, environ, timeout_s=min(60, preset.distributed.timeout_s))


def _text(value: object) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)
