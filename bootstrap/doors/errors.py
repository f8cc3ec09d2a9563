"""The one exception type users see from the bootstrap."""

from dataclasses import dataclass
from functools import wraps
from typing import Any, Callable, Tuple, Type, TypeVar

_Method = TypeVar("_Method", bound=Callable[..., Any])

# Stands for the preset's key in a message (``env``, or wherever the app put its preset): a message is written
# before the job's key is known, and BootstrapError.under / Session.named put the job's own key in its place.
PRESET_KEY = "\0preset key\0"


class BootstrapError(Exception):
    """A problem with the environment preset or the machine, worded for the user.

    The message always names the offending key (``env.threads.intra_op``) and the
    fix. The Hydra callback turns it into a clean exit with no traceback.
    """

    def __str__(self) -> str:
        return super().__str__().replace(PRESET_KEY, "env")  # never named (raised outside a Session): the usual key

    def under(self, key: str) -> "BootstrapError":
        """This error, its message naming the preset as ``key``."""
        self.args = tuple(arg.replace(PRESET_KEY, key) if isinstance(arg, str) else arg for arg in self.args)
        return self


def naming_preset(method: _Method) -> _Method:
    """A method of an object with a ``key`` (a Session): the boundary where an error's message names the
    preset as that object does (``under``), once."""
    @wraps(method)
    def named(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except BootstrapError as error:
            error.under(self.key)
            raise

    return named  # type: ignore[return-value]  # with method's signature (functools.wraps)


class ConfigError(BootstrapError):
    """A preset value that cannot be applied (bad name, bad type, out of range)."""


class MismatchError(BootstrapError):
    """The machine does not meet the preset's ``requires`` and ``on_mismatch`` is ``error``."""


class LintError(BootstrapError):
    """With ``lint: error``, the preset sets a variable that is read by nothing, or renamed."""


class DisagreementError(BootstrapError):
    """With ``distributed.agree: error``, the ranks differ in what collectives depend on (the message names them)."""


class PreflightError(BootstrapError):
    """With ``preflight.mode: error``, a rank computed wrong or slow, or the network was slower than its floor
    (the message names the ranks, their hosts, the figure and what it was measured against)."""


class WatchError(BootstrapError):
    """With ``watch.mode: error``, a rank, node or link stayed slow while the job trained, or a rank left (the message
    names the ranks, their nodes, both scores and since when)."""


class BadNodeError(BootstrapError):
    """The evidence in ``nodes.exclude_file`` excludes this rank's node (not ignored): it stops before the process
    group (the message names the evidence and, under SLURM, the ``--exclude`` to use)."""


class RequeuedError(BootstrapError):
    """With ``nodes.on_bad: requeue`` under sbatch, the job requeued itself, excluding the nodes the evidence
    excludes (or none yet): it ends with ``exit_code`` (75, sysexits' EX_TEMPFAIL), and SLURM starts it again."""

    exit_code = 75


class JobRefused(BaseException):
    """Stops a job inside a Ray worker, where ``SystemExit`` would not do.

    Hydra turns an ``Exception`` raised in a callback into a warning and runs the task, so the
    stop must not be one. Ray counts a worker that exits (``SystemExit``) as crashed and retries
    the job (three times by default): every retry another allocation. Any other exception the task
    raises, this one included, is the application's error to Ray: reported once, never retried.

    Ray re-raises it in the launching process, where it arrives (through :meth:`__reduce__`) as a
    Hydra ``CompactHydraException``: Hydra then prints its message, not its own traceback.
    """

    def __reduce__(self):
        return (_refused_in_launcher, (str(self),))


def _refused_in_launcher(message: str) -> Exception:
    from hydra.errors import CompactHydraException

    class JobRefusedInWorker(CompactHydraException):
        """A job that a launcher's worker refused (see :class:`JobRefused`)."""

    return JobRefusedInWorker(message)


@dataclass(frozen=True)
class Refusal:
    """One reason the job stops, as the job says it (:mod:`bootstrap.core.verdict` decides them)."""

    message: str  # values masked; names the key and the fix
    error: Type[BootstrapError]  # what the job raises
    lint: Tuple[Any, ...] = ()  # the lint findings it stops for, for the report

    def exception(self) -> BootstrapError:
        return self.error(self.message)
