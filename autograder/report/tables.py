"""The per-student table of the report as CSV: one row per student, the points per
chapter (empty: not submitted), the total and the misconceptions each one showed."""

import csv

STUDENT_COLUMNS = ("student", "total", "diagnoses")


def write_students_csv(stats, path):
    chapters = [c.assignment for c in stats.chapters]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([STUDENT_COLUMNS[0], *chapters, *STUDENT_COLUMNS[1:]])
        for row in stats.student_rows():
            writer.writerow([row["student"],
                             *("" if p is None else f"{p:g}" for p in row["chapters"].values()),
                             f"{row['total']:g}", " ".join(row["diagnoses"])])
    return path
