"""``python -m bootstrap {doctor,tune,lint,hang} ...``"""

import sys

COMMANDS = ("doctor", "tune", "lint", "hang")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        from bootstrap import outbound

        outbound.say(f"usage: python -m bootstrap {{{','.join(COMMANDS)}}} [options] [hydra overrides]", err=True)
        return 2
    if argv[0] == "doctor":
        from bootstrap import doctor

        return doctor.main(argv[1:])
    if argv[0] == "lint":
        from bootstrap import lint_presets

        return lint_presets.main(argv[1:])
    if argv[0] == "hang":
        from bootstrap import hang

        return hang.main(argv[1:])
    from bootstrap import tune

    return tune.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
