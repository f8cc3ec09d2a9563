"""The Hydra adapter: the callback, a thin layer over the core's plain Python API."""
