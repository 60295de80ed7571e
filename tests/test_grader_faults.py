"""A fault in the grader while it grades one student (that student's output cannot be
written, the gradebook cannot be read or written for them) stays that student's problem:
they get a row that says why, and everyone else is graded (``autograder.parallel``); and a
submission cannot take more than the whole notebook's time limit (``autograder.execute``)."""

import nbformat
import pytest

from autograder import parallel
from autograder.execute import NOTEBOOK_TIMEOUT
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
    course = _course_with_class(tmp_path, dict.fromkeys(CLASS, ()))
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


def _course_with_class(tmp_path, extra_cells):
    """A course and, under submissions/, the reference solution for each student with
    their ``extra_cells`` after its first cells."""
    course = tmp_path / "course"
    prepare_course(course)
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    for name, cells in extra_cells.items():
        notebook = submission(HONEST, source, release)
        notebook.cells[3:3] = [nbformat.v4.new_code_cell(code) for code in cells]
        folder = tmp_path / "submissions" / name / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{ASSIGNMENT}.ipynb")
    return course


def test_cells_each_under_the_cell_limit_cannot_outlast_the_notebook_limit(tmp_path):
    # Per cell 7 s, whole notebook 20 s: five cells of 5 s each are each within the first
    # and together past the second. The honest student beside takes a few seconds.
    course = _course_with_class(
        tmp_path, {"ana": (), "lento": ["import time\ntime.sleep(5)"] * 5})
    graded = grade(tmp_path / "submissions", tmp_path / "out", course_dir=course, timeout=7,
                   notebook_timeout=20, progress=lambda line: None, workers=2)
    by_name = {o.student: o for o in graded}
    assert (by_name["ana"].status, by_name["ana"].score) == (Status.GRADED, 8.0)
    slow = by_name["lento"]
    assert slow.status == Status.TIMED_OUT and slow.score == 0, (slow.status, slow.detail)
    notebook = nbformat.read(course / "autograded" / "lento" / ASSIGNMENT /
                             f"{ASSIGNMENT}.ipynb", 4)
    not_run = [c for c in notebook.cells if c.cell_type == "code" and any(
        o.get("ename") == NOTEBOOK_TIMEOUT for o in c.get("outputs", []))]
    assert not_run and not_run[-1] is [c for c in notebook.cells if c.cell_type == "code"][-1]


def test_an_unreadable_gradebook_is_said_in_that_students_row(tmp_path):
    run = GradeRun(course_dir=tmp_path, out_dir=tmp_path / "out",
                   db_url=f"sqlite:///{tmp_path / 'missing' / 'gradebook.db'}")
    outcome = Outcome("bea", ASSIGNMENT, Status.GRADER_ERROR, "murió el trabajador")
    parallel.ungraded(outcome, run)
    assert outcome.detail.startswith("murió el trabajador; " + parallel.NOT_READ), outcome.detail
    assert (tmp_path / "out" / "feedback" / "bea" / f"{ASSIGNMENT}.html").exists()


def test_a_gradebook_outage_mid_run_costs_only_the_students_graded_during_it(tmp_path):
    """Once the first student is graded, the gradebook goes down (an exclusive lock held
    from outside, as a stuck backup or a full disk would leave it) until the run ends:
    the first keeps their grade, every other student gets a row saying why, and the run
    ends normally with grades.csv written."""
    import sqlite3

    course = _course_with_class(tmp_path, dict.fromkeys(CLASS, ()))
    holder = []

    def progress(line):
        if not holder and line.startswith("  "):  # the first student graded: take it away
            lock = sqlite3.connect(course / "gradebook.db", isolation_level=None)
            lock.execute("BEGIN EXCLUSIVE")
            holder.append(lock)

    try:
        graded = grade(tmp_path / "submissions", tmp_path / "out", course_dir=course,
                       timeout=10, progress=progress, workers=1)
    finally:
        for lock in holder:
            lock.rollback()
            lock.close()
    by_name = {o.student: o for o in graded}
    assert holder and sorted(by_name) == sorted(CLASS)
    first, *others = [o for o in graded if o.status == Status.GRADED] + [
        o for o in graded if o.status != Status.GRADED]
    assert (first.status, first.score) == (Status.GRADED, 8.0)
    failed = [o for o in others if o.status == Status.GRADER_ERROR]
    assert failed, [(o.student, o.status) for o in others]
    for outcome in failed:
        assert outcome.score == 0 and "locked" in outcome.detail, outcome.detail
    rows = (tmp_path / "out" / "grades.csv").read_text()
    assert all(name in rows for name in CLASS)
