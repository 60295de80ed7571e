"""Grade a class with nbgrader, in process: build, collect, autograde, feedback, export.

The steps run in this order; each is a small function tested alone:
1. ``prepare_course``: nbgrader source + release notebooks and the gradebook entries.
2. ``collect``: copy submissions into ``submitted/`` (the originals are never touched).
3. ``autograde_student``: nbgrader autograde, one student at a time; a failure (a dead
   kernel, a broken notebook) is recorded for that student and grading goes on.
4. ``feedback_student``: feedback HTML (hidden tests stripped by HideHiddenTests);
   needs step 3's autograded notebook, or falls back to a plain Spanish note.
5. ``export``: grades CSV with one column per exercise, and the summary table.
"""

import contextlib
import csv
import hashlib
import os
import secrets
import shutil
import tempfile
import warnings
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook

from autograder.build import generate, write_source
from autograder.course import (
    COURSE_DIR,
    DB_URL_ENV,
    chapters,
    gradebook_url,
    install_config,
)
from autograder.hidden.seeds import SECRET_FILE
from autograder.intake import read_submission
from autograder.kernel import protections
from autograder.outcome import Outcome
from autograder.parallel import grade_in_workers
from autograder.sandbox import require_isolation
from autograder.tables import format_table


def prepare_course(course_dir=COURSE_DIR, selected=None, db_url=None):
    """Step 1: config, source and release notebooks, gradebook; a persistent course secret."""
    install_config(course_dir)
    secret = course_dir / SECRET_FILE
    if not secret.exists():
        secret.write_text(secrets.token_hex(16) + "\n")
    for chapter in selected or chapters():
        write_source(chapter, course_dir)
        generate(chapter, course_dir, db_url=db_url)


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
    """Step 2: read every <submissions>/<student>/<assignment>/ (repairing what can be
    repaired, see ``autograder.intake``) into submitted/, with nbgrader's timestamp.txt
    when there is one (late penalties use it). One Outcome per submission: status
    "unreadable" when there is nothing to grade. ``students``: only these (a re-grade);
    other students' folders in submitted/ are left as they are."""
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
        outcome.status, outcome.detail = "unreadable", "tarea desconocida"
    else:
        intake = read_submission(assignment_dir, outcome.assignment,
                                 nbformat.read(release, as_version=4))
        outcome.notes = intake.notes
        if intake.nb is None:
            outcome.status, outcome.detail = "unreadable", intake.problem
    if outcome.status == "unreadable" and in_place:
        return outcome
    if target.exists():  # a previous run's copy must not be graded in place of this one
        shutil.rmtree(target)
    if outcome.status == "unreadable":
        return outcome
    target.mkdir(parents=True)
    nbformat.write(intake.nb, target / f"{outcome.assignment}.ipynb")
    stamp = assignment_dir / "timestamp.txt"
    if stamp.is_file():
        shutil.copy2(stamp, target / "timestamp.txt")
    return outcome


EXPORT_COLUMNS = ("student", "assignment", "status", "detail", "notes", "score", "max_score")


def export(outcomes, csv_path, update=False):
    """Step 5: one row per submission, one column per graded cell. ``update``: keep the
    rows of an existing file for the submissions not in ``outcomes`` (a re-grade)."""
    rows = {(o.student, o.assignment): {
        "student": o.student, "assignment": o.assignment, "status": o.status,
        "detail": o.detail, "notes": "; ".join(o.notes), **o.scores, "score": o.score,
        "max_score": o.max_score} for o in outcomes}
    cells = {cell for o in outcomes for cell in o.max_scores}
    if update and csv_path.exists():
        with csv_path.open(newline="") as handle:
            for row in csv.DictReader(handle):
                rows.setdefault((row["student"], row["assignment"]), row)
                cells.update(k for k in row if k not in EXPORT_COLUMNS)
    columns = [*EXPORT_COLUMNS[:5], *sorted(cells), *EXPORT_COLUMNS[5:]]
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with csv_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns, restval="")
        writer.writeheader()
        writer.writerows(rows[key] for key in sorted(rows))
    return csv_path


def gradebook_outcomes(db_url, course_dir=COURSE_DIR):
    """Every submission recorded in a gradebook (e.g. the PostgreSQL one several machines
    wrote to), as Outcomes with their scores: what ``export`` writes for the whole class.
    Statuses and intake notes live in each machine's own grades.csv, not in the gradebook."""
    outcomes = []
    with Gradebook(gradebook_url(course_dir, db_url)) as gradebook:
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                outcome = Outcome(submission.student.id, assignment.name, status="recorded")
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        outcome.max_scores[grade.name] = grade.max_score
                        outcome.scores[grade.name] = float(grade.score or 0.0)
                outcomes.append(outcome)
    return sorted(outcomes, key=lambda o: (o.student, o.assignment))


def summary_table(outcomes):
    """A plain-text table: student, assignment, points, status."""
    rows = [("student", "assignment", "points", "status")]
    for o in outcomes:
        status = o.status + (f" ({o.detail})" if o.detail and o.status not in (
            "kernel died", "grader error") else "")
        if o.notes:
            status += "; " + "; ".join(o.notes)
        rows.append((o.student, o.assignment, f"{o.score:g} / {o.max_score:g}", status))
    return "\n".join(format_table(rows))


def in_shard(student, shard):
    """Whether ``student`` belongs to ``shard`` = (k, n), 1 ≤ k ≤ n: a stable split of a
    class across machines by student id (the same on every machine, every run)."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(student.encode()).hexdigest(), 16) % n == k - 1


def grade(submissions_dir, out_dir, course_dir=COURSE_DIR, timeout=None, progress=print,
          workers=1, db_url=None, shard=None, bar=False, students=None):
    """Grade every submission under ``submissions_dir``; write grades.csv and feedback/.

    ``workers``: how many processes grade side by side (``autograder.parallel``; the
    results do not depend on it); ``db_url`` names a shared gradebook (PostgreSQL);
    ``shard`` = (k, n) grades only this machine's share of the students; ``students``
    only these students (a re-grade: grades.csv then lists just them). ``bar`` shows a progress bar.
    """
    out_dir = Path(out_dir)
    db_url = db_url or os.environ.get(DB_URL_ENV) or None  # None: the course's sqlite file
    # nbgrader 0.9.6 trips SQLAlchemy's autoflush warnings on every submission: noise only.
    warnings.filterwarnings("ignore", message=".*not in session.*")
    # A shard's machine builds its notebooks against a local gradebook: the shared one is
    # set up once beforehand (README), not by machines racing to create the same rows.
    local = f"sqlite:///{Path(course_dir) / 'gradebook.db'}"
    require_isolation()
    prepare_course(course_dir, db_url=local if shard else db_url)
    if progress is not None:
        progress("Protecciones: " + "; ".join(protections()))
    pending = [o for o in collect(submissions_dir, course_dir, students)
               if in_shard(o.student, shard)]
    report = Progress(len(pending), progress, bar)
    # Even one worker is a process of its own: nothing a submission does to the process
    # that grades it (or that process's own death) reaches this one.
    outcomes = grade_in_workers(pending, course_dir, out_dir, timeout, db_url, workers,
                                report.done, private=(Path(submissions_dir).resolve(),
                                                      out_dir.resolve()))
    report.close()
    export(outcomes, out_dir / "grades.csv", update=bool(students))
    return outcomes


class Progress:
    """One line per graded submission, or a bar: done / total, ETA, failures so far."""

    def __init__(self, total, progress, bar):
        self.progress, self.failures = progress, 0
        self.bar = None
        if bar:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit="entrega", desc="Calificando", dynamic_ncols=True)

    def done(self, outcome):
        if outcome.status != "graded":
            self.failures += 1
        if self.bar is not None:
            self.bar.set_postfix(fallos=self.failures, refresh=False)
            self.bar.update(1)
        elif self.progress is not None:
            self.progress(f"  {outcome.student}/{outcome.assignment}: "
                          f"{outcome.score:g}/{outcome.max_score:g} ({outcome.status})")
        return outcome

    def close(self):
        if self.bar is not None:
            self.bar.close()
