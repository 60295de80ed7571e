"""Grade files an LMS imports, written next to ``grades.csv`` (from it, so a re-grade of a
few students or ``export`` of every shard gives the whole class): one row per student,
one column per chapter (its points after the late penalty), keyed by the student id that
``collect-lms`` (``autograder.lms``) or nbgrader's ``zip_collect`` recorded.

- ``canvas.csv``: Canvas's gradebook import (Grades → Import): the columns ``Student``,
  ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section`` (Canvas needs a name, its ID or
  the SIS User ID to find a student; the others may be empty), then one column per
  assignment, and under the header a ``Points Possible`` row as Canvas's own export has.
  The recorded id goes into ``Student`` and ``SIS User ID``; a chapter column that names
  no Canvas assignment becomes a new one on import.
- ``moodle.csv``: Moodle's grade import (Grades → Import → CSV file): a header row, one
  column that identifies the user, here ``ID number`` (map it to the user's "ID number"
  on import), then one column per grade item (map each to its item, or to a new one).
"""

import csv
from pathlib import Path

from autograder.export import read_rows

CANVAS_FILE, MOODLE_FILE = "canvas.csv", "moodle.csv"
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_ROW = "Points Possible"
MOODLE_ID_COLUMN = "ID number"


def class_points(grades_csv):
    """(students, chapters, points, possible) from a grades file: points[student][chapter]
    (absent: not submitted) and each chapter's maximum."""
    points, possible = {}, {}
    for (student, assignment), row in read_rows(grades_csv).items():
        points.setdefault(student, {})[assignment] = float(row["score"] or 0.0)
        possible[assignment] = max(possible.get(assignment, 0.0), float(row["max_score"] or 0))
    return sorted(points), sorted(possible), points, possible


def number(value):
    return "" if value is None else f"{value:g}"


def write_canvas(grades_csv, path):
    students, chapters, points, possible = class_points(grades_csv)
    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*CANVAS_COLUMNS, *chapters])
        writer.writerow([CANVAS_POINTS_ROW, "", "", "", "",
                         *(number(possible[c]) for c in chapters)])
        for student in students:
            writer.writerow([student, "", student, "", "",
                             *(number(points[student].get(c)) for c in chapters)])
    return Path(path)


def write_moodle(grades_csv, path):
    students, chapters, points, _ = class_points(grades_csv)
    with Path(path).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([MOODLE_ID_COLUMN, *chapters])
        for student in students:
            writer.writerow([student, *(number(points[student].get(c)) for c in chapters)])
    return Path(path)


def write_lms_exports(grades_csv):
    """``canvas.csv`` and ``moodle.csv`` beside ``grades_csv``; returns their paths."""
    folder = Path(grades_csv).parent
    return (write_canvas(grades_csv, folder / CANVAS_FILE),
            write_moodle(grades_csv, folder / MOODLE_FILE))
