"""The watch: while the job trains, each rank's own work (a step less its waits in collectives) is compared with
the fastest rank's and with its own best, once a window, and a slow rank, node or link is named (docs/watch.md)."""
