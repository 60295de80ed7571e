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
from autograder.safe_files import Refused, copy_regular, refusal, walk_refusal

# nbgrader's exchange writes it beside each submission; `nbgrader release_feedback` reads
# it from feedback/ to name the page the student fetches, and stops when it is missing.
SUBMISSION_SECRET = "submission_secret.txt"


def _refused_files(folder, names):
    """copytree's ``ignore``: special files and hard links are not copied (nor read);
    links are copied as links."""
    return [name for name in names
            if not (Path(folder) / name).is_symlink() and refusal(Path(folder) / name)]


@contextlib.contextmanager
def _readable(submissions_dir, submitted):
    """(folder to read, in place): ``submissions_dir``, or a temporary copy of it when it
    is the course's own submitted/ folder (where ``nbgrader collect`` and ``zip_collect``
    put submissions), since collecting rewrites that folder. Links are copied as links
    and special files left out: what to refuse is decided on the originals."""
    if Path(submissions_dir).resolve() != submitted.resolve():
        yield Path(submissions_dir), False
        return
    with tempfile.TemporaryDirectory(prefix="autograder-collect-") as tmp:
        yield Path(shutil.copytree(submitted, Path(tmp) / "submitted", symlinks=True,
                                   ignore=_refused_files)), True


def collect(submissions_dir, course_dir=COURSE_DIR, students=None):
    """Read every <submissions>/<student>/<assignment>/ into submitted/, with nbgrader's
    timestamp.txt when there is one (late penalties use it), its submission_secret.txt
    (``nbgrader release_feedback`` needs it) and what LMS intake recorded
    (``autograder.lms``: a bare late marker's timestamp is set again here). One Outcome per
    submission: status unreadable when there is nothing to grade. ``students``: only these
    (a re-grade); other students' folders in submitted/ are left as they are."""
    submitted = course_dir / "submitted"
    outcomes = []
    original = Path(submissions_dir)
    with _readable(submissions_dir, submitted) as (source, in_place):
        for student_dir in sorted(p for p in source.iterdir() if p.is_dir()):
            if students and student_dir.name not in students:
                continue
            for assignment_dir in sorted(p for p in student_dir.iterdir() if p.is_dir()):
                # a student folder that is a link (a classmate's), or one in the submission
                reason = (refusal(original / student_dir.name)
                          or walk_refusal(original / student_dir.name / assignment_dir.name))
                outcomes.append(_collect_one(assignment_dir, course_dir, submitted, in_place,
                                             reason))
    return outcomes


def _refused(outcome, reason, course_dir, in_place):
    """A submission that holds a link or a special file: nothing of it is read or graded,
    and no earlier copy of it stays in submitted/ to be graded in its place."""
    outcome.status, outcome.detail = Status.UNREADABLE, reason
    target = course_dir / "submitted" / outcome.student / outcome.assignment
    if not in_place and (target.exists() or target.is_symlink()):
        if target.is_symlink() or not target.is_dir():
            target.unlink()
        else:
            shutil.rmtree(target)
    return outcome


def _collect_one(assignment_dir, course_dir, submitted, in_place, reason=None):
    """One submission into submitted/. In place (submitted/ is also the source), a readable
    submission is replaced by the repaired notebook nbgrader grades and an unreadable one
    is left untouched; otherwise any previous copy is replaced, or removed. ``reason``: why
    the submission is refused (it holds a link or a special file), checked on the original."""
    outcome = Outcome(assignment_dir.parent.name, assignment_dir.name)
    target = submitted / outcome.student / outcome.assignment
    release = course_dir / "release" / outcome.assignment / f"{outcome.assignment}.ipynb"
    intake = None
    if reason:
        return _refused(outcome, reason, course_dir, in_place)
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
            try:
                copy_regular(assignment_dir / kept, target / kept)
            except Refused as refused:  # changed since the walk above: refused all the same
                shutil.rmtree(target)
                return _refused(outcome, str(refused), course_dir, in_place)
    # A bare LMS late marker: its timestamp from today's term.toml (due date, policy).
    late = marker_timestamp(target, outcome.assignment)
    if late:
        outcome.notes.append(late)
    # Whatever the submission held under the facts' key is replaced: only ours are read.
    Facts(notes=list(outcome.notes)).write(intake.nb)
    nbformat.write(intake.nb, target / f"{outcome.assignment}.ipynb")
    return outcome
