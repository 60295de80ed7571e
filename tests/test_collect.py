"""Collecting into the course's submitted/ keeps the files nbgrader's own steps read beside
each notebook: the exchange's timestamp.txt (late penalties) and submission_secret.txt
(``nbgrader release_feedback`` names the returned page by it), whether the submissions come
from another folder or are graded in place, as step 3 of docs/instructor.md allows."""

import nbformat
import pytest

from autograder.collect import SUBMISSION_SECRET, collect
from autograder.lms import TIMESTAMP
from autograder.outcome import Status

EXCHANGE_FILES = {TIMESTAMP: "2026-12-03 11:30:00.000000 UTC", SUBMISSION_SECRET: "ab12" * 32}


@pytest.mark.parametrize("in_place", [False, True])
def test_collect_keeps_what_nbgrader_collect_wrote_beside_the_notebook(tmp_path, in_place):
    course = tmp_path / "course"
    release = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Tarea")])
    (course / "release" / "tarea").mkdir(parents=True)
    nbformat.write(release, course / "release" / "tarea" / "tarea.ipynb")
    submissions = course / "submitted" if in_place else tmp_path / "entregas"
    folder = submissions / "ana" / "tarea"
    folder.mkdir(parents=True)
    nbformat.write(release, folder / "tarea.ipynb")
    for name, text in EXCHANGE_FILES.items():
        (folder / name).write_text(text)
    [outcome] = collect(submissions, course)
    assert outcome.status == Status.GRADED
    collected = course / "submitted" / "ana" / "tarea"
    assert {name: (collected / name).read_text() for name in EXCHANGE_FILES} == EXCHANGE_FILES
