"""``bootstrap lint [CONF_DIR]``: the variable lint over every preset of a config directory.

No task runs and nothing is applied. The shipped presets by default; an app's with
``CONF_DIR`` or ``--config-path``. Each ``<dir>/env/<name>.yaml`` is composed the way an app
composes ``env=<name>`` (so a preset that extends one of ours resolves), validated, and its
variables are linted (:mod:`bootstrap.variables.lint`); each fabric preset (``<dir>/env/fabric/<name>.yaml``) the
same inside ``env=h100`` (``env=h100 env/fabric=<name>``). A preset is judged by the hardware it declares
(``device`` and ``requires.compute_capability``), not by this machine's, so CI on a CPU machine
lints GPU presets as they will run.

Exit status: 0 when every preset is clean, 1 when one has findings or does not load, 2 on bad
usage. ``--json`` prints ``{"presets": {name: {"lint": [...], "error": ...}}}``, with the
findings as a job's report holds them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List, Optional

from bootstrap.core import compose, presets
from bootstrap.cli.commands import purpose
from bootstrap.doors import inbound, outbound
from bootstrap.doors.masking import masked_text


FABRIC_BASE = "h100"  # a fabric preset is linted inside this GPU preset (the app's, if it has one of that name)


def preset_names(conf_dir: Path) -> List[str]:
    env_dir = conf_dir / presets.GROUP
    return sorted(p.stem for p in env_dir.glob("*.yaml") if p.is_file()) if env_dir.is_dir() else []


def fabric_names(conf_dir: Path) -> List[str]:
    """The fabric presets (``env/fabric/*.yaml``), each linted as ``env=h100 env/fabric=NAME``; none without h100."""
    fabric_dir = conf_dir / presets.GROUP / presets.FABRIC_GROUP
    if FABRIC_BASE not in preset_names(conf_dir) or not fabric_dir.is_dir():
        return []
    return sorted(f"{FABRIC_BASE} {presets.GROUP}/{presets.FABRIC_GROUP}={p.stem}" for p in fabric_dir.glob("*.yaml")
                  if p.is_file())


def lint_preset(name: str) -> dict:
    """``{"lint": [...], "error": None}`` for one preset (or ``h100 env/fabric=NAME``); inside a Hydra context for
    the directory."""
    from bootstrap.core import schema
    from bootstrap.variables import environ, lint

    base, _, fabric = name.partition(" ")
    try:
        preset = schema.load(compose.preset(base, presets.GROUP, [fabric] if fabric else []))
        values = {n: environ.normalize(n, v) for n, v in preset.vars.items() if v is not None}
    except Exception as error:  # noqa: BLE001 - a hostile preset gets its error as a line, never a traceback
        lines = [line.strip() for line in inbound.lines(str(error)) if line.strip()] or [type(error).__name__]
        return {"lint": [], "error": masked_text(" ".join(lines[:2]))[:400]}
    machine = lint.machine_of_preset(preset.device.value, preset.requires.compute_capability)
    return {"lint": [_bounded(f.as_dict()) for f in lint.check(values, machine)], "error": None}


MAX_NAME, MAX_MESSAGE = 160, 2000  # characters of a finding's variable name and message, in every output form


def _bounded(found: dict) -> dict:
    """A finding as every form shows it (text and ``--json`` alike): each field one bounded line, whatever a
    preset names (a variable's name may be 60,000 characters)."""
    limits = {"name": MAX_NAME, "message": MAX_MESSAGE}
    return {key: outbound.finding(value, limits.get(key, MAX_NAME)) if isinstance(value, str) else value
            for key, value in found.items()}


def lint_dir(conf_dir: Path) -> Dict[str, dict]:
    with compose.context(conf_dir, job_name="bootstrap_lint"):
        return {name: lint_preset(name) for name in [*preset_names(conf_dir), *fabric_names(conf_dir)]}


def format_text(conf_dir: Path, results: Dict[str, dict]) -> str:
    """One line per preset and per finding: a file name or a message holding a newline stays on its line."""
    def line(text: str) -> str:
        return outbound.clean(text, one_line=True)

    lines = [line(f"bootstrap lint: {conf_dir} ({len(results)} preset{'s' if len(results) != 1 else ''})")]
    for name, result in results.items():
        if result["error"]:
            lines.append(line(f"env={name}: does not load: {result['error']}"))
        elif not result["lint"]:
            lines.append(line(f"env={name}: clean"))
        else:
            lines.append(line(f"env={name}: {len(result['lint'])} finding{'s' if len(result['lint']) != 1 else ''}"))
            lines += [line(f"  {f['name']}  {f['kind']}  {f['message']}") for f in result["lint"]]
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = outbound.ArgumentParser(prog="bootstrap lint", description=purpose("lint"))
    parser.add_argument("conf_dir", nargs="?", type=Path, help="a config directory holding env/*.yaml")
    parser.add_argument("--config-path", type=Path, help="the same, as the doctor takes it (default: the shipped "
                                                         "presets)")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse has printed its usage and message
        return stop.code if isinstance(stop.code, int) else 2
    if args.conf_dir and args.config_path and args.conf_dir != args.config_path:
        outbound.say("bootstrap lint: give the config directory once, as CONF_DIR or --config-path.", err=True)
        return 2
    conf_dir = args.conf_dir or args.config_path or presets.CONF_DIR
    if not conf_dir.is_dir():
        outbound.say(f"bootstrap lint: {masked_text(str(conf_dir))}: no such directory.", err=True, one_line=True)
        return 2
    if not preset_names(conf_dir):
        outbound.say(f"bootstrap lint: {masked_text(str(conf_dir))} holds no presets (no {presets.GROUP}/*.yaml).",
                     err=True, one_line=True)
        return 2
    try:
        results = lint_dir(conf_dir)
    except Exception as error:  # noqa: BLE001 - the directory itself could not be read as Hydra config
        first = inbound.first_line(error) if str(error) else type(error).__name__
        outbound.say(f"bootstrap lint: {masked_text(first)}", err=True, one_line=True)
        return 2
    if args.json:
        outbound.say_json({"presets": results})
    else:
        outbound.say(format_text(conf_dir, results))
    return 0 if all(not r["lint"] and not r["error"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
