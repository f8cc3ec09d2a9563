"""The report as flat ``bootstrap/...`` keys and scalar values, masked: the one view every tracker
integration logs (docs/trackers.md). Pure.

Placeholder until the tracker integrations land: keys are the report's JSON paths joined with ``/``."""

from typing import Any, Dict

from bootstrap.doors import outbound


def flat(report: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {}

    def visit(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                visit(f"{prefix}/{key}", item)
        elif isinstance(value, list):
            out[prefix] = outbound.clean(", ".join(map(str, value)), one_line=True)
        else:
            out[prefix] = outbound.clean(value, one_line=True) if isinstance(value, str) else value

    visit("bootstrap", report.to_json())
    return out
