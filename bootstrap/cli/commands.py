"""``bootstrap {doctor,dryrun,diff,hang,lint,tune,summary,schema,nodes} ...``: which module runs each command.

Each command is a module of this package with ``main(argv) -> int``; adding one is a line in
:data:`COMMANDS` (CONTRIBUTING.md: adding a CLI command)."""

import importlib
import sys
from typing import List, Optional

# command -> bootstrap.cli.<module>
COMMANDS = {"doctor": "doctor", "dryrun": "dryrun", "diff": "diff", "hang": "hang", "lint": "lint_presets", "tune": "tune",
            "summary": "summary", "schema": "schema", "nodes": "nodes"}


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        from bootstrap.doors import outbound

        asked = bool(argv) and argv[0] in ("-h", "--help")  # asked for help: stdout and exit 0, as argparse does
        outbound.say(f"usage: bootstrap {{{','.join(COMMANDS)}}} [options] [hydra overrides]\n"
                     "  bootstrap COMMAND --help says what a command does", err=not asked)
        return 0 if asked else 2
    return int(importlib.import_module(f"bootstrap.cli.{COMMANDS[argv[0]]}").main(argv[1:]))
