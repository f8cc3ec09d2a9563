"""One masking rule for every text: each shape of the catalogue (tests/secret_shapes.py, after gitleaks' rules)
through every door of the package, in this process. tests/e2e/test_secret_shapes.py does the same with real
jobs, trackers and ranks.
"""

import json
import logging

import pytest

from bootstrap.core import flat, report
from bootstrap.doors import masking, outbound, records
from bootstrap.doors.statuses import JobStatus

from secret_shapes import CATALOGUE, MARK, Shape

SHAPES = pytest.mark.parametrize("shape", CATALOGUE, ids=[s.rule for s in CATALOGUE])


def assert_masked(text: str, shape: Shape, where: str = "") -> None:
    for secret in shape.secrets:
        assert secret not in text, f"{shape.rule}: {secret!r} left in {where}: {text[:300]!r}"
    assert MARK not in text and MARK.upper() not in text, f"{shape.rule}: part of a secret left in {where}: {text!r}"


@SHAPES
def test_every_text_function_masks_every_shape(shape):
    for name, door in [("clean", outbound.clean), ("clean one line", lambda t: outbound.clean(t, one_line=True)),
                       ("finding", outbound.finding), ("shown", outbound.shown),
                       ("shown by name", lambda t: outbound.shown(t, name="NOTE")),
                       ("masked", lambda t: masking.masked("note", t)), ("masked_line", masking.masked_line),
                       ("masked_text", masking.masked_text), ("masked_source", masking.masked_source),
                       ("mask_credentials", masking.mask_credentials)]:
        assert_masked(door(shape.text), shape, name)
    assert masking.holds_secret(shape.text)


@SHAPES
def test_a_structure_written_as_json_is_masked_in_keys_and_values(shape):
    data = {"note": shape.text, "list": [shape.text], shape.text: 1, "nested": {"a": {"b": shape.text}}}
    assert_masked(outbound.to_json(data), shape, "to_json")
    assert_masked(json.dumps(outbound.clean_data(data)), shape, "clean_data")


@SHAPES
def test_the_tasks_error_in_job_error_the_flat_view_and_what_crosses_ranks(shape):
    written = records.Report()
    report.end(written, report.JobEnd(JobStatus.FAILED, error=RuntimeError(shape.text)))
    assert_masked(written.job.error, shape, "job.error")
    assert_masked(outbound.to_json(written.to_json()), shape, "bootstrap.json")
    assert_masked(report.error_line(RuntimeError(shape.text)), shape, "error_line (sent to the other ranks)")
    view = flat.flat(written)
    assert_masked(json.dumps(view), shape, "flat view (every tracker)")
    assert view["bootstrap/job/error"].startswith("RuntimeError: ")
    # A peer's report read back (bootstrap diff, the summary, a Lightning rank) is cleaned again on its way out.
    assert_masked(json.dumps(flat.view({"job": {"status": "failed", "error": shape.text}})), shape, "flat.view")


@SHAPES
def test_the_terminal_files_and_a_stop(shape, capsys, tmp_path):
    outbound.say(shape.text)
    outbound.say(shape.text, err=True, one_line=True)
    out, err = capsys.readouterr()
    assert_masked(out + err, shape, "the terminal")
    outbound.write_text(tmp_path / "t.md", shape.text)
    outbound.write_json(tmp_path / "t.json", {"error": shape.text})
    for path in tmp_path.iterdir():
        assert_masked(path.read_text(), shape, path.name)
    with pytest.raises(SystemExit) as stop:
        outbound.stop(shape.text)
    assert_masked(str(stop.value.code), shape, "SystemExit")


@SHAPES
def test_a_log_record_of_any_logger_is_masked_while_a_job_runs(shape):
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(self.format(record))

    logger = logging.getLogger("their_app.shapes")
    handler = Keep()
    logger.addHandler(handler)
    outbound.MaskedLogs.hold()
    try:
        logger.error("failed: %s", shape.text)
        try:
            raise RuntimeError(shape.text)
        except RuntimeError:
            logger.exception("with its traceback")
    finally:
        outbound.MaskedLogs.release()
        logger.removeHandler(handler)
    assert len(seen) == 2
    assert_masked("\n".join(seen), shape, "log records")


@pytest.mark.extra("plot")
def test_a_pictures_texts_are_masked(tmp_path):
    from bootstrap.pictures import canvas

    figure = canvas.new_figure((6, 4))
    axes = figure.add_subplot()
    axes.set_title(" | ".join(s.text for s in CATALOGUE if s.one_line))
    axes.set_xlabel(CATALOGUE[0].text)
    axes.set_xticks([0, 1], [CATALOGUE[1].text, CATALOGUE[2].text])
    canvas.save(figure, tmp_path / "p.svg")
    svg = (tmp_path / "p.svg").read_text()
    for shape in CATALOGUE:
        if shape.one_line:
            assert_masked(svg, shape, "the picture")
    assert all(MARK not in t.get_text() and MARK.upper() not in t.get_text() for t in canvas.texts(figure))


def test_what_is_not_a_secret_stays_as_it_is():
    # Assignments to names that do not say "credential", words after a colon that do not look like a value,
    # references, and plain prose keep their text.
    for text in ("tokenizer=gpt2 lr=0.1", "message_key: message", "password: incorrect", "token: expired",
                 "hub_token=${oc.env:HF_TOKEN}", "KeyError: 'API_KEY'", "authorization failed for user bob",
                 "a bearer of bad news", "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
                 "env.threads.intra_op=abc is not a thread count", "https://github.com/org/repo"):
        assert masking.mask_credentials(text) == text, text
        assert outbound.clean(text) == text, text


def test_a_private_key_block_cut_before_its_end_is_masked_to_the_end():
    cut = "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAAAAAABG5vbmU"
    assert masking.mask_credentials(cut) == "key:\n-----BEGIN OPENSSH PRIVATE KEY-----***"


def test_an_assignment_inside_a_sentence_is_found_after_a_colon():
    assert outbound.clean("login refused: API_KEY=zzzSecret123 done") == "login refused: API_KEY=*** done"
    assert outbound.clean('{"api_key": "x y z", "lr": 1}') == '{"api_key": ***, "lr": 1}'


def test_masking_a_long_hostile_text_is_read_once_not_again_from_each_character():
    import time

    # Runs that a pattern could read again from each of their starts: 200,000 characters each.
    for text in ("ey-" * 70_000, "eyA." * 50_000, "a" * 200_000, "x=" * 100_000, "key:" * 50_000,
                 "Authorization: " * 13_000, "bearer " * 28_000, "-----BEGIN RSA PRIVATE KEY-----" * 6_000):
        started = time.process_time()  # this process's CPU: what a pattern that reads again costs, whatever the load
        outbound.clean(text)
        masking.masked_line(text)
        assert time.process_time() - started < 5, text[:20]  # about 0.1 s each here


# -- credential names that are compound words (issue 45) ------------------------------------------
def compound_names(keyword: str):
    """A keyword of gitleaks' generic rule as names hold it: alone, one word with another (PGPASSWORD, dbpassword),
    a camelCase part (storageKey), and a word the rule has no list of before it (master_key)."""
    return (keyword, keyword.upper(), f"db{keyword}", f"PG{keyword.upper()}", f"storage{keyword.capitalize()}",
            f"master_{keyword}", f"{keyword.upper()}_V2")


def test_every_keyword_of_gitleaks_generic_rule_inside_a_compound_name_is_masked_in_every_door():
    from omegaconf import OmegaConf

    from bootstrap.core.jobconfig import remember_secrets

    assert set(masking.GENERIC_KEYWORDS) == {"access", "api", "auth", "key", "credential", "creds", "passwd",
                                             "password", "secret", "token"}  # gitleaks.toml at 009e025
    for k, keyword in enumerate(masking.GENERIC_KEYWORDS):
        for n, name in enumerate(compound_names(keyword)):
            value = f"{MARK}k{k}n{n}"
            assert masking.names_a_credential(name), name
            assert value not in outbound.clean(f"connect failed: {name}={value}; retry"), name  # job.error, logs
            assert value not in outbound.clean(f'settings {{"{name}": "{value}"}}'), name
            assert value not in masking.masked_source(f"+{name} = '{value}'"), name  # git.diff
            assert value not in masking.masked_override(f"+app.{name}={value}"), name  # the overrides' record
            assert value not in outbound.to_json({name: value}), name  # a report's field
            remembered = f"{MARK}remembered{k}x{n}"
            remember_secrets(OmegaConf.create({"app": {name: remembered}}))  # the app's own config
            assert remembered not in outbound.clean(f"the task said {remembered}"), name


def test_a_name_that_merely_holds_a_keyword_inside_another_word_stays_as_it_is():
    for name in ("tokenizer", "max_tokens", "max_new_tokens", "author", "monkey", "key_name", "secret_size",
                 "token_url", "primary_key", "public_key", "message_key", "time_key", "KeyError", "accessor", "rapid",
                 "api_version", "path", "keyboard"):
        assert not masking.names_a_credential(name), name
    for text in ("tokenizer=bert-base-uncased max_tokens=512", "KeyError: 'API_KEY'", "key_name: run-2024-0001"):
        assert outbound.clean(text) == text
