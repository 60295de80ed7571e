"""Step 5 of grading a class: the grades file, the class read back from a gradebook, and
the summary table."""

import csv

from nbgrader.api import Gradebook

from autograder.course import COURSE_DIR, gradebook_url
from autograder.outcome import DETAIL_NOT_SUMMARISED, Outcome, Status
from autograder.tables import format_table

EXPORT_COLUMNS = ("student", "assignment", "status", "detail", "notes", "late_penalty", "score",
                  "max_score")


def export(outcomes, csv_path, update=False):
    """One row per submission, one column per graded cell, then the late penalty and the
    score after it. ``update``: keep the rows of an existing file for the submissions not in
    ``outcomes`` (a re-grade)."""
    rows = {(o.student, o.assignment): {
        "student": o.student, "assignment": o.assignment, "status": o.status,
        "detail": o.detail, "notes": "; ".join(o.notes), **o.scores,
        "late_penalty": o.late_penalty, "score": o.score, "max_score": o.max_score}
        for o in outcomes}
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


def gradebook_outcomes(db_url=None, course_dir=COURSE_DIR):
    """Every submission recorded in a gradebook (e.g. the PostgreSQL one several machines
    wrote to), as Outcomes with their scores: what ``export`` writes for the whole class.
    Statuses and intake notes live in each machine's own grades.csv, not in the gradebook."""
    outcomes = []
    with Gradebook(gradebook_url(course_dir, db_url)) as gradebook:
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                outcome = Outcome(submission.student.id, assignment.name, status=Status.RECORDED)
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        outcome.max_scores[grade.name] = grade.max_score
                        outcome.scores[grade.name] = float(grade.score or 0.0)
                    outcome.late_penalty += float(notebook.late_submission_penalty or 0.0)
                outcomes.append(outcome)
    return sorted(outcomes, key=lambda o: (o.student, o.assignment))


def summary_table(outcomes):
    """A plain-text table: student, assignment, points, status."""
    rows = [("student", "assignment", "points", "status")]
    for o in outcomes:
        status = f"{o.status}" + (f" ({o.detail})" if o.detail and o.status not in
                                  DETAIL_NOT_SUMMARISED else "")
        if o.notes:
            status += "; " + "; ".join(o.notes)
        rows.append((o.student, o.assignment, f"{o.score:g} / {o.max_score:g}", status))
    return "\n".join(format_table(rows))
