"""Variable lint: is each variable a preset sets read by anything, in this torch and on this hardware? Pure.

:func:`check` turns a preset's variables (and, where known, the machine) into
:class:`Finding` values, one line each:

- ``unknown``: a name in a known namespace (``NCCL_``, ``TORCH_NCCL_``, ``CUDA_``, ...) that no
  known release reads, with the nearest known name; or a name that circulates in copied
  start-up code and that nothing in a torch job reads (:data:`bootstrap.variables.table.NOT_READ`);
- ``renamed``: an old name, with the new one to use;
- ``obsolete``: read but without effect, or no longer read at all, with what replaced it;
- ``invalid_value``: a value outside the small set the reader accepts, or not an integer where
  one is needed;
- ``hardware``: a variable for hardware this machine does not have, where that can be known.

The table (:mod:`bootstrap.variables.table`) is imported on the first call, so a job whose preset
sets no variables never loads it.
"""

from __future__ import annotations

import enum
import functools
import re
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Protocol,
    Tuple,
    Union,
)

from bootstrap.doors import outbound
from bootstrap.doors.errors import PRESET_KEY
from bootstrap.doors.textenum import TextEnum

if TYPE_CHECKING:  # the types of what the caller passes in; variables/ imports nothing of core/
    from bootstrap.variables.table import KnownVariable  # imported on the first call (see above)


class LintPolicy(str, enum.Enum):
    """A preset's ``lint``: what a finding does at job start (the schema's field; the enum sits with the lint)."""

    warn = "warn"  # report and log each finding of the variable lint; the job runs
    error = "error"  # a variable read by nothing, or renamed, stops the job before anything is applied
    off = "off"  # no lint


class Kind(TextEnum):
    unknown = "unknown"
    renamed = "renamed"
    obsolete = "obsolete"
    invalid_value = "invalid_value"
    hardware = "hardware"


# What env.lint=error stops a job for: a name that is read by nothing, or not under that name.
STOPPING = (Kind.unknown, Kind.renamed)


class Finding(NamedTuple):
    name: str
    kind: Kind
    message: str  # one line, values masked

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind.value, "message": self.message}

    def __str__(self) -> str:
        return f"{self.name} ({self.kind.value}): {self.message}"


class Machine(NamedTuple):
    """What the lint may know of the hardware; ``None`` where it cannot tell."""

    nvidia_gpu: Optional[bool] = None  # a visible NVIDIA GPU and a CUDA build of torch
    compute_capability: Optional[float] = None  # the lowest among the visible GPUs
    rocm: Optional[bool] = None
    x86_64: Optional[bool] = None
    # libiomp5 or libomp loaded in this process; a callable is asked only when a variable needs the answer
    intel_openmp: Union[None, bool, Callable[[], Optional[bool]]] = None
    mps: Optional[bool] = None
    description: str = "this machine"  # how messages name it

    def lacks(self, tag: str) -> Optional[str]:
        """Why hardware ``tag`` (bootstrap.variables.table.HARDWARE) does not hold here; None when it holds or is
        unknown."""
        cap, gpu, here = self.compute_capability, self.nvidia_gpu, self.description
        if tag == "nvidia_gpu":
            return f"{here} has no NVIDIA GPU" if gpu is False else None
        if tag in MIN_CAPABILITY:
            need = MIN_CAPABILITY[tag]
            if gpu is False:
                return f"it needs compute capability {need} or newer, and {here} has no NVIDIA GPU"
            return f"it needs compute capability {need} or newer, and {here}'s GPUs have {cap}" \
                if cap is not None and cap < need else None
        if tag == "pre_blackwell":
            return f"it matters only below compute capability 10.0 (before Blackwell), and {here}'s GPUs have " \
                   f"{cap}" if cap is not None and cap >= 10.0 else None
        held = {"rocm": self.rocm, "x86_64": self.x86_64, "intel_openmp": self.intel_openmp, "mps": self.mps}.get(tag)
        if callable(held):
            held = held()
        return f"it needs {NEEDS[tag]}, which {here} lacks" if held is False else None


MIN_CAPABILITY = {"sm80_plus": 8.0, "sm90_plus": 9.0, "sm100_plus": 10.0}
NEEDS = {"rocm": "a ROCm build of torch", "x86_64": "an x86_64 torch wheel (the only ones with oneMKL linked in)",
         "intel_openmp": "the Intel or LLVM OpenMP runtime (torch wheels load GNU libgomp)",
         "mps": "Apple silicon (the MPS backend)"}


@functools.lru_cache(maxsize=1)
def _table():
    """name -> KnownVariable for the detailed table, the names nothing reads, the namespaces."""
    from bootstrap.variables import table

    # each name once
    known: Dict[str, "table.KnownVariable"] = {var.name: var for group in table.GROUPS for var in group}
    return known, table.NOT_READ, table.NAMESPACES


@functools.lru_cache(maxsize=1)
def known_names() -> frozenset:
    """Every name a known release reads: the detailed table's and torch's others (bootstrap.variables.torch_names)."""
    from bootstrap.variables import torch_names

    return frozenset(_table()[0]) | torch_names.TORCH_MENTIONED | torch_names.TORCH_COMPILE


def check(values: Mapping[str, Optional[str]], machine: Optional[Machine] = None) -> List[Finding]:
    """Findings for ``values`` ({name: value as it would be exported}), in name order."""
    findings: List[Finding] = []
    for name in sorted(values):
        findings.extend(_check_one(name, values[name], machine))
    return findings


def _check_one(name: str, value: Optional[str], machine: Optional[Machine]) -> Iterable[Finding]:
    known, not_read, namespaces = _table()
    if name in not_read:
        yield Finding(name, Kind.unknown, f"{not_read[name]}.")
        return
    var = known.get(name)
    if var is None:
        if name.startswith(namespaces) and name not in known_names():
            yield Finding(name, Kind.unknown, _unknown_message(name, known_names(), namespaces))
        return
    if var.renamed_to and not var.removed_in:
        release = f"torch {var.renamed_in} renamed it" if var.renamed_in else "torch renamed it"
        yield Finding(name, Kind.renamed, f"{release} {var.renamed_to}; the old name is still read, with a "
                                          f"deprecation warning on every rank. Use {var.renamed_to}.")
    if var.removed_in:
        instead = f" ({var.replaced_by})" if var.replaced_by else ""
        yield Finding(name, Kind.obsolete, f"no longer read since {_release(var)} {var.removed_in}{instead}: "
                                           "setting it does nothing. Remove it.")
    elif var.obsolete_since:
        instead = f": {var.replaced_by}" if var.replaced_by else ""
        yield Finding(name, Kind.obsolete, f"obsolete since {_release(var)} {var.obsolete_since}{instead}; it is "
                                           "still read, only to warn. Remove it.")
    if value is not None:
        problem = _value_problem(var, value)
        if problem:
            yield Finding(name, Kind.invalid_value, f"{name}={outbound.shown(value, name=name)} {problem}")
    gap = hardware_gap(name, machine)
    if gap is not None:
        effect = "it does nothing here" if gap.does_nothing else "it is not needed here"
        yield Finding(name, Kind.hardware, f"read by {var.library or 'its library'}, but {gap.why}: {effect}.")


class HardwareGap(NamedTuple):
    why: str  # what the machine lacks, as a clause: "this machine has no NVIDIA GPU"
    does_nothing: bool  # False: it still acts, but is not needed here (``pre_blackwell``)


def hardware_gap(name: str, machine: Optional[Machine]) -> Optional[HardwareGap]:
    """What ``machine`` lacks for the variable ``name`` to matter; None where nothing is lacking, or nothing can be
    known (an unknown name, no machine). The one verdict behind both the lint's ``hardware`` finding and the
    report's ``effective`` (``bootstrap.core.report``), so the two never disagree."""
    var = _table()[0].get(name)
    if machine is None or var is None:
        return None
    for tag in var.hardware:
        why = machine.lacks(tag)
        if why:
            return HardwareGap(why, does_nothing=tag != "pre_blackwell")
    return None


def _release(var: KnownVariable) -> str:
    return "NCCL" if var.library == "NCCL" else "torch"


def _value_problem(var: KnownVariable, value: str) -> Optional[str]:
    text = value.strip()
    if var.values and text.lower() not in {v.lower() for v in var.values}:
        return f"is not a value {var.library or 'its reader'} accepts; use one of {', '.join(var.values)}."
    if var.kind == "int" and not re.fullmatch(r"-?\d+", text):
        return "is not an integer, which is all its reader accepts."
    if var.kind == "count" and not text.isdigit():  # the plan refuses these too (plan._check_buffer_sizes)
        return "is not a count (a whole number, 0 or more), which is all its reader accepts."
    return None


def _unknown_message(name: str, everything: frozenset, namespaces: Tuple[str, ...]) -> str:
    import difflib  # only for a name that is read by nothing

    space = next(p for p in namespaces if name.startswith(p))
    nearest = difflib.get_close_matches(name, [n for n in everything if n.startswith(space)], n=1, cutoff=0.8)
    hint = f" Did you mean {nearest[0]}?" if nearest else ""
    return f"no known release reads this name, although it is in the {space} namespace.{hint}"


def stopping(findings: Iterable[Finding]) -> List[Finding]:
    """The findings env.lint=error stops a job for."""
    return [f for f in findings if f.kind in STOPPING]


class FoundHardware(Protocol):
    """What :func:`machine_from` reads of what was found (``bootstrap.core.versions.Found`` is one)."""

    @property
    def gpus(self) -> int: ...

    @property
    def cuda(self) -> Optional[str]: ...

    @property
    def hip(self) -> Optional[str]: ...

    @property
    def compute_capability(self) -> Optional[str]: ...


def machine_from(found: FoundHardware, arch: str, openmp_runtimes: Callable[[], Iterable[str]] = tuple,
                 description: str = "this machine") -> Machine:
    """A :class:`Machine` from ``versions.Found``, ``platform.machine()`` and a reader of the OpenMP
    runtimes loaded (called only if a variable depends on it)."""
    def intel_openmp() -> Optional[bool]:
        runtimes = set(openmp_runtimes())
        return bool(runtimes & {"libiomp5", "libomp"}) if runtimes else None

    capability = float(found.compute_capability) if found.compute_capability else None
    return Machine(nvidia_gpu=found.gpus > 0 and found.cuda is not None, compute_capability=capability,
                   rocm=found.hip is not None, x86_64=arch in ("x86_64", "AMD64"), intel_openmp=intel_openmp,
                   mps=False if arch != "arm64" else None, description=description)


def machine_of_preset(device: str, compute_capability: Optional[str]) -> Machine:
    """What a preset says it runs on (``bootstrap lint`` judges a preset by its own ``device`` and ``requires``)."""
    on_gpu = device == "cuda"
    return Machine(nvidia_gpu=on_gpu, compute_capability=float(compute_capability) if on_gpu and compute_capability
                   else None, description=f"a {'cuda' if on_gpu else 'cpu'} preset")


class LintedPreset(Protocol):
    """What the lint reads of a preset (``bootstrap.core.schema.EnvConfig`` is one)."""

    @property
    def lint(self) -> LintPolicy: ...

    @property
    def vars(self) -> Dict[str, Any]: ...


def for_preset(preset: LintedPreset, machine: Optional[Machine] = None) -> List[Finding]:
    """The findings for a preset's own variables (``vars``, as they would be exported), unless its
    ``lint`` is ``off``; with the ``machine`` (:func:`machine_from`), its hardware findings too."""
    from bootstrap.variables.environ import normalize

    if preset.lint is LintPolicy.off or not preset.vars:
        return []
    values = {name: normalize(name, value) for name, value in preset.vars.items() if value is not None}
    return check(values, machine)


def stop_message(findings: Iterable[Finding]) -> str:
    """Why ``lint: error`` stopped the job: one line per finding, and the way out."""
    return (f"{PRESET_KEY}.lint=error: the preset sets variables that are read by nothing, or renamed:\n"
            + "\n".join(f"  - {finding}" for finding in findings)
            + f"\nFix them, or run with {PRESET_KEY}.lint=warn to continue anyway.")
