"""The one way out (bootstrap/outbound.py): nothing else in the package prints or writes, and
whatever passes through it leaves masked and printable.

1. Static: every module is read for calls that print or write; only outbound.py may make them.
2. Hypothesis: hostile text (planted secrets, terminal escapes, forged lines) through every door.
3. Real processes: a task whose own error holds secrets, alone and as one of two torchrun ranks,
   and a sweep under hydra-ray-launcher with a secret override.
"""
import ast
import io
import json
import logging
import os
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bootstrap.doors import outbound

from conftest import ROOT

PACKAGE = ROOT / "bootstrap"
# -- 1. no other way out ----------------------------------------------------------------------
# (module, what) -> why it is not a way out. Anything else found below fails the test.
ALLOWED = {
    ("flightrec.py", "os.write"): "wakes the watcher thread through its own pipe; nothing leaves the process",
    ("callback.py", "logging.FileHandler"): "a rank's own log file: its records are cleaned by MaskedLogs",
}
_WRITE_MODE = re.compile(r"[wax+]")


def _ways_out(tree: ast.AST):
    """(line, what) for each call in ``tree`` that prints, writes a file or a stream, or exits with text."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "sys" \
                and node.attr in ("stdout", "stderr", "__stdout__", "__stderr__"):
            yield node.lineno, f"sys.{node.attr}"
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else \
            f"{func.value.id}.{func.attr}" if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            else f".{func.attr}" if isinstance(func, ast.Attribute) else ""
        if name in ("print", "os.write", "os.fdopen", "tempfile.mkstemp", "json.dump", "pickle.dump",
                    "logging.FileHandler", "logging.StreamHandler") or name.startswith("traceback.print"):
            yield node.lineno, name
        elif name.startswith("outbound."):
            continue  # the door itself
        elif name.endswith((".write_text", ".write_bytes")) or name in (".write", ".writelines"):
            yield node.lineno, name
        elif name in ("yaml.dump", "yaml.safe_dump") and len(node.args) > 1:
            yield node.lineno, name
        elif name == "open":
            mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"),
                                                                   None)
            if mode is not None and not (isinstance(mode, ast.Constant) and not _WRITE_MODE.search(str(mode.value))):
                yield node.lineno, "open for writing"
        elif name == "SystemExit" and node.args and not _an_int(node.args[0]):
            yield node.lineno, "SystemExit with a message"
        elif name == "argparse.ArgumentParser":  # prints usage and errors itself, quoting what was typed
            yield node.lineno, name


def _an_int(node: ast.AST) -> bool:
    """An exit status: an int literal, or arithmetic on one (128 + signum)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int)
    return isinstance(node, ast.BinOp) and (_an_int(node.left) or _an_int(node.right))


def test_no_module_but_outbound_prints_or_writes():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "outbound.py":
            continue
        for line, what in _ways_out(ast.parse(path.read_text(), str(path))):
            if (path.name, what) not in ALLOWED:
                found.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    assert not found, "write or print through bootstrap.outbound instead:\n" + "\n".join(found)


def test_the_static_check_finds_each_kind_of_way_out():
    code = ("import sys, json, os\nprint(1)\nsys.stderr.write('x')\nopen(p, 'w')\nopen(p, mode='a')\n"
            "json.dump({}, f)\nPath(p).write_text('x')\nraise SystemExit('message')\nos.write(1, b'x')\n"
            "open(p)\nopen(p, 'rb')\nraise SystemExit(2)\nraise SystemExit(128 + n)\nargparse.ArgumentParser()\n")
    kinds = {what for _, what in _ways_out(ast.parse(code))}
    assert kinds == {"print", "sys.stderr", ".write", "open for writing", "json.dump", ".write_text",
                     "SystemExit with a message", "os.write", "argparse.ArgumentParser"}


# -- 2. hostile text through every door ---------------------------------------------------------
SECRET_NAME = "TEAM_API_TOKEN"
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
secrets = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7e, blacklist_characters="*\\"),
                  min_size=outbound.MIN_SECRET_LEN, max_size=30)
noise = st.lists(st.text(max_size=8) | st.sampled_from(
    ["\x1b]0;title\x07", "\x1b[2J", "\r", "\n", "\u202e", "\x00", "\x9b", "\udc80"]), max_size=6).map("".join)


def _doors(tmp_path: Path):
    """Each door: a function of a text that returns what left the process through it."""
    def printed(one_line: bool = False, err: bool = False):
        def run(text):
            out, error = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(error):
                outbound.say(text, err=err, one_line=one_line)
            return out.getvalue() + error.getvalue()
        return run

    def written_text(text):
        outbound.write_text(tmp_path / "t.md", text)
        return (tmp_path / "t.md").read_text("utf-8")

    def written_json(text):
        outbound.write_json(tmp_path / "r.json", {"job": {"error": text, "metrics": {text: 1.0}}, "list": [text]})
        return json.dumps(json.loads((tmp_path / "r.json").read_text("utf-8")), ensure_ascii=False)

    def printed_json(text):
        out = io.StringIO()
        with redirect_stdout(out):
            outbound.say_json({"finding": text})
        return json.dumps(json.loads(out.getvalue()), ensure_ascii=False)

    def stopped(text):
        with pytest.raises(SystemExit) as stop:
            outbound.stop(text)
        return str(stop.value.code)

    def logged(logger_name):
        def run(text):
            stream = io.StringIO()
            handler = logging.StreamHandler(stream)
            logger = logging.getLogger(logger_name)
            logger.addHandler(handler)
            logger.propagate = False  # pytest's own capture (and xdist's transport) would get a lone surrogate
            outbound.MaskedLogs.hold()
            try:
                logger.error("%s", text)
                try:
                    raise ValueError(text)
                except ValueError:
                    logger.exception("failed")
            finally:
                outbound.MaskedLogs.release()
                logger.removeHandler(handler)
                logger.propagate = True
            return stream.getvalue()
        return run

    return {"say": printed(), "say one line": printed(one_line=True), "say to stderr": printed(err=True),
            "write_text": written_text, "write_json": written_json, "say_json": printed_json, "stop": stopped,
            "our log": logged("bootstrap.core.session"), "their log": logged("their.launcher_plugin")}


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=secrets, before=noise, after=noise)
def test_hostile_text_leaves_every_door_masked_and_printable(tmp_path, secret, before, after):
    saved = os.environ.get(SECRET_NAME)
    os.environ[SECRET_NAME] = secret
    try:
        texts = [before + secret + after, f"{before}postgres://u:{secret}@h/db{after}",
                 f"{before} hf_{'a' * 24}{after}"]
        for door, send in _doors(tmp_path).items():
            for text in texts:
                out = send(text)
                # ascii(): a lone surrogate in the report would break pytest-xdist's own transport
                assert secret not in out and "hf_aaaa" not in out, ascii((door, text, out))
                # another library's records keep their colours (\x1b[...m), no other control sequence
                kept = re.sub(r"\x1b\[[0-9;]*m", "", out) if door == "their log" else out
                assert not _UNSAFE.search(kept), ascii((door, text, out))
    finally:
        if saved is None:
            del os.environ[SECRET_NAME]
        else:
            os.environ[SECRET_NAME] = saved


def test_another_librarys_log_line_keeps_its_colours_and_nothing_else():
    assert outbound.printable("\x1b[1m\x1b[32mdashboard\x1b[39m\x1b]0;title\x07\x1b[2J", colours=True) == \
        "\x1b[1m\x1b[32mdashboard\x1b[39m\\x1b]0;title\\x07\\x1b[2J"


def test_one_line_means_one_line():
    assert outbound.clean("a\nrank 0 never entered\r\x1b[2J", one_line=True) == \
        "a\\nrank 0 never entered\\x0d\\x1b[2J"


def test_a_remembered_value_is_masked_wherever_it_appears():
    outbound.remember("pw_remembered_1234")
    assert outbound.clean("login with pw_remembered_1234 failed") == "login with *** failed"
    # A number under a secret-looking name stays: tokens_per_s is a metric, not a credential.
    assert outbound.clean_data({"a": ["x pw_remembered_1234"], "tokens_per_s": 5, "db": {"secret": "plain"}}) == \
        {"a": ["x ***"], "tokens_per_s": 5, "db": {"secret": "***"}}


def test_masked_logs_survive_a_handler_swap_and_nest():
    stream = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:]
    outbound.MaskedLogs.hold()
    outbound.MaskedLogs.hold()  # a job inside a sweep
    try:
        root.handlers = [logging.StreamHandler(stream)]  # what Hydra's configure_log does
        outbound.MaskedLogs.release()
        logging.getLogger("hydra_plugins.some_launcher").error("\t#0 : +env.vars.MY_API_KEY=k_planted_1")
    finally:
        outbound.MaskedLogs.release()
        root.handlers = saved
    assert "MY_API_KEY=***" in stream.getvalue() and "k_planted_1" not in stream.getvalue()
    assert not outbound.MaskedLogs.held()
    assert logging.getLogRecordFactory() is logging.LogRecord


# -- defects found in review, each a class ------------------------------------------------------
def test_a_long_error_is_masked_before_it_is_cut():
    from bootstrap.core.report import MAX_ERROR_CHARS, error_text

    token = "hf_" + "A" * 37
    text = error_text(RuntimeError("x" * (MAX_ERROR_CHARS - 15) + token))  # the cut would fall inside the token
    assert "hf_" not in text and "AAAAAAAAAA" not in text


def test_a_config_key_that_merely_contains_a_marker_is_not_a_secret():
    from bootstrap.doors.masking import names_a_credential

    assert [k for k in ("password", "hub_token", "HF_TOKEN", "api_key", "apiKey", "key", "GITHUB_PAT", "cookie")
            if not names_a_credential(k)] == []
    assert [k for k in ("tokenizer", "message_key", "time_key", "max_tokens", "author", "monkey", "path")
            if names_a_credential(k)] == []
    # so an app's `message_key: message` is not remembered, and never renames torch elastic's error
    # file's keys (torchrun's agent reads error_file_data["message"])
    from omegaconf import OmegaConf

    from bootstrap.core.jobconfig import remember_secrets

    remember_secrets(OmegaConf.create({"logger": {"message_key": "message", "time_key": "timestamp"}}))
    assert set(outbound.clean_data({"message": {"message": "x", "extraInfo": {"timestamp": "1"}}})) == {"message"}


def test_a_log_call_whose_message_cannot_be_shown_never_crashes_the_caller():
    class Unprintable:
        def __str__(self):
            raise RuntimeError("boom")

    stream = io.StringIO()
    logger = logging.getLogger("their.app")
    logger.addHandler(logging.StreamHandler(stream))
    logger.propagate = False
    outbound.MaskedLogs.hold()
    try:
        logger.warning(Unprintable())  # without the bootstrap, logging absorbs this; so must we
        logger.warning("%d", "not a number")
    finally:
        outbound.MaskedLogs.release()
        logger.propagate = True
    assert "could not be shown (Unprintable)" in stream.getvalue()


def test_a_refused_apply_or_a_failed_hook_holds_no_log_masking():
    import bootstrap
    from bootstrap.doors.errors import BootstrapError

    before = outbound.MaskedLogs._holds
    session = bootstrap.initialize({}).apply()
    with pytest.raises(BootstrapError, match="already applied"):
        session.apply()
    session.close()
    assert outbound.MaskedLogs._holds == before  # the refused second apply left its hold to nobody


def test_a_line_said_leaves_in_one_write_with_its_newline(monkeypatch):
    """print() writes a line and its newline apart; another writer of the same file (slurmstepd, another rank)
    landed between them in a SLURM job's output. say() and say_json() write each whole."""
    from bootstrap.doors import outbound

    class Recorder:
        def __init__(self):
            self.writes = []

        def write(self, text):
            self.writes.append(text)
            return len(text)

        def flush(self):
            pass

    for name in ("stdout", "stderr"):
        recorder = Recorder()
        monkeypatch.setattr(outbound.sys, name, recorder)
        outbound.say("bootstrap: scontrol release 1", err=name == "stderr")
        assert recorder.writes == ["bootstrap: scontrol release 1\n"]
    recorder = Recorder()
    monkeypatch.setattr(outbound.sys, "stdout", recorder)
    outbound.say_json({"a": 1})
    assert recorder.writes == ['{\n  "a": 1\n}\n']
