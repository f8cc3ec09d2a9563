"""Distributed: launchers (one row each), the process group, flight recorder and dumps, run directories, mesh, seeds."""
