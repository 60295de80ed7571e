"""The class report: ``python -m autograder report``.

What grading found, added up over a class: from the gradebook (points, manual overrides:
one machine's sqlite file or the PostgreSQL one every shard wrote to) and each run's
results (``grades.csv``: statuses and intake notes; ``diagnoses.json``: what every hidden
test found part by part). Modules: ``stats`` (the one computation), ``page`` (the HTML),
``tables`` (the per-student CSV), ``plots``, ``names``, ``results``, ``summary`` (the lines
``grade`` prints), ``synthetic`` (a made-up class, for the benchmark)."""

from pathlib import Path

from autograder.report.page import report_page
from autograder.report.stats import ClassStats
from autograder.report.tables import write_students_csv

PAGE = "informe.html"
STUDENTS_CSV = "estudiantes.csv"


def load_class(db_url=None, course_dir=None, results=()):
    """(outcomes, students) of a class: every submission in the gradebook with the status,
    notes and diagnoses of the grades files ``results`` (and the ``diagnoses.json`` beside
    each), and every student the gradebook knows."""
    from nbgrader.api import Gradebook

    from autograder.course import COURSE_DIR, gradebook_url
    from autograder.export import gradebook_outcomes, read_rows
    from autograder.report.results import attach, diagnoses_path, read_diagnoses

    course_dir = course_dir or COURSE_DIR
    graded = read_rows(*results)
    outcomes = gradebook_outcomes(db_url, course_dir, graded)
    known = {(o.student, o.assignment) for o in outcomes}
    # Submissions the gradebook never recorded (unreadable ones) are in the grades files.
    outcomes += [row_outcome(row) for key, row in sorted(graded.items()) if key not in known]
    attach(outcomes, read_diagnoses(*(diagnoses_path(r) for r in results)))
    with Gradebook(gradebook_url(course_dir, db_url)) as gradebook:
        students = [s.id for s in gradebook.students]
    return outcomes, students


def row_outcome(row):
    """An Outcome from a row of a grades file (``export.export``)."""
    from autograder.export import EXPORT_COLUMNS
    from autograder.outcome import NO_PROTECTION_RECORD, Outcome, Status

    return Outcome(row["student"], row["assignment"], Status(row["status"]), row["detail"],
                   scores={k: float(v) for k, v in row.items()
                           if k not in EXPORT_COLUMNS and v not in ("", None)},
                   notes=row["notes"].split("; ") if row["notes"] else [],
                   late_penalty=float(row.get("late_penalty") or 0.0),
                   protection=row.get("protection") or NO_PROTECTION_RECORD)


def build_report(outcomes, out_dir, students=None):
    """Write the page and the per-student CSV into ``out_dir``; returns their paths."""
    stats = ClassStats.of(outcomes, students)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = write_students_csv(stats, out_dir / STUDENTS_CSV)
    page = out_dir / PAGE
    page.write_text(report_page(stats, STUDENTS_CSV), encoding="utf-8")
    return page, csv_path
