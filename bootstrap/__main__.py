"""``python -m bootstrap {doctor,tune,lint,hang,diff} ...``"""

import importlib
import sys
from typing import List, Optional

# command -> bootstrap.cli.<module>
COMMANDS = {"doctor": "doctor", "tune": "tune", "lint": "lint_presets", "hang": "hang", "diff": "diff"}


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        from bootstrap.doors import outbound

        outbound.say(f"usage: python -m bootstrap {{{','.join(COMMANDS)}}} [options] [hydra overrides]", err=True)
        return 2
    return importlib.import_module(f"bootstrap.cli.{COMMANDS[argv[0]]}").main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
