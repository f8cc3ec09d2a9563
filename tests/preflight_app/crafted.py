"""app.py with rank 1 sending a crafted preflight record (tests/e2e/test_preflight_trust.py, issue 37).

The test seam: the job's override ``+craft=NAME``, honoured by this test app alone. Before Hydra starts, this app
wraps rank 1's ``bootstrap.preflight.figures.pack`` (the record it sends) and ``header`` (what it announces first);
when the running job's overrides ask for a craft, rank 1 sends, through the package's own collectives, bytes
another build or a broken rank would send (each job of a multirun its own):

- ``nan``, ``inf``, ``zero``: its matmul's TFLOP/s as that figure;
- ``wrong``: its matmul's result as wrong (``Compute.WRONG``), as a faulty GPU's check reports it;
- ``long``: its record 8 bytes longer (as a build with one more figure would send); ``version``: version 3;
- ``v1``: version 1's 98-byte record where the header goes, as a build before issue 37 sends it.
"""

import os
import struct

import hydra
from hydra.core.hydra_config import HydraConfig

import app
from bootstrap.preflight import figures

V1_LAYOUT = struct.Struct("<qBBddd64s")


def _craft() -> str:
    """The running job's ``+craft=`` (the preflight runs in the callback, inside the job's Hydra context)."""
    for override in HydraConfig.get().overrides.task:
        if override.startswith("+craft="):
            return override.partition("=")[2]
    return ""


def _crafted(own: figures.RankFigures) -> bytes:
    craft = _craft()
    fields = list(figures.LAYOUT.unpack(honest_pack(own)))
    if craft in ("nan", "inf", "zero"):
        fields[4] = {"nan": float("nan"), "inf": float("inf"), "zero": 0.0}[craft]
    if craft == "version":
        fields[0] = 3
    if craft == "wrong":
        fields[2] = int(figures.Compute.WRONG)
    return figures.LAYOUT.pack(*fields) + (b"\0" * 8 if craft == "long" else b"")


def _header(record: bytes, affordable_mb: float, host: str, node_rank: int) -> bytes:
    if _craft() == "v1":
        return V1_LAYOUT.pack(node_rank, 0, 3, 0.07, 0.4, -1.0, host.encode())
    return honest_header(record, affordable_mb, host, node_rank)


honest_pack, honest_header = figures.pack, figures.header
if os.environ.get("RANK") == "1":
    figures.pack, figures.header = _crafted, _header


@hydra.main(config_path="conf", config_name="app", version_base="1.3")
def main(cfg) -> float:
    return app.main.__wrapped__(cfg)  # app.py's task, under this file's own Hydra entry


if __name__ == "__main__":
    main()
