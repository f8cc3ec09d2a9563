"""The one exception type users see from the bootstrap."""


class BootstrapError(Exception):
    """A problem with the environment preset or the machine, worded for the user.

    The message always names the offending key (``env.threads.intra_op``) and the
    fix. The Hydra callback turns it into a clean exit with no traceback.
    """


class ConfigError(BootstrapError):
    """A preset value that cannot be applied (bad name, bad type, out of range)."""


class MismatchError(BootstrapError):
    """The machine does not meet the preset's ``requires`` and ``on_mismatch`` is ``error``."""


class LintError(BootstrapError):
    """With ``lint: error``, the preset sets a variable that is read by nothing, or renamed."""
