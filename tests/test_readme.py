"""The README and the guides in ``docs/`` agree with the course and with the tools: the
notebook table, and every command they show (fenced shell blocks, the tables of targets,
inline code), file they name and link they hold exists. The README stays a front page."""

import re

import pytest

from autograder import __main__ as cli
from autograder.course import ROOT, chapters

README = (ROOT / "README.md").read_text()
# Every page of the documentation by its path from the root: the README and docs/*.md.
PAGES = {"README.md": README} | {f"docs/{page.name}": page.read_text()
                                 for page in sorted((ROOT / "docs").glob("*.md"))}
DOCS = "\n".join(PAGES.values())
README_MAX_LINES = 200  # a front page: what it is, the two commands, where to go next
MAKEFILE = (ROOT / "Makefile").read_text()

FENCED_RE = re.compile(r"^```[ \t]*(\w*)[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE_RE = re.compile(r"`([^`\n]+)`")
MAKE_RE = re.compile(r"(?:^|[\s;&|(])make\s+([A-Za-z][\w.-]*)")
CLI_RE = re.compile(r"python -m autograder\s+([a-z][\w-]*)((?:[^;&|]*))")
OPTION_RE = re.compile(r"(?<![\w-])--[a-z][\w-]*")
TARGET_RE = re.compile(r"^([A-Za-z][\w.-]*)\s*:(?!=)", re.MULTILINE)


def shown_commands(text=DOCS):
    """The command lines the documentation shows: each line of its shell blocks, and each inline
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


def test_the_readme_is_a_front_page_that_links_every_guide():
    assert len(README.splitlines()) <= README_MAX_LINES
    assert len(PAGES) >= 7  # the guides moved out of it are read here
    for page in PAGES:
        if page != "README.md":
            assert f"]({page})" in README, f"the README does not link {page}"


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
    commands = shown_commands(README)
    assert activate in commands
    first_bare = BARE_CLI_RE.search(README)
    assert first_bare is None or README.index(activate) < first_bare.start(), first_bare
    # the alternative it offers, without activating, names the same interpreter
    assert f"{venv}/bin/python -m autograder grade" in commands
    # an instructor's guide that shows bare commands sends the reader to the README's
    # environment in its opening lines (the students' guide installs its own: pip)
    for page, text in PAGES.items():
        if page not in ("README.md", "docs/students.md") and BARE_CLI_RE.search(text):
            opening = text.split("\n## ", 1)[0]
            assert "](../README.md#quick-start)" in opening, page


def test_make_lab_runs_the_lab_command_that_prints_its_url_and_stops_cleanly(capsys):
    recipe = re.search(r"^lab:.*\n((?:\t.*\n)+)", MAKEFILE, re.MULTILINE).group(1)
    assert "-m autograder lab" in recipe and "build --course-only" in recipe
    assert "lab" in subcommands(capsys)  # tests/test_lab.py runs it: URL, token, Ctrl+C


def test_the_readme_explains_the_two_repositories_and_the_licence():
    assert (ROOT / "LICENSE").is_file()
    section = PAGES["docs/instructor.md"].split("## Two repositories", 1)[1].split("\n## ", 1)[0]
    for words in ("private", "public", "python -m autograder publish", "solutions/",
                  "hidden.py", "variants.py", "course_secret.txt", "gradebook", "REPOSITORY",
                  "--repository", "LICENSE"):
        assert words in section, words


def test_the_student_section_says_how_to_submit_from_colab_and_from_jupyterlab():
    assert "](docs/students.md)" in README.split("## Para estudiantes", 1)[1]
    section = PAGES["docs/students.md"]
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


def test_every_file_the_documentation_names_exists():
    named = {path for path in NAMED_PATH_RE.findall(DOCS) if "NN" not in path}
    assert "tests/test_term_end_to_end.py" in named  # the pattern reads the README
    missing = [path for path in sorted(named)
               if not (ROOT / path).exists() and not (ROOT / "autograder" / path).exists()]
    assert missing == []


def test_every_local_link_and_image_of_the_documentation_exists():
    """Links resolve from the page that holds them (docs/ pages link ../README.md)."""
    linked = {(ROOT / page).parent / target for page, text in PAGES.items()
              for target in LOCAL_LINK_RE.findall(text)}
    assert ROOT / "docs" / "report.png" in linked  # it reads
    assert ROOT / "docs" / "../README.md" in linked
    assert [str(path) for path in sorted(linked) if not path.resolve().exists()] == []


ANCHOR_LINK_RE = re.compile(r"\]\(([^)\s#]*)#([^)\s]+)\)")
HEADING_RE = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)


def heading_anchor(heading):
    """GitHub's anchor of a heading: lower case, code marks and punctuation dropped,
    spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_every_anchor_a_page_links_is_a_heading_of_its_target():
    assert heading_anchor("The sample class: `make grade`") == "the-sample-class-make-grade"
    links = [(page, target, anchor) for page, text in PAGES.items()
             for target, anchor in ANCHOR_LINK_RE.findall(text)]
    assert ("docs/students.md", "../README.md", "notebooks") in links  # it reads the pages
    broken = []
    for page, target, anchor in links:
        path = ((ROOT / page).parent / target).resolve() if target else ROOT / page
        if path.suffix == ".md":
            anchors = {heading_anchor(h) for h in HEADING_RE.findall(path.read_text())}
            if anchor not in anchors:
                broken.append(f"{page}: {target}#{anchor}")
    assert broken == []
