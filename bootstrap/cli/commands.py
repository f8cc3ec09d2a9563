"""``bootstrap {doctor,dryrun,diff,hang,lint,tune,summary,schema,nodes} ...``: which module runs each command.

Each command is a module of this package with ``main(argv) -> int``; adding one is a line in
:data:`COMMANDS` (CONTRIBUTING.md: adding a CLI command), with its purpose in one line: ``bootstrap --help``
lists them, and the command's own ``--help`` starts with it."""

import difflib
import importlib
import os
import sys
from typing import List, Optional

# command -> (bootstrap.cli.<module>, its purpose in one line)
COMMANDS = {
    "doctor": ("doctor", "what the bootstrap would do on this machine, and whether the job would start"),
    "dryrun": ("dryrun", "plan and check every rank's start-up at the size the job will run, before it queues"),
    "diff": ("diff", "what differs between two runs, or between a run and this machine (--here)"),
    "hang": ("hang", "what the ranks' flight-recorder dumps say about a hang"),
    "lint": ("lint_presets", "the variable lint over every preset of a config directory"),
    "tune": ("tune", "keep a sweep's winner as a preset of your own"),
    "summary": ("summary", "write a sweep's summary (and its picture) again, from the jobs on disk"),
    "schema": ("schema", "print the JSON Schema of bootstrap.json"),
    "nodes": ("nodes", "the bad-node ledger: why each node is out, clear or exclude one, sbatch's --exclude list"),
}


def purpose(command: str) -> str:
    """A command's purpose, as its own ``--help`` starts (``bootstrap doctor``: ...)."""
    return f"bootstrap {command}: {COMMANDS[command][1]}."


def _usage() -> str:
    width = max(map(len, COMMANDS))
    return "\n".join(["usage: bootstrap COMMAND [options] [hydra overrides]", "", "commands:",
                      *(f"  {name.ljust(width)}  {what}" for name, (_, what) in COMMANDS.items()), "",
                      "bootstrap COMMAND --help says more about each (docs: README.md, docs/)"])


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        from bootstrap.doors import outbound

        asked = bool(argv) and argv[0] in ("-h", "--help")  # asked for help: stdout and exit 0, as argparse does
        if argv and not asked:  # a command misspelt: one line, and the nearest command
            near = difflib.get_close_matches(argv[0], COMMANDS, n=1)
            hint = f"; did you mean bootstrap {near[0]}?" if near else f"; the commands: {', '.join(COMMANDS)}"
            outbound.say(f"bootstrap: unknown command {outbound.shown(argv[0], limit=60)}{hint} "
                         "(bootstrap --help lists them)", err=True, one_line=True)
            return 2
        outbound.say(_usage(), err=not asked)
        return 0 if asked else 2
    try:
        return int(importlib.import_module(f"bootstrap.cli.{COMMANDS[argv[0]][0]}").main(argv[1:]))
    except BrokenPipeError:  # `bootstrap schema | head`: the reader has gone, which is no error of the command's
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stdout's descriptor: no second error when Python flushes
        return 0
