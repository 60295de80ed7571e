"""Step 5 of grading a class: the grades file, the class read back from a gradebook, and
the summary table.

One file is the truth: ``build/grades/grades.csv``. ``grade`` writes it; ``export``
rewrites it from the gradebook (every machine's shard, the formgrader's manual overrides)
while keeping the status and intake notes that only grading knows."""

import csv
from pathlib import Path

from nbgrader.api import Gradebook

from autograder.course import COURSE_DIR, gradebook_url
from autograder.outcome import DETAIL_NOT_SUMMARISED, Outcome, Status
from autograder.tables import format_table

EXPORT_COLUMNS = ("student", "assignment", "status", "detail", "notes", "protection",
                  "overrides", "late_penalty", "score", "max_score")
LEADING = 6  # the columns before the graded cells'; the rest come after them


def overrides_text(overrides):
    """The cells an instructor graded by hand, e.g. ``f_test: auto 0 → manual 1.5``."""
    return "; ".join(f"{cell}: auto {'none' if auto is None else f'{auto:g}'} → manual "
                     f"{manual:g}" for cell, (auto, manual) in sorted(overrides.items()))


def read_rows(*paths):
    """The rows of grades files (those that exist), by (student, assignment); a later file
    wins."""
    rows = {}
    for path in paths:
        if Path(path).exists():
            with Path(path).open(newline="") as handle:
                rows.update(((r["student"], r["assignment"]), r) for r in csv.DictReader(handle))
    return rows


def export(outcomes, csv_path, update=False, others=None):
    """One row per submission, one column per graded cell, then the late penalty and the
    score after it. The rows of ``others`` (by
    (student, assignment)), or with ``update`` those of the existing file, are kept for the
    submissions not in ``outcomes`` (a re-grade, or one the gradebook never recorded)."""
    rows = {(o.student, o.assignment): {
        "student": o.student, "assignment": o.assignment, "status": o.status,
        "detail": o.detail, "notes": "; ".join(o.notes), "protection": o.protection,
        **o.scores,
        "overrides": overrides_text(o.overrides), "late_penalty": o.late_penalty,
        "score": o.score,
        "max_score": o.max_score} for o in outcomes}
    cells = {cell for o in outcomes for cell in o.max_scores}
    kept = others if others is not None else read_rows(csv_path) if update else {}
    for key, row in kept.items():
        rows.setdefault(key, row)
        cells.update(k for k in row if k not in EXPORT_COLUMNS)
    columns = [*EXPORT_COLUMNS[:LEADING], *sorted(cells), *EXPORT_COLUMNS[LEADING:]]
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with csv_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns, restval="")
        writer.writeheader()
        writer.writerows(rows[key] for key in sorted(rows))
    return csv_path


def gradebook_outcomes(db_url=None, course_dir=COURSE_DIR, graded=None):
    """Every submission recorded in a gradebook (e.g. the PostgreSQL one several machines
    wrote to), as Outcomes with their points, manual overrides included. Statuses and
    intake notes are not in the gradebook: they come from ``graded``, rows of the grades
    files that grading wrote (``read_rows``); a submission without one is ``recorded``."""
    graded = graded or {}
    outcomes = []
    with Gradebook(gradebook_url(course_dir, db_url)) as gradebook:
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                row = graded.get((submission.student.id, assignment.name))
                outcome = Outcome(submission.student.id, assignment.name, status=Status.RECORDED)
                if row:
                    outcome.status, outcome.detail = Status(row["status"]), row["detail"]
                    outcome.notes = row["notes"].split("; ") if row["notes"] else []
                    outcome.protection = row.get("protection") or outcome.protection
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        outcome.record(grade)
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
