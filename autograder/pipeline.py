"""Grade a class with nbgrader, in process: build, collect, autograde, feedback, export.

The steps run in this order, each in a module of its own:
1. ``prepare_course`` (here): nbgrader source + release notebooks and the gradebook entries.
2. ``autograder.collect``: copy submissions into ``submitted/`` (the originals are never
   touched), repaired where they can be, with the repair notes in their metadata.
3. ``autograder.grading.autograde_student``: nbgrader autograde, one submission at a
   time; what happened (a dead kernel, tampering, a time-out) is classified from the facts
   the executor records in the notebook, and grading goes on.
4. ``autograder.grading.feedback_student``: feedback HTML (hidden tests stripped, status
   first), or a plain Spanish page when there is no graded notebook to show.
5. ``autograder.export``: grades CSV with one column per exercise, and the summary table;
   beside it the diagnoses (``autograder.report.results``) and the LMS imports
   (``autograder.lms_export``).

Steps 3 and 4 run in an executor (default: ``autograder.parallel.LocalPool``).
"""

import hashlib
import secrets
import warnings
from pathlib import Path

from autograder.build import generate, install_config, write_source
from autograder.collect import collect
from autograder.course import COURSE_DIR, chapters, gradebook_url, sqlite_gradebook
from autograder.export import export
from autograder.grading import GradeRun
from autograder.hidden.seeds import SECRET_FILE
from autograder.lms_export import write_lms_exports
from autograder.outcome import Status
from autograder.parallel import LocalPool
from autograder.report.results import diagnoses_path, write_diagnoses
from autograder.sandbox import protections, require_isolation


def prepare_course(course_dir=COURSE_DIR, selected=None, db_url=None, local=False):
    """Step 1: config, source and release notebooks, gradebook; a persistent course secret.

    ``db_url``: the gradebook (default: ``gradebook_url``), also named in the course's
    configuration for the nbgrader CLI and the formgrader. ``local``: enter the assignments
    in the course's own sqlite file instead (a shard's machine: the shared gradebook is set
    up once beforehand, not by machines racing to create the same rows)."""
    db_url = db_url or gradebook_url(course_dir)
    install_config(course_dir, db_url)
    secret = course_dir / SECRET_FILE
    if not secret.exists():
        secret.write_text(secrets.token_hex(16) + "\n")
    for chapter in selected or chapters():
        write_source(chapter, course_dir)
        generate(chapter, course_dir, db_url=sqlite_gradebook(course_dir) if local else db_url)


def in_shard(student, shard):
    """Whether ``student`` belongs to ``shard`` = (k, n), 1 ≤ k ≤ n: a stable split of a
    class across machines by student id (the same on every machine, every run)."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(student.encode()).hexdigest(), 16) % n == k - 1


def grade(submissions_dir, out_dir, course_dir=COURSE_DIR, timeout=None, progress=print,
          workers=1, db_url=None, shard=None, bar=False, students=None, executor=None,
          notebook_timeout=None):
    """Grade every submission under ``submissions_dir``; write grades.csv (with
    diagnoses.json, canvas.csv and moodle.csv beside it) and feedback/.

    ``workers``: how many processes grade side by side (the results do not depend on it);
    ``executor``: what grades the collected submissions instead, any object with
    ``grade(run, outcomes, done)`` (default ``LocalPool(workers)``); ``db_url`` names a
    shared gradebook (PostgreSQL); ``shard`` = (k, n) grades only this machine's share of
    the students; ``students`` only these students (a re-grade: grades.csv then lists
    just them). ``bar`` shows a progress bar. ``timeout`` and ``notebook_timeout``: the
    per-cell and whole-notebook limits in seconds (default: the configuration's).
    """
    executor = executor or LocalPool(workers)
    if not getattr(executor, "isolates_itself", False):
        require_isolation()  # before any worker starts
    if hasattr(executor, "start"):
        executor.start()  # its workers' imports go on while this prepares and collects
    course_dir, out_dir = Path(course_dir).resolve(), Path(out_dir).resolve()
    run = GradeRun(course_dir, out_dir, gradebook_url(course_dir, db_url), timeout,
                   private=(Path(submissions_dir).resolve(), out_dir),
                   notebook_timeout=notebook_timeout)
    # nbgrader 0.9.6 trips SQLAlchemy's autoflush warnings on every submission: noise only.
    warnings.filterwarnings("ignore", message=".*not in session.*")
    prepare_course(course_dir, db_url=run.db_url, local=shard is not None)
    if progress is not None:
        progress("Protecciones: " + "; ".join(protections()))
    pending = [o for o in collect(submissions_dir, course_dir, students)
               if in_shard(o.student, shard)]
    report = Progress(len(pending), progress, bar)
    # Even one worker is a process of its own: nothing a submission does to the process
    # that grades it (or that process's own death) reaches this one.
    outcomes = executor.grade(run, pending, report.done)
    report.close()
    write_results(outcomes, out_dir, update=bool(students))
    return outcomes


def write_results(outcomes, out_dir, update=False):
    """grades.csv, with diagnoses.json, canvas.csv and moodle.csv beside it; ``update``
    keeps the rows of the submissions not in ``outcomes``."""
    grades_csv = export(outcomes, Path(out_dir) / "grades.csv", update=update)
    write_diagnoses(outcomes, diagnoses_path(grades_csv), update=update)
    write_lms_exports(grades_csv)
    return grades_csv


class Progress:
    """One line per graded submission, or a bar: done / total, ETA, failures so far."""

    def __init__(self, total, progress, bar):
        self.progress, self.failures = progress, 0
        self.bar = None
        if bar:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit="entrega", desc="Calificando", dynamic_ncols=True)

    def done(self, outcome):
        if outcome.status != Status.GRADED:
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
