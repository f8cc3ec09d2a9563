"""What a difference between two ranks in an environment variable changes, name by name. Pure.

The rank agreement (``env.distributed.agree``) compares the known variables each rank has set. Each
name's kind is one of :data:`bootstrap.variables.table.AGREE_KINDS`:

- the detailed table's rows say their own (``KnownVariable.agree``);
- torch's other names (:mod:`bootstrap.variables.torch_names`: build, test and internal switches that
  the table does not describe one by one) are :data:`TORCH_OTHER_KIND`, except
  :data:`TORCH_OTHER_COLLECTIVE`;
- any other name has none: no known release reads it, so it is not compared.

Under ``agree=error`` a ``collective`` difference stops the job (:data:`STOPPING`); ``per_rank`` is
never compared; the rest warn. The kinds are worked out once per process, on the first call, so a
job that never compares never imports the table.
"""

from __future__ import annotations

import functools
from typing import Dict, FrozenSet, Mapping, Optional

# What env.distributed.agree=error does with a difference of each kind (warn: what agree=warn does with all).
ON_ERROR = {"collective": "stops the job", "numerics": "warns", "speed": "warns", "logging": "warns",
            "per_rank": "not compared"}
STOPPING = frozenset(kind for kind, action in ON_ERROR.items() if action == "stops the job")

# torch's other names mostly choose a code path (a kernel, a compiler pass, a library, a test switch): another
# path gives other numbers, so a difference warns as numerics. None is worth stopping a job for unless it
# decides which collectives a rank issues, or in which order:
TORCH_OTHER_KIND = "numerics"
TORCH_OTHER_COLLECTIVE = frozenset((
    "TORCH_COMPILER_COLLECTIVES",  # ranks agree on compile decisions through collectives, or do not
    "PYTORCH_REORDER_COLLECTIVES_LIMIT",  # how far inductor moves collectives in compiled code
    "PYTORCH_SINK_WAITS_LIMIT",  # how far inductor moves their waits
    "TORCHDYNAMO_ENABLE_P2P_COMPILATION",  # send/recv traced into the graph, or run eagerly
    "TORCHINDUCTOR_DISTRIBUTED_MAX_AUTOTUNE_GEMM",  # autotuning shared across ranks through collectives
    "TORCHINDUCTOR_COLLECTIVE_BENCHMARK_NRUNS",  # benchmarks that run collectives: each rank must run as many
    "TORCHINDUCTOR_COLLECTIVE_BENCHMARK_TIMEOUT",
))


@functools.lru_cache(maxsize=1)
def _kinds() -> Dict[str, str]:
    """name -> kind for every name a known release reads."""
    from bootstrap.variables import table, torch_names

    kinds = dict.fromkeys(torch_names.TORCH_MENTIONED | torch_names.TORCH_COMPILE, TORCH_OTHER_KIND)
    kinds.update(dict.fromkeys(TORCH_OTHER_COLLECTIVE, "collective"))
    kinds.update((var.name, var.agree) for group in table.GROUPS for var in group)
    return kinds


@functools.lru_cache(maxsize=1)
def _compared() -> FrozenSet[str]:
    return frozenset(name for name, kind in _kinds().items() if kind != "per_rank")


def kind_of(name: str) -> Optional[str]:
    """What a difference between ranks in ``name`` changes (one of AGREE_KINDS); None for a name no known
    release reads."""
    return _kinds().get(name)


def known_set(environ: Mapping[str, str]) -> Dict[str, str]:
    """The variables of ``environ`` that ranks are compared on: the known names, ``per_rank`` ones left out,
    sorted by name."""
    return {name: environ[name] for name in sorted(_compared().intersection(environ))}
