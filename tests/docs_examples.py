"""The docs' examples, written by the code: ``python tests/docs_examples.py`` rewrites them in the pages.

A page marks each block the code writes with a comment on the line before it,
``<!-- generated: NAME -->``, followed by a fenced block or a table. :data:`BLOCKS` says
which function writes each. ``tests/unit/test_docs.py`` fails when a page's block differs from
what the function gives, and names this script.

The examples are built by the package's own functions (the preset composed by Hydra,
``make_plan``, ``versions.check``, the lint, the verdict, ``report.build``,
``Report.to_json``, the doctor's ``format_text``) from fixed facts, so that they read the
same on any machine. Those facts, the only values written here by hand, are in one
place: the constants and :func:`_found` below. A real run's versions, times and metrics vary,
so no example is taken from one.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Callable, Dict, Tuple

ROOT = Path(__file__).resolve().parents[1]

# -- the fixed facts: a 2-core CPU machine, one process, nothing started it as a rank ---------------
ARCH = "x86_64"
OPENMP = ("libgomp",)  # the OpenMP runtime torch's CPU wheel loads
BOOTSTRAP_S = 0.0136  # the bootstrap's own time at job start
STARTED_NS = 1796290101123456789
METRICS = {"samples_per_s": 13099.25, "final_loss": 0.5493, "steps": 300, "num_threads": 1}  # train_stub's return


def _found():
    """The machine: no GPU, a CPU build of torch."""
    from bootstrap.core import versions

    return versions.Found(python="3.11.7", torch="2.13.0+cpu", cuda=None, nccl=None, cudnn=None,
                          compute_capability=None, gpus=0, gpu_names=(), cpus=2, cpus_usable=2, cpu_affinity="0-1")


# -- one job, worked out as a job start works it out -------------------------------------------------
def _session(overrides: Tuple[str, ...]):
    """The session the callback makes for ``python train_stub.py <overrides>``: validated, not applied."""
    from hydra import compose, initialize_config_dir

    import bootstrap  # noqa: F401 - registers the preset schema
    from bootstrap.core.jobconfig import session_args
    from bootstrap.core.session import Session

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
        return Session(**session_args(cfg))


def _job(overrides: Tuple[str, ...]):
    """(session, plan, checks, lint findings) for ``python train_stub.py <overrides>`` on the fixed machine."""
    from bootstrap.core import versions
    from bootstrap.core.plan import make_plan
    from bootstrap.distributed.launcher import Launch, Launcher
    from bootstrap.variables import lint
    from bootstrap.variables.readers import ProcessState

    session, found = _session(overrides), _found()
    plan = make_plan(session.preset, environ_now={}, env_set=session.env_set,
                     explicit_vars=session.explicit_vars,
                     state=ProcessState(cuda_initialized=False, process_group_initialized=False),
                     cpus=found.cpus_usable, machine_cpus=found.cpus, launch=Launch(Launcher.single))
    checks = versions.check(session.preset.requires, found, plan.device_type)
    findings = lint.for_preset(session.preset, _machine())
    return session, plan, checks, findings


def _machine():
    """The fixed machine as the lint and the report's ``effective`` judge its hardware."""
    from bootstrap.variables import lint

    return lint.machine_from(_found(), ARCH, lambda: OPENMP)


def _job_info(session):
    from bootstrap.core.report import JobInfo

    return JobInfo(session.name, session.job_overrides, session.job_num)


def example_report():
    """The typed report of ``python train_stub.py env.threads.intra_op=1``, at its end."""
    from bootstrap.core import report, watch

    session, plan, checks, findings = _job(("env.threads.intra_op=1",))
    applied = report.Applied(intra_op=plan.threads.intra_op, inter_op=plan.threads.inter_op,
                             seeded=("random", "numpy", "torch"), group=report.GroupState.NONE, backend=None,
                             mesh=False)
    record = report.build(_job_info(session), plan, plan.device(cuda_visible=False), _found(), checks, applied, [],
                          BOOTSTRAP_S, lint=findings, started_ns=STARTED_NS, machine=_machine())
    report.end(record, report.JobEnd(report.JobStatus.COMPLETED, METRICS))
    record.watch = watch.planned(session.preset, "one process: no rank to compare with")  # as Session._end writes it
    return record


def report_example() -> str:
    """``bootstrap.json`` of ``python train_stub.py env.threads.intra_op=1``, at its end."""
    return "```json\n" + _json(example_report().to_json()) + "\n```\n"


def flat_example() -> str:
    """docs/trackers.md's flat view (``bootstrap.current().flat()``) of the same job: what every tracker gets."""
    from bootstrap.core import flat

    view = flat.flat(example_report())
    width = max(map(len, view))
    return "```\n" + "\n".join(f"{key:<{width}}  {value!r}" for key, value in view.items()) + "\n```\n"


INSTALLED = "/opt/venv/lib/python3.11/site-packages"  # where the fixed machine installed the package


def doctor_text(overrides: Tuple[str, ...] = ("env=h100",)) -> str:
    """What ``python -m bootstrap doctor <overrides>`` prints on the fixed machine, line for line as the doctor
    prints it (``doctor.answer``): the config it composed, the machine, the checks, the variables, the lint, the
    preflight it expects, torch, and the verdict with every reason (``verdict.before_apply``,
    ``verdict.after_checks``, as ``verdict.of_preview`` takes them)."""
    from dataclasses import replace

    from bootstrap.cli import doctor
    from bootstrap.core import compose, preflight, presets, report, verdict

    session, plan, checks, findings = _job(overrides)
    refusals = verdict.before_apply(session.preset, plan, {})
    mismatch = verdict.after_checks(session.preset, session.name, checks, cpu_override=session.cpu_override)
    refusals = [replace(r, message=session.named(r.message)) for r in refusals + ([mismatch] if mismatch else [])]
    record = report.build(_job_info(session), plan, plan.device(cuda_visible=False), _found(), checks, None, [],
                          BOOTSTRAP_S, report.JobStatus.PREVIEW, findings, machine=_machine(),
                          preflight=preflight.expected(session.preset))
    which = compose.which(None, None).replace(str(presets.CONF_DIR.parent.parent), INSTALLED)
    return doctor.answer(which, record, refusals)


def doctor_example() -> str:
    """``python -m bootstrap doctor env=h100`` on the fixed machine: no GPU, so the job would stop."""
    return "```\n" + doctor_text() + "\n```\n"


def readers_table() -> str:
    """The timing table of docs/settings.md: the readers' table, row for row."""
    from bootstrap.variables.readers import READERS, UNKNOWN

    rows = [(", ".join(f"`{p}`" for p in r.patterns), r.read_when, r.applied_by) for r in READERS]
    rows.append(("anything else", UNKNOWN.read_when, UNKNOWN.applied_by))
    lines = ["| variables | read | applied in this process by |", "|---|---|---|"]
    return "\n".join(lines + [f"| {a} | {b} | {c} |" for a, b, c in rows]) + "\n"


def phases_table() -> str:
    """docs/report.md's table of the start's phases: ``PHASES`` in bootstrap/core/phases.py, row for row."""
    from bootstrap.core.phases import PHASES

    lines = ["| phase | what it holds | ends where the ranks meet |", "|---|---|---|"]
    return "\n".join(lines + [f"| `{kind.name}` | {kind.what} | {'yes' if kind.waits else ''} |"
                              for kind in PHASES]) + "\n"


def agree_kinds_table() -> str:
    """docs/lint.md's table of what a difference between ranks changes: each kind, what env.distributed.agree=error
    does with it, the groups of the known-variables table whose default it is, and the rows that differ from
    their group's default."""
    from bootstrap.variables import difference_kinds, table

    group_names = {id(group): attr for attr, group in vars(table).items() if any(group is g for g in table.GROUPS)}
    defaults = {kind: [f"`{group_names[id(g)]}`" for g in table.GROUPS if table.GROUP_AGREE[g[0].name] == kind]
                for kind in table.AGREE_KINDS}
    defaults[difference_kinds.TORCH_OTHER_KIND].append("torch's other names")
    others = {kind: sorted(v.name for g in table.GROUPS for v in g
                           if v.agree == kind != table.GROUP_AGREE[v.name]) for kind in table.AGREE_KINDS}
    others["collective"] = sorted(others["collective"] + list(difference_kinds.TORCH_OTHER_COLLECTIVE))
    lines = ["| kind | a difference between ranks changes | under `agree=error` | the default of "
             "| other rows of this kind |", "|---|---|---|---|---|"]
    lines += [f"| `{kind}` | {table.AGREE_MEANINGS[kind]} | {difference_kinds.ON_ERROR[kind]} | "
              f"{', '.join(defaults[kind]) or '-'} | {', '.join(f'`{n}`' for n in others[kind]) or '-'} |"
              for kind in table.AGREE_KINDS]
    return "\n".join(lines) + "\n"


def layout_table() -> str:
    """CONTRIBUTING.md's map of the package: each folder, top layer first, and each module, with the first
    sentence of its docstring."""
    from layout_rule import LEVELS, PACKAGE

    rows = [("`bootstrap/__init__.py`, `__main__.py`", "the public names, and `python -m bootstrap ...`")]
    for folder in sorted(LEVELS, key=lambda name: (-LEVELS[name], name)):
        rows.append((f"**`bootstrap/{folder}/`**", f"**{_summary(PACKAGE / folder / '__init__.py')}**"))
        rows += [(f"`{path.relative_to(PACKAGE.parent)}`", _summary(path))
                 for path in sorted((PACKAGE / folder).glob("*.py")) if path.name != "__init__.py"]
    lines = ["| folder, module | what it holds |", "|---|---|"]
    return "\n".join(lines + [f"| {a} | {b} |" for a, b in rows]) + "\n"


def _summary(path: Path) -> str:
    """A module's docstring, to the end of its first sentence, as markdown on one line."""
    text = " ".join((ast.get_docstring(ast.parse(path.read_text())) or "").split("\n\n")[0].split())
    sentence = re.match(r"(.+?\.)(?:\s|$)", text)
    text = sentence.group(1) if sentence else text
    text = re.sub(r":\w+:`~[\w.]*?(\w+)`", r"`\1`", text)  # as Sphinx shows them: :class:`~a.b.Session` -> `Session`
    text = re.sub(r":\w+:`([^`]+)`", r"`\1`", text)
    return text.replace("``", "`").replace("|", "\\|")


WIDTH = 110  # a JSON value that fits on one line of this width stays on one


def _json(value, indent: int = 0, used: int = 0) -> str:
    """JSON as a person lays it out: a value on one line where it fits, else one item a line."""
    flat = json.dumps(value)
    if used + len(flat) < WIDTH or not isinstance(value, (dict, list)) or not value:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        heads = ((f"{pad}{json.dumps(key)}: ", item) for key, item in value.items())
        items = [head + _json(item, indent + 2, len(head)) for head, item in heads]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + _json(item, indent + 2, len(pad)) for item in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


# -- the pages ---------------------------------------------------------------------------------------
BLOCKS: Dict[str, Tuple[str, Callable[[], str]]] = {  # name: (the page that holds it, what writes it)
    "report-example": ("docs/report.md", report_example),
    "doctor-example": ("docs/report.md", doctor_example),
    "readers-table": ("docs/settings.md", readers_table),
    "phases-table": ("docs/report.md", phases_table),
    "agree-kinds": ("docs/lint.md", agree_kinds_table),
    "layout-table": ("CONTRIBUTING.md", layout_table),
    "flat-example": ("docs/trackers.md", flat_example),
}

# The marker, then the block: a fenced block, or a table (the lines that start with '|').
_BLOCK = re.compile(r"^<!-- generated: ([\w-]+) -->\n((?s:```.*?\n```\n)|(?:\|.*\n)+)", re.MULTILINE)


def blocks_in(text: str) -> Dict[str, str]:
    """The generated blocks a page holds, by name, as the page has them."""
    return {match.group(1): match.group(2) for match in _BLOCK.finditer(text)}


def rendered(text: str) -> str:
    """The page with each generated block as the code writes it now."""
    return _BLOCK.sub(lambda m: f"<!-- generated: {m.group(1)} -->\n{BLOCKS[m.group(1)][1]()}", text)


def main() -> int:
    for name in sorted({page for page, _ in BLOCKS.values()}):
        page = ROOT / name
        text = page.read_text()
        new = rendered(text)
        if new != text:
            page.write_text(new)
            sys.stdout.write(f"rewrote {page.relative_to(ROOT)}\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # run from a checkout without an install
    sys.exit(main())
