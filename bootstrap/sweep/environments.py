"""Did the jobs of one sweep run in the same environment? A paragraph for the sweep summary.

Each job's environment is what it found rather than chose (:func:`bootstrap.core.facts.environment`):
versions, hardware and inherited variables. A submitit sweep that landed on two kinds of nodes, a Ray
cluster of mixed workers, or a task that exported a variable the next jobs of its process inherited,
each make the jobs' numbers incomparable; :func:`note` says which jobs and what differs, masked and
bounded, and nothing when they agree. Pure, apart from masking what this process knows to be secret.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from bootstrap.doors import outbound

MAX_KEYS = 12  # differing facts named; the rest are counted
MAX_VALUES = 4  # values named per fact; the rest are counted
MAX_JOBS = 8  # jobs named per value; the rest are counted
MAX_VALUE = 80  # characters of one value
UNSET = "unset"


def _jobs(names: Sequence[str]) -> str:
    shown = ", ".join(outbound.finding(name, MAX_VALUE) for name in names[:MAX_JOBS])
    shown += f" and {len(names) - MAX_JOBS} more" if len(names) > MAX_JOBS else ""
    return f"job{'s' if len(names) > 1 else ''} {shown}"


def _value(value: Optional[str]) -> str:
    """A fact as facts.environment shows it (masked by its name, visible), one line, cut."""
    return UNSET if value is None else outbound.finding(value, MAX_VALUE)


def differing(environments: Sequence[Tuple[str, Mapping[str, str]]]) -> Dict[str, Dict[Optional[str], List[str]]]:
    """``{fact: {value: [job, ...]}}`` for each fact the jobs do not all share (None: unset); values by how
    many jobs hold them, then by first job. ``environments``: ``(job, environment)`` in job order."""
    keys = list(dict.fromkeys(key for _, environment in environments for key in environment))
    found = {}
    for key in keys:
        holders: Dict[Optional[str], List[str]] = {}
        for job, environment in environments:
            holders.setdefault(environment.get(key), []).append(job)
        if len(holders) > 1:
            found[key] = dict(sorted(holders.items(), key=lambda item: -len(item[1])))  # stable: first job breaks ties
    return found


def note(environments: Sequence[Tuple[str, Mapping[str, str]]]) -> str:
    """The markdown paragraph naming what differs, or '' when every job ran alike (or only one ran)."""
    found = differing([(job, environment) for job, environment in environments if environment])
    if not found:
        return ""
    lines = ["\nJobs ran in different environments (versions, hardware, inherited variables, code or packages; not "
             "their overrides), so their numbers may not compare:"]
    for key, holders in list(found.items())[:MAX_KEYS]:
        parts = [f"{_value(value)} in {_jobs(jobs)}" for value, jobs in list(holders.items())[:MAX_VALUES]]
        if len(holders) > MAX_VALUES:
            rest = list(holders.values())[MAX_VALUES:]
            parts.append(f"{len(rest)} other values in {sum(len(jobs) for jobs in rest)} jobs")
        lines.append(f"- {_value(key)}: {'; '.join(parts)}")
    if len(found) > MAX_KEYS:
        lines.append(f"- and {len(found) - MAX_KEYS} more differing facts (bootstrap diff JOB_A JOB_B)")
    return "\n".join(lines) + "\n"
