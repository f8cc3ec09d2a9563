"""The cluster's fabric (``env/fabric=ib|roce|aws_efa|...``): what NCCL's own log says it chose, the rules each
fabric's log and variables must meet (each with its source), a fabric's profile script, and the fabric this
machine looks like (docs/fabrics.md). The preflight judges a job's log with these rules
(:mod:`bootstrap.preflight.fabric_check`); the job's start prepares the fabric's variables with them
(:mod:`bootstrap.core.fabric`)."""
