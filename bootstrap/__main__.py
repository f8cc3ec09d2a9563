"""``python -m bootstrap doctor ...``"""

import sys

COMMANDS = ("doctor",)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m bootstrap {{{','.join(COMMANDS)}}} [options] [hydra overrides]", file=sys.stderr)
        return 2
    from bootstrap import doctor

    return doctor.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
