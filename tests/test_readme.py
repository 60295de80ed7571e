"""The README agrees with the course and with the tools: its notebook table, and every
command it shows (fenced shell blocks, the tables of targets, inline code) exists."""

import re

import pytest

from autograder import __main__ as cli
from autograder.course import ROOT, chapters

README = (ROOT / "README.md").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()

FENCED_RE = re.compile(r"^```[ \t]*(\w*)[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE_RE = re.compile(r"`([^`\n]+)`")
MAKE_RE = re.compile(r"(?:^|[\s;&|(])make\s+([A-Za-z][\w.-]*)")
CLI_RE = re.compile(r"python -m autograder\s+([a-z][\w-]*)((?:[^;&|]*))")
OPTION_RE = re.compile(r"(?<![\w-])--[a-z][\w-]*")
TARGET_RE = re.compile(r"^([A-Za-z][\w.-]*)\s*:(?!=)", re.MULTILINE)


def shown_commands(text=README):
    """The command lines the README shows: each line of its shell blocks, and each inline
    code span of the rest (tables and prose)."""
    lines = []
    for language, body in FENCED_RE.findall(text):
        if language in ("", "bash", "sh", "shell", "console"):
            lines += [line.split(" #")[0] for line in body.splitlines()]
    lines += INLINE_RE.findall(FENCED_RE.sub("", text))
    return [line.strip() for line in lines if line.strip()]


def make_targets(text=MAKEFILE):
    return set(TARGET_RE.findall(text))


def help_text(*argv, capsys):
    with pytest.raises(SystemExit):
        cli.main([*argv, "--help"])
    return capsys.readouterr().out


def subcommands(capsys):
    usage = help_text(capsys=capsys)
    return set(re.search(r"\{([a-z,-]+)\}", usage).group(1).split(","))


def test_every_notebook_has_its_colab_badge_in_the_readme():
    for chapter in chapters():
        assert chapter.colab_url in README, chapter.name
        assert f"notebooks/{chapter.name}.ipynb" in README


def test_the_parsers_find_the_commands_of_a_sample():
    sample = ("Run:\n\n```bash\nmake grade   # main job\nCH=1 make check CH=03\n```\n\n"
              "| `make lab` | x |\n\n`python -m autograder grade --submissions DIR [--timeout S]`"
              " and `nbgrader zip_collect`; `python -m autograder.sandbox` is not one.")
    commands = shown_commands(sample)
    assert [t for c in commands for t in MAKE_RE.findall(c)] == ["grade", "check", "lab"]
    found = [(m.group(1), OPTION_RE.findall(m.group(2))) for c in commands
             for m in CLI_RE.finditer(c)]
    assert found == [("grade", ["--submissions", "--timeout"])]
    assert make_targets("a: b\n\t@x\nB := 1\n.PHONY: a\n$(S): y\nc-d:\n") == {"a", "c-d"}


def test_every_make_target_the_readme_shows_is_in_the_makefile():
    shown = {target for line in shown_commands() for target in MAKE_RE.findall(line)}
    assert {"grade", "test", "check"} <= shown  # the parser reads what the README shows
    assert shown <= make_targets(), sorted(shown - make_targets())


def test_every_command_line_the_readme_shows_is_a_subcommand_with_those_options(capsys):
    known = subcommands(capsys)
    shown = [(m.group(1), OPTION_RE.findall(m.group(2)), line) for line in shown_commands()
             for m in CLI_RE.finditer(line)]
    assert {"grade", "build", "export"} <= {command for command, _, _ in shown}
    for command, options, line in shown:
        assert command in known, f"{line!r}: no subcommand {command!r} (known: {known})"
        accepted = set(OPTION_RE.findall(help_text(command, capsys=capsys)))
        assert set(options) <= accepted, f"{line!r}: unknown {set(options) - accepted}"


def test_the_command_line_docstring_lists_every_subcommand(capsys):
    for command in subcommands(capsys):
        assert f"``{command}``" in cli.__doc__, command
