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


BARE_CLI_RE = re.compile(r"(?<![\w/.])(python -m autograder [a-z]|nbgrader [a-z_]+|jupyter lab)")
VENV_RE = re.compile(r"^VENV \?= (\S+)$", re.MULTILINE)


def test_the_readme_says_to_activate_the_environment_before_its_first_bare_command():
    """``python -m autograder …`` works as written only in the course's environment: the
    README says how to activate it before it first shows such a command."""
    venv = VENV_RE.search(MAKEFILE).group(1)
    activate = f". {venv}/bin/activate"
    commands = shown_commands()
    assert activate in commands
    first_bare = BARE_CLI_RE.search(README)
    assert README.index(activate) < first_bare.start(), first_bare.group(0)
    # the alternative it offers, without activating, names the same interpreter
    assert f"{venv}/bin/python -m autograder grade" in commands


def test_make_lab_runs_the_lab_command_that_prints_its_url_and_stops_cleanly(capsys):
    recipe = re.search(r"^lab:.*\n((?:\t.*\n)+)", MAKEFILE, re.MULTILINE).group(1)
    assert "-m autograder lab" in recipe and "build --course-only" in recipe
    assert "lab" in subcommands(capsys)  # tests/test_lab.py runs it: URL, token, Ctrl+C


def test_the_readme_explains_the_two_repositories_and_the_licence():
    assert (ROOT / "LICENSE").is_file()
    section = README.split("## Two repositories", 1)[1].split("\n## ", 1)[0]
    for words in ("private", "public", "python -m autograder publish", "solutions/",
                  "hidden.py", "variants.py", "course_secret.txt", "gradebook", "REPOSITORY",
                  "--repository", "LICENSE"):
        assert words in section, words


def test_the_student_section_says_how_to_submit_from_colab_and_from_jupyterlab():
    section = README.split("## Para estudiantes", 1)[1]
    for words in ("Desde Colab", "Archivo → Descargar → Descargar .ipynb", "Desde JupyterLab",
                  "File → Download", "Nbgrader → Assignment List", "Submit"):
        assert words in section, words


# Files and folders of this repository the README names in code spans (placeholders such as
# chNN or NN_slug and globs aside); the Layout table names the package's own by their path
# inside autograder/ after the first.
NAMED_PATH_RE = re.compile(
    r"`((?:\.ci|ci|docs|tests|autograder|solutions|notebooks|templates)/[^`\s*<>]*)`")
# Targets of the README's own links and images: [text](path), ![alt](path).
LOCAL_LINK_RE = re.compile(r"!?\[[^\]]*\]\((?![a-z]+:|#)([^)\s#]+)")


def test_every_file_the_readme_names_exists():
    named = {path for path in NAMED_PATH_RE.findall(README) if "NN" not in path}
    assert "tests/test_term_end_to_end.py" in named  # the pattern reads the README
    missing = [path for path in sorted(named)
               if not (ROOT / path).exists() and not (ROOT / "autograder" / path).exists()]
    assert missing == []


def test_every_local_link_and_image_of_the_readme_exists():
    linked = set(LOCAL_LINK_RE.findall(README))
    assert {"docs/report.png", "notebooks/01_grafo_dinamico.ipynb"} <= linked  # it reads
    assert [path for path in sorted(linked) if not (ROOT / path).exists()] == []
