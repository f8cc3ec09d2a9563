"""app.py with rank 1 sending a crafted preflight record (tests/e2e/test_preflight_trust.py, issue 37).

The test seam: ``CRAFTED_RECORD`` in rank 1's environment, honoured by this test app alone (the package reads no
such variable). Before Hydra starts the job, this app wraps rank 1's ``bootstrap.preflight.figures.pack`` (the
record it sends) or ``header`` (what it announces first), so that rank 1 sends, through the package's own
collectives, bytes another build or a broken rank would send:

- ``nan``, ``inf``, ``zero``: its matmul's TFLOP/s as that figure;
- ``wrong``: its matmul's result as wrong (``Compute.WRONG``), as a faulty GPU's check reports it;
- ``long``: its record 8 bytes longer (as a build with one more figure would send); ``version``: version 3;
- ``v1``: version 1's 98-byte record where the header goes, as a build before issue 37 sends it.
"""

import os
import struct

import hydra

import app
from bootstrap.preflight import figures

CRAFT = os.environ.get("CRAFTED_RECORD", "")
V1_LAYOUT = struct.Struct("<qBBddd64s")


def _crafted(own: figures.RankFigures) -> bytes:
    fields = list(figures.LAYOUT.unpack(honest_pack(own)))
    if CRAFT in ("nan", "inf", "zero"):
        fields[4] = {"nan": float("nan"), "inf": float("inf"), "zero": 0.0}[CRAFT]
    if CRAFT == "version":
        fields[0] = 3
    if CRAFT == "wrong":
        fields[2] = int(figures.Compute.WRONG)
    return figures.LAYOUT.pack(*fields) + (b"\0" * 8 if CRAFT == "long" else b"")


def _v1_header(record: bytes, affordable_mb: float, host: str, node_rank: int) -> bytes:
    return V1_LAYOUT.pack(node_rank, 0, 3, 0.07, 0.4, -1.0, host.encode())


honest_pack = figures.pack
if os.environ.get("RANK") == "1" and CRAFT:
    if CRAFT == "v1":
        figures.header = _v1_header
    else:
        figures.pack = _crafted



@hydra.main(config_path="conf", config_name="app", version_base="1.3")
def main(cfg) -> float:
    return app.main.__wrapped__(cfg)  # app.py's task, under this file's own Hydra entry


if __name__ == "__main__":
    main()
