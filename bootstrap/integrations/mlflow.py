"""MLflow: every run that ``mlflow.start_run()`` creates while a bootstrap session is active gets the report's
flat view as tags, with no line in the user's code, through MLflow's own plugin mechanism: a run-context
provider, registered under the entry point group ``mlflow.run_context_provider`` (pyproject.toml).

A provider's ``tags()`` is not told the run's id. So each run is also tagged with the job's own key
(:data:`JOB_KEY`), and at the job's end :func:`job_end` finds the job's runs by it (``mlflow.search_runs``, in
every experiment) to add ``bootstrap.json`` as an artifact and the tags whose value changed since the run began
(``bootstrap/job/status``: ``running`` then ``completed``).

MLflow imports this module, and makes one :class:`BootstrapContext`, whenever MLflow itself is imported, in any
process of an environment where the package is installed, Hydra or not. So the import and
:meth:`BootstrapContext.in_context` (on every ``start_run``) cost next to nothing and say nothing when no session
is active, and no error here reaches the user's ``start_run()``: it costs one logged warning and the tags.
Import ``mlflow`` before this module, never after: MLflow loads it while MLflow itself is imported.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List

from mlflow.tracking.context.abstract_context import RunContextProvider

from bootstrap.doors import outbound
from bootstrap.integrations import active_session, report_path

if TYPE_CHECKING:
    from bootstrap.core.session import Session

log = logging.getLogger(__name__)

JOB_KEY = "bootstrap/job_key"  # a tag: the job's own key, random, made when the job's first run is tagged
BATCH = 100  # MLflow takes at most 100 tags in one log_batch (mlflow.utils.validation.MAX_PARAMS_TAGS_PER_BATCH)


@dataclass
class _Job:
    key: str
    tags: Dict[str, str] = field(default_factory=dict)  # what the job's runs were tagged with, last


_jobs: "weakref.WeakKeyDictionary[Any, _Job]" = weakref.WeakKeyDictionary()  # session -> its tagged runs' job


def as_tags(view: Dict[str, Any]) -> Dict[str, str]:
    """The flat view as MLflow tags: text, with true and false as JSON writes them."""
    return {key: ("true" if value else "false") if isinstance(value, bool) else str(value)
            for key, value in view.items()}


class BootstrapContext(RunContextProvider):
    """The run-context provider MLflow asks on every ``mlflow.start_run()``."""

    def in_context(self) -> bool:
        try:
            return active_session() is not None
        except Exception:  # noqa: BLE001 - never the user's start_run
            return False

    def tags(self) -> Dict[str, str]:
        try:
            session = active_session()
            if session is None:
                return {}
            tags = as_tags(session.flat())
            job = _jobs.setdefault(session, _Job(uuid.uuid4().hex))
            job.tags = tags
            return {**tags, JOB_KEY: job.key}
        except Exception as error:  # noqa: BLE001 - never the user's start_run
            log.warning("bootstrap: the MLflow run is not tagged with the bootstrap report: %s",
                        outbound.finding(f"{type(error).__name__}: {error}", 500))
            return {}


def tag_run(run_id: str, client: Any = None) -> None:
    """Tag a run that was not made by ``mlflow.start_run()`` (Lightning's ``MLFlowLogger`` makes its own with
    ``MlflowClient.create_run``) with the job's key, so the job's end finds it too."""
    session = active_session()
    if session is None:
        return
    from mlflow import MlflowClient

    job = _jobs.setdefault(session, _Job(uuid.uuid4().hex))
    (client or MlflowClient()).set_tag(run_id, JOB_KEY, job.key)


def job_end(session: "Session") -> None:
    """At the job's end, every run of the job: the tags that changed, and ``bootstrap.json`` as an artifact."""
    job = _jobs.pop(session, None)
    if job is None:  # no run of this job was tagged: nothing to look for
        return
    import mlflow
    from mlflow import MlflowClient
    from mlflow.entities import RunTag

    runs = mlflow.search_runs(search_all_experiments=True, output_format="list",
                              filter_string=f"tags.`{JOB_KEY}` = '{job.key}'")
    client = MlflowClient()
    changed: List[RunTag] = [RunTag(key, value) for key, value in as_tags(session.flat()).items()
                             if job.tags.get(key) != value]
    path = report_path(session)
    for run in runs:
        for start in range(0, len(changed), BATCH):
            client.log_batch(run.info.run_id, tags=changed[start:start + BATCH])
        if path is not None:
            client.log_artifact(run.info.run_id, str(path))
