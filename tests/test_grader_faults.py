"""A fault in the grader while it grades one student (that student's output cannot be
written, the gradebook cannot be read or written for them) stays that student's problem:
they get a row that says why, and everyone else is graded (``autograder.parallel``)."""

import nbformat
import pytest

from autograder import parallel
from autograder.grading import GradeRun
from autograder.outcome import Outcome, Status
from autograder.pipeline import grade, prepare_course
from autograder.sample_class import SAMPLE_CLASS, submission

pytestmark = pytest.mark.slow
ASSIGNMENT = "01_grafo_dinamico"
HONEST = SAMPLE_CLASS[ASSIGNMENT][0]  # the reference solution
CLASS = ("ana", "bea", "carla")


# Where bea's output cannot go: her graded notebook's folder in the course (the worker fails
# handing it back) or her feedback folder (the worker fails, and so does the plain page
# written here instead), as a full disk or a broken mount would do to one student's output.
OBSTACLES = {"course": ("course", "autograded", "bea"), "feedback": ("out", "feedback", "bea")}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("obstacle", sorted(OBSTACLES))
def test_a_student_whose_output_cannot_be_written_loses_nothing_of_anyone_else(
        tmp_path, workers, obstacle):
    course = tmp_path / "course"
    prepare_course(course)
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    for name in CLASS:
        folder = tmp_path / "submissions" / name / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(submission(HONEST, source, release), folder / f"{ASSIGNMENT}.ipynb")
    in_the_way = tmp_path.joinpath(*OBSTACLES[obstacle])
    in_the_way.parent.mkdir(parents=True, exist_ok=True)
    in_the_way.write_text("en medio")
    graded = grade(tmp_path / "submissions", tmp_path / "out", course_dir=course, timeout=10,
                   progress=lambda line: None, workers=workers)
    by_name = {o.student: o for o in graded}
    assert sorted(by_name) == sorted(CLASS)
    for name in ("ana", "carla"):
        assert (by_name[name].status, by_name[name].score) == (Status.GRADED, 8.0)
    bea = by_name["bea"]
    assert bea.status == Status.GRADER_ERROR and bea.score == 0, bea.detail
    assert "FileExistsError" in bea.detail
    assert (parallel.NO_PAGE in bea.detail) == (obstacle == "feedback")
    rows = (tmp_path / "out" / "grades.csv").read_text()
    assert all(name in rows for name in CLASS)


def test_an_unreadable_gradebook_is_said_in_that_students_row(tmp_path):
    run = GradeRun(course_dir=tmp_path, out_dir=tmp_path / "out",
                   db_url=f"sqlite:///{tmp_path / 'missing' / 'gradebook.db'}")
    outcome = Outcome("bea", ASSIGNMENT, Status.GRADER_ERROR, "murió el trabajador")
    parallel.ungraded(outcome, run)
    assert outcome.detail.startswith("murió el trabajador; " + parallel.NOT_READ), outcome.detail
    assert (tmp_path / "out" / "feedback" / "bea" / f"{ASSIGNMENT}.html").exists()
