"""Steps 3 and 4 for one collected submission, in the process that grades it: nbgrader
autograde (with the hardened, sandboxed kernel), the scores, the feedback page."""

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from autograder.execute import TIMING_KEYS
from autograder.facts import Facts, classify
from autograder.feedback import plain_page
from autograder.outcome import SHOWS_NOTEBOOK, Status, protection_text


@dataclass(frozen=True)
class GradeRun:
    """What grading any submission of one run needs to know (plain data: it travels to
    worker processes)."""

    course_dir: Path
    out_dir: Path
    db_url: str  # the gradebook, as ``course.gradebook_url`` resolved it for this run
    timeout: int | None = None  # per-cell limit in seconds; None: the configuration's
    private: tuple = field(default=())  # more folders kernels must not read
    notebook_timeout: int | None = None  # whole-notebook limit in seconds; None: the config's

    def feedback_page(self, outcome):
        return self.out_dir / "feedback" / outcome.student / f"{outcome.assignment}.html"


def _autograded_path(course_dir, student, assignment):
    return course_dir / "autograded" / student / assignment / f"{assignment}.ipynb"


def autograde_student(api, course_dir, outcome):
    """Step 3 for one submission: run nbgrader autograde and classify what happened from
    the facts the executor left in the notebook (``autograder.facts``). The seconds it
    spent by phase go into ``outcome.timings``."""
    student, assignment = outcome.student, outcome.assignment
    result = api.autograde(assignment, student, force=True, create=True)
    path = _autograded_path(course_dir, student, assignment)
    if not result["success"] or not path.exists():
        # Kernel deaths are facts in the notebook: anything that still stops nbgrader is
        # the grader's (nbgrader hands back its traceback as text, not the exception).
        log = (result.get("log") or "") + (result.get("error") or "")
        outcome.status = Status.GRADER_ERROR
        outcome.detail = log.strip().splitlines()[-1] if log.strip() else ""
        return outcome
    facts = Facts.read(nbformat.read(path, as_version=4))
    outcome.status, outcome.detail = classify(facts)
    outcome.timings = dict(facts.timings)
    outcome.hidden_tests = dict(facts.hidden_tests)
    outcome.protection = protection_text(facts.protection)
    return outcome


def read_scores(outcome, db_url):
    """Points per graded cell from the gradebook (0 where grading produced none), manual
    overrides included (``Outcome.record``), and the late penalty nbgrader recorded."""
    with Gradebook(db_url) as gradebook:
        try:
            notebook = gradebook.find_notebook(outcome.assignment, outcome.assignment)
        except MissingEntry:
            return outcome
        for cell in notebook.grade_cells:
            outcome.max_scores[cell.name] = cell.max_score
            outcome.scores[cell.name] = 0.0
        try:
            submission = gradebook.find_submission_notebook(
                outcome.assignment, outcome.assignment, outcome.student)
        except MissingEntry:
            return outcome
        for grade in submission.grades:
            outcome.record(grade)
        outcome.late_penalty = float(submission.late_submission_penalty or 0.0)
    return outcome


def feedback_student(api, course_dir, outcome, target):
    """Step 4: the feedback page into ``target``: nbgrader's, with the status and intake
    notes first (``preprocessors.StatusBanner``), or the plain one when there is no graded
    notebook to show."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if outcome.status in SHOWS_NOTEBOOK:
        api.generate_feedback(outcome.assignment, outcome.student, force=True)
        produced = (course_dir / "feedback" / outcome.student / outcome.assignment
                    / f"{outcome.assignment}.html")
        if produced.exists():
            shutil.copyfile(produced, target)
            return target
    return plain_feedback(outcome, target)


def plain_feedback(outcome, target):
    """A short Spanish page when there is no graded notebook to show."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(plain_page(outcome))
    return target


def grade_one(api, course_dir, outcome, feedback_page, db_url):
    """Steps 3 and 4 for one collected submission: autograde, scores, feedback.
    ``db_url``: the gradebook ``api`` writes to."""
    started = time.perf_counter()
    outcome.timings = dict.fromkeys(TIMING_KEYS, 0.0)
    if outcome.status != Status.UNREADABLE:
        autograde_student(api, course_dir, outcome)
    executed = outcome.timings
    read_scores(outcome, db_url)
    graded = time.perf_counter()
    feedback_student(api, course_dir, outcome, feedback_page)
    outcome.timings = {**executed, "nbgrader + database": graded - started - sum(
        executed.values()), "feedback": time.perf_counter() - graded}
    return outcome
