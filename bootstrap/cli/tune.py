"""``bootstrap tune SWEEP_DIR --name my_node``: keep a sweep's winner as a preset.

What it keeps and what it refuses: :mod:`bootstrap.sweep.tune`. Exit status: 0 when the preset
was written, 1 when tune refused (one ``bootstrap tune: ...`` line, nothing written), 2 on bad usage.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from bootstrap.cli.commands import purpose
from bootstrap.doors import outbound
from bootstrap.sweep import rank, tune
from bootstrap.sweep.render import one_line


def main(argv: Optional[List[str]] = None) -> int:
    # argparse prints its usage and errors itself, quoting what was typed: outbound's parser cleans them.
    parser = outbound.ArgumentParser(prog="bootstrap tune", description=purpose("tune"))
    parser.add_argument("sweep_dir", type=Path, help="the multirun directory (hydra.sweep.dir)")
    parser.add_argument("--name", required=True, help="the new preset's name: env=<name>")
    parser.add_argument("--out", type=Path, default=Path("conf"),
                        help="the config directory to write into (default: ./conf, giving conf/env/<name>.yaml)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing preset file")
    parser.add_argument("--objective", default=None,
                        help="the metric to pick the winner by (default: samples_per_s if reported, else return)")
    parser.add_argument("--mode", choices=rank.MODES, default=None,
                        help="max or min (default: the sweeper's own for return, max for samples_per_s, else min)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # the parser has printed its usage and message
        return stop.code if isinstance(stop.code, int) else 2
    if not tune.NAME.fullmatch(args.name):
        outbound.say(f"bootstrap tune: --name {one_line(args.name)!r}: use letters, digits, '_', '-' and '.' only.",
                     err=True, one_line=True)
        return 2
    try:
        target, text = tune.write(args.sweep_dir, args.name, args.out, args.force, args.objective, args.mode)
    except tune.TuneError as error:
        outbound.say(f"bootstrap tune: {one_line(error)}", err=True, one_line=True)
        return 1
    outbound.say(f"wrote {target}\n\n{text}\nuse it with: env={args.name}")
    return 0
