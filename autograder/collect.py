"""Step 2 of grading a class: submissions into the course's submitted/ folder.

Every submission is read the way ``autograder.intake`` reads it (repairing what can be
repaired); the notebook nbgrader grades carries the repair notes in its metadata
(``autograder.facts``), so they reach the feedback page. The originals are never touched.
"""

import contextlib
import shutil
import tempfile
from pathlib import Path

import nbformat

from autograder.course import COURSE_DIR
from autograder.facts import Facts
from autograder.intake import read_submission
from autograder.lms import SIDECAR, TIMESTAMP, marker_timestamp
from autograder.outcome import Outcome, Status

# nbgrader's exchange writes it beside each submission; `nbgrader release_feedback` reads
# it from feedback/ to name the page the student fetches, and stops when it is missing.
SUBMISSION_SECRET = "submission_secret.txt"


@contextlib.contextmanager
def _readable(submissions_dir, submitted):
    """(folder to read, in place): ``submissions_dir``, or a temporary copy of it when it
    is the course's own submitted/ folder (where ``nbgrader collect`` and ``zip_collect``
    put submissions), since collecting rewrites that folder."""
    if Path(submissions_dir).resolve() != submitted.resolve():
        yield Path(submissions_dir), False
        return
    with tempfile.TemporaryDirectory(prefix="autograder-collect-") as tmp:
        yield Path(shutil.copytree(submitted, Path(tmp) / "submitted")), True


def collect(submissions_dir, course_dir=COURSE_DIR, students=None):
    """Read every <submissions>/<student>/<assignment>/ into submitted/, with nbgrader's
    timestamp.txt when there is one (late penalties use it), its submission_secret.txt
    (``nbgrader release_feedback`` needs it) and what LMS intake recorded
    (``autograder.lms``: a bare late marker's timestamp is set again here). One Outcome per
    submission: status unreadable when there is nothing to grade. ``students``: only these
    (a re-grade); other students' folders in submitted/ are left as they are."""
    submitted = course_dir / "submitted"
    outcomes = []
    with _readable(submissions_dir, submitted) as (source, in_place):
        for student_dir in sorted(p for p in source.iterdir() if p.is_dir()):
            if students and student_dir.name not in students:
                continue
            for assignment_dir in sorted(p for p in student_dir.iterdir() if p.is_dir()):
                outcomes.append(_collect_one(assignment_dir, course_dir, submitted, in_place))
    return outcomes


def _collect_one(assignment_dir, course_dir, submitted, in_place):
    """One submission into submitted/. In place (submitted/ is also the source), a readable
    submission is replaced by the repaired notebook nbgrader grades and an unreadable one
    is left untouched; otherwise any previous copy is replaced, or removed."""
    outcome = Outcome(assignment_dir.parent.name, assignment_dir.name)
    target = submitted / outcome.student / outcome.assignment
    release = course_dir / "release" / outcome.assignment / f"{outcome.assignment}.ipynb"
    intake = None
    if not release.exists():
        outcome.status, outcome.detail = Status.UNREADABLE, "tarea desconocida"
    else:
        intake = read_submission(assignment_dir, outcome.assignment,
                                 nbformat.read(release, as_version=4))
        outcome.notes = intake.notes
        if intake.nb is None:
            outcome.status, outcome.detail = Status.UNREADABLE, intake.problem
    if outcome.status == Status.UNREADABLE and in_place:
        return outcome
    if target.exists():  # a previous run's copy must not be graded in place of this one
        shutil.rmtree(target)
    if outcome.status == Status.UNREADABLE:
        return outcome
    target.mkdir(parents=True)
    # The submission time; what LMS intake read; the exchange's secret.
    for kept in (TIMESTAMP, SIDECAR, SUBMISSION_SECRET):
        if (assignment_dir / kept).is_file():
            shutil.copy2(assignment_dir / kept, target / kept)
    # A bare LMS late marker: its timestamp from today's term.toml (due date, policy).
    late = marker_timestamp(target, outcome.assignment)
    if late:
        outcome.notes.append(late)
    # Whatever the submission held under the facts' key is replaced: only ours are read.
    Facts(notes=list(outcome.notes)).write(intake.nb)
    nbformat.write(intake.nb, target / f"{outcome.assignment}.ipynb")
    return outcome
