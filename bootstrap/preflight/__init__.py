"""Preflight: before training, every rank proves it computes right and fast, and that the network is as fast
as the preset expects; a slow or faulty rank is named (docs/preflight.md)."""
