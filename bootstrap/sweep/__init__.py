"""Sweeps: the summary of a multirun, the sweepers' directions, and tune."""
