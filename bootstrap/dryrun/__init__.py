"""The dry run (``bootstrap dryrun``): every rank of a world planned with the job's own start-up, from the
variables its launcher would give it, and checked across ranks in bounded memory (docs/dryrun.md)."""
