"""``bootstrap schema [--version N]``: print the JSON Schema of ``bootstrap.json`` (today's version, or N's).

The schema is made from the typed report (:mod:`bootstrap.doors.json_schema`); the package also ships it as
``bootstrap/bootstrap.schema.json`` for tools that do not run Python. Exit status: 0, or 2 on bad usage."""

from typing import List, Optional

from bootstrap.cli.commands import purpose
from bootstrap.doors import json_schema, outbound, records


def main(argv: Optional[List[str]] = None) -> int:
    parser = outbound.ArgumentParser(prog="bootstrap schema", description=purpose("schema"))
    parser.add_argument("--version", type=int, default=records.SCHEMA_VERSION, metavar="N",
                        help=f"the schema_version to print, 1 to {records.SCHEMA_VERSION} "
                             f"(default {records.SCHEMA_VERSION})")
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse has printed its usage and message
        return int(stop.code or 0)
    try:
        outbound.say(json_schema.text(args.version).rstrip("\n"))
    except ValueError as error:
        outbound.say(f"bootstrap schema: --version {error}", err=True, one_line=True)
        return 2
    return 0
