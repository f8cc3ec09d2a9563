"""bootstrap/cli/commands.py: each command's purpose, its help in plain words, a misspelt command's nearest one."""
import pytest

from bootstrap.cli import commands


@pytest.mark.parametrize("name", sorted(commands.COMMANDS))
def test_each_commands_help_starts_with_its_purpose_and_shows_no_restructuredtext(name, capsys):
    try:
        code = commands.main([name, "--help"])
    except SystemExit as stopped:  # argparse's own exit, where the command lets it through
        code = stopped.code
    out = capsys.readouterr().out
    assert code == 0
    assert " ".join(out.split()).count(" ".join(commands.purpose(name).split())) == 1, out  # argparse rewraps it
    assert "``" not in out and ":func:" not in out and ":mod:" not in out, out


def test_bootstrap_help_lists_every_command_with_its_purpose_and_a_typo_gets_the_nearest(capsys):
    assert commands.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, (_, purpose) in commands.COMMANDS.items():
        assert any(line.split() and line.split()[0] == name and purpose in line for line in out.splitlines()), name
    assert commands.main(["doctr"]) == 2
    assert "did you mean bootstrap doctor?" in capsys.readouterr().err
    assert commands.main(["sumary"]) == 2 and "did you mean bootstrap summary?" in capsys.readouterr().err
