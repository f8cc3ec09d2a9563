"""What ``import bootstrap`` offers: the names a user needs, every exception a job stops with, and a
``py.typed`` marker; the names that need torch are imported on first use."""

import inspect

import bootstrap
from bootstrap.doors import errors

USER_NAMES = {"current", "initialize", "Session", "BootstrapCallback", "JobStatus", "Report", "read_report",
              "EnvConfig"}


def test_the_package_exports_what_a_user_needs_and_every_exception_a_job_stops_with():
    exceptions = {name for name, value in vars(errors).items()
                  if inspect.isclass(value) and issubclass(value, errors.BootstrapError)}
    assert {"BootstrapError", "ConfigError", "MismatchError", "LintError", "DisagreementError",
            "PreflightError"} <= exceptions
    assert set(bootstrap.__all__) == USER_NAMES | exceptions
    for name in bootstrap.__all__:
        assert getattr(bootstrap, name) is not None, name


def test_the_exported_types_are_the_ones_the_api_uses():
    from bootstrap.core import session
    from bootstrap.doors import records, statuses

    assert bootstrap.JobStatus is statuses.JobStatus and bootstrap.Report is records.Report
    assert bootstrap.read_report is records.read_report and bootstrap.initialize is session.initialize
    assert inspect.signature(session.Session.close).parameters["status"].default is bootstrap.JobStatus.COMPLETED
