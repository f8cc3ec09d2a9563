"""Property tests of the plan -> apply -> restore cycle (hypothesis)."""
import os
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bootstrap
from bootstrap.variables.environ import EnvironSnapshot, apply_vars, normalize, plan_vars
from bootstrap.variables.readers import ProcessState

FRESH = ProcessState(cuda_initialized=False, process_group_initialized=False)
names = st.text(alphabet=string.ascii_uppercase + string.digits + "_", min_size=1, max_size=12).map(
    lambda s: f"HTB_PROP_{s}")  # a prefix of our own: never PATH or anything the interpreter reads
env_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=50) | \
    st.text(alphabet="ab", min_size=1000, max_size=5000)  # unicode, empty, and very long values
preset_values = st.none() | st.booleans() | st.integers(-10**12, 10**12) | \
    st.floats(allow_nan=False, allow_infinity=False) | env_text


@st.composite
def scenarios(draw):
    environ = draw(st.dictionaries(names, env_text, max_size=8))
    preset = draw(st.dictionaries(names, preset_values, max_size=8))
    env_set = {n: environ[n] for n in draw(st.sets(st.sampled_from(sorted(environ)))) } if environ else {}
    overrides = draw(st.sets(st.sampled_from(sorted(preset)))) if preset else set()
    return environ, preset, env_set, overrides


@given(scenarios())
def test_restore_gives_back_the_identical_environment(scenario):
    environ, preset, env_set, overrides = scenario
    before = dict(environ)
    requested = {n: normalize(n, v) for n, v in preset.items()}
    snapshot = EnvironSnapshot(environ)
    apply_vars(plan_vars(requested, environ, env_set, overrides, FRESH), environ)
    snapshot.restore()
    assert environ == before


@given(scenarios())
def test_precedence_always_holds(scenario):
    environ, preset, env_set, overrides = scenario
    requested = {n: normalize(n, v) for n, v in preset.items()}
    decisions = {d.name: d for d in plan_vars(requested, environ, env_set, overrides, FRESH)}
    assert set(decisions) == {n for n, v in requested.items() if v is not None}
    for name, d in decisions.items():
        if name in overrides:
            assert (d.source, d.value) == ("override", requested[name])
        elif name in environ:
            assert d.value == environ[name] and d.source == ("env_set" if name in env_set else "shell")
            assert not d.changes_environ
        else:
            assert (d.source, d.value) == ("preset", requested[name])


@given(names, preset_values)
def test_normalising_twice_gives_the_same_string(name, value):
    once = normalize(name, value)
    assert once is None or normalize(name, once) == once


# OmegaConf reads "${...}" in a config value as an interpolation, so the values a real
# session gets through its config leave out "$"; the pure tests above cover it.
config_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0$"), max_size=50)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(names, st.none() | st.booleans() | st.integers(-10**12, 10**12) | config_text, max_size=6),
       st.dictionaries(names, env_text, max_size=4))
def test_a_real_session_restores_the_real_environment(preset_vars, shell):
    for name in [n for n in os.environ if n.startswith("HTB_PROP_")]:
        del os.environ[name]
    os.environ.update(shell)
    try:
        before = dict(os.environ)
        with bootstrap.initialize({"vars": preset_vars, "threads": {"intra_op": 1}}) as session:
            for name, value in preset_vars.items():
                expected = shell.get(name, normalize(name, value))
                assert os.environ.get(name) == expected
            assert session.report.vars.keys() >= {n for n, v in preset_vars.items() if v is not None}
        assert dict(os.environ) == before
    finally:
        for name in shell:
            os.environ.pop(name, None)
