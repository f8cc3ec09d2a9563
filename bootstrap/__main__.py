"""``python -m bootstrap ...``: the same as the ``bootstrap`` command."""

import sys

from bootstrap.cli.commands import main

if __name__ == "__main__":
    sys.exit(main())
