"""Steps 3 and 4 for one collected submission, in the process that grades it: nbgrader
autograde (with the hardened, sandboxed kernel), the scores, the feedback page."""

import html
import re
import shutil
import time

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from autograder.course import gradebook_url
from autograder.execute import KERNEL_DIED
from autograder.outcome import STATUS_TEXT, UNGRADED


def _autograded_path(course_dir, student, assignment):
    return course_dir / "autograded" / student / assignment / f"{assignment}.ipynb"


def _cells_with_error(nb, ename):
    return [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for out in cell.get("outputs", [])
            if out.output_type == "error" and out.ename == ename]


TAMPERING_RE = re.compile(r"Manipulación detectada\. Durante la calificación se detectó: (.*?)\. "
                          r"Este ejercicio")


def _tampering(nb):
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "stream":
                found += TAMPERING_RE.findall(out.text)
    return found


def autograde_student(api, course_dir, outcome):
    """Step 3 for one submission: run nbgrader autograde and classify what happened."""
    student, assignment = outcome.student, outcome.assignment
    result = api.autograde(assignment, student, force=True, create=True)
    path = _autograded_path(course_dir, student, assignment)
    if not result["success"] or not path.exists():
        log = (result.get("log") or "") + (result.get("error") or "")
        outcome.status = "kernel died" if "DeadKernelError" in log or "died" in log else (
            "grader error")
        outcome.detail = log.strip().splitlines()[-1] if log.strip() else ""
        return outcome
    nb = nbformat.read(path, as_version=4)
    tampering, crashed = _tampering(nb), _cells_with_error(nb, KERNEL_DIED)
    timed_out = _cells_with_error(nb, "CellTimeoutError")
    if tampering:
        outcome.status, outcome.detail = "tampering detected", "; ".join(sorted(set(tampering)))
    elif crashed:
        outcome.status, outcome.detail = "crashed", f"celda {crashed[0]}"
    elif timed_out:
        outcome.status, outcome.detail = "timed out", f"celda {timed_out[0]}"
    return outcome


def read_scores(course_dir, outcome, db_url=None):
    """Points per graded cell from the gradebook (0 where grading produced none)."""
    with Gradebook(gradebook_url(course_dir, db_url)) as gradebook:
        try:
            notebook = gradebook.find_notebook(outcome.assignment, outcome.assignment)
        except MissingEntry:
            return outcome
        for cell in notebook.grade_cells:
            outcome.max_scores[cell.name] = cell.max_score
            outcome.scores[cell.name] = 0.0
        if outcome.status in UNGRADED:
            return outcome
        try:
            submission = gradebook.find_submission_notebook(
                outcome.assignment, outcome.assignment, outcome.student)
        except MissingEntry:
            return outcome
        for grade in submission.grades:
            outcome.scores[grade.name] = float(grade.score or 0.0)
    return outcome


def feedback_student(api, course_dir, outcome, out_dir):
    """Step 4: feedback HTML into out_dir/feedback/<student>/<assignment>.html."""
    target = out_dir / "feedback" / outcome.student / f"{outcome.assignment}.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    if outcome.status in ("graded", "timed out", "crashed", "tampering detected"):
        api.generate_feedback(outcome.assignment, outcome.student, force=True)
        produced = (course_dir / "feedback" / outcome.student / outcome.assignment
                    / f"{outcome.assignment}.html")
        if produced.exists():
            shutil.copyfile(produced, target)
            _add_notes_to_feedback(target, outcome)
            return target
    return plain_feedback(outcome, target)


def plain_feedback(outcome, target):
    """A short Spanish page when there is no graded notebook to show."""
    target.parent.mkdir(parents=True, exist_ok=True)
    reason = STATUS_TEXT.get(outcome.status, outcome.status)
    if outcome.detail:
        reason += f": {outcome.detail}"
    target.write_text(
        "<!DOCTYPE html><html lang='es'><meta charset='utf-8'>"
        f"<title>{html.escape(outcome.assignment)}</title><body>"
        f"<h1>{html.escape(outcome.assignment)} · {html.escape(outcome.student)}</h1>"
        f"<p>{html.escape(reason)}.</p>{_notes_html(outcome)}"
        f"<p>Puntos: {outcome.score:g} / {outcome.max_score:g}</p></body></html>\n")
    return target


def _notes_html(outcome):
    if not outcome.notes:
        return ""
    items = "".join(f"<li>{html.escape(n)}</li>" for n in outcome.notes)
    return f"<p>Al recibir tu entrega:</p><ul>{items}</ul>"


def _add_notes_to_feedback(page, outcome):
    """nbgrader's feedback page, with the intake notes and the status at the top."""
    if not outcome.notes and outcome.status == "graded":
        return
    text = page.read_text()
    reason = STATUS_TEXT.get(outcome.status, outcome.status)
    banner = (f"<div class='alert alert-info' lang='es'><p>Estado: {html.escape(reason)}"
              f"{html.escape(': ' + outcome.detail) if outcome.detail else ''}.</p>"
              f"{_notes_html(outcome)}</div>")
    page.write_text(text.replace("<body>", "<body>" + banner, 1) if "<body>" in text
                    else banner + text)



def grade_one(api, course_dir, outcome, out_dir, db_url=None):
    """Steps 3 and 4 for one collected submission: autograde, scores, feedback."""
    from autograder.execute import LAST_TIMINGS, TIMING_KEYS

    started = time.perf_counter()
    LAST_TIMINGS.clear()
    if outcome.status != "unreadable":
        autograde_student(api, course_dir, outcome)
    executed = dict(LAST_TIMINGS) or dict.fromkeys(TIMING_KEYS, 0.0)
    read_scores(course_dir, outcome, db_url)
    graded = time.perf_counter()
    feedback_student(api, course_dir, outcome, out_dir)
    outcome.timings = {**executed, "nbgrader + database": graded - started - sum(
        executed.values()), "feedback": time.perf_counter() - graded}
    return outcome
