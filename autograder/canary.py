"""The torch drift canary's verdict: ``python -m autograder.canary [--expect-torch V]``.

Run by ``ci/canary.sh`` (``make canary``) after the sample class has been graded in an
environment with a newer torch. It reads the autograded notebooks and grades.csv and fails
when
- a graded test cell kept output on stderr (nbgrader scores such a cell 0);
- a sample student's status or points differ from ``autograder/sample_class.py`` (the
  reference students: full marks);
- the grading kernels ran another torch than the one under test (the generated helper cell
  prints the kernel's torch version).
Stderr in other cells and warnings in the grader's log cost no points: they are listed as
notices, since students or graders will see them.

The grading pipeline itself drops stderr from test cells (``DropStderrFromTests``) and
replaces their output with the grader's report, so a new warning raised while a hidden
test runs cannot show there: ``--instructor-notebooks`` executes the instructor notebooks
(solutions and hidden tests inline) and fails on any error or on stderr in a graded cell.
"""

import argparse
import csv
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.course import COURSE_DIR, SAMPLE_COURSE_DIR, SAMPLE_GRADES_DIR
from autograder.outcome import Status
from autograder.preprocessors import is_helper_cell, is_test_cell

TORCH_IN_HELPER_RE = re.compile(r"\btorch (\S+)")
WARNING_LINE_RE = re.compile(r"\b\w*Warning: ")  # how Python prints a warning
TEXT_LIMIT = 600


@dataclass
class Finding:
    where: str  # "student/assignment" or a file
    what: str
    text: str = ""


@dataclass
class Report:
    failures: list = field(default_factory=list)
    notices: list = field(default_factory=list)
    kernel_torch: set = field(default_factory=set)
    notebooks: int = 0
    submissions: int = 0


def _stderr(cell):
    return "".join(o.text for o in cell.get("outputs", [])
                   if o.output_type == "stream" and o.name == "stderr")


def stderr_cells(nb):
    """(index, grade id or "", is a graded test cell, text) of every cell that wrote to stderr."""
    found = []
    for index, cell in enumerate(nb.cells):
        text = _stderr(cell) if cell.cell_type == "code" else ""
        if text:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            found.append((index, grade_id, is_test_cell(cell), text))
    return found


def kernel_torch_versions(nb):
    """The torch versions the helper cell printed: the kernel that ran the notebook."""
    return {version for cell in nb.cells if cell.cell_type == "code" and is_helper_cell(cell)
            for out in cell.get("outputs", []) if out.output_type == "stream"
            for version in TORCH_IN_HELPER_RE.findall(out.text)}


def cell_points(nb):
    """grade id -> points of every graded test cell (nbgrader keeps them in the metadata)."""
    return {cell.metadata["nbgrader"]["grade_id"]: float(cell.metadata["nbgrader"]["points"])
            for cell in nb.cells if cell.cell_type == "code" and is_test_cell(cell)}


def expected_points(student, points):
    """What ``student`` (a SampleStudent) should score in each graded cell, as declared."""
    return {cell: 0.0 if "*" in student.lost or cell in student.lost
            else float(student.partial.get(cell, maximum)) for cell, maximum in points.items()}


def is_reference(student):
    return not student.lost and not student.partial and student.expected_status == Status.GRADED


def _same_release(found, wanted):
    return found.split("+")[0] == wanted.split("+")[0]


def _short(text):
    text = text.strip()
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + " […]"


def _check_notebooks(course_dir, report):
    notebooks = {}
    for path in sorted((course_dir / "autograded").glob("*/*/*.ipynb")):
        student, assignment = path.parent.parent.name, path.parent.name
        nb = nbformat.read(path, as_version=4)
        notebooks[(student, assignment)] = nb
        report.kernel_torch |= kernel_torch_versions(nb)
        for index, grade_id, graded, text in stderr_cells(nb):
            where, label = f"{student}/{assignment}", f"cell {index} ({grade_id or 'no id'})"
            if graded:
                report.failures.append(Finding(where, f"graded {label} wrote to stderr", text))
            else:
                report.notices.append(Finding(where, f"{label} wrote to stderr", text))
    report.notebooks = len(notebooks)
    return notebooks


def _check_scores(sample_class, rows, notebooks, report):
    for assignment, students in sample_class.items():
        for student in students:
            report.submissions += 1
            where, key = f"{student.student_id}/{assignment}", (student.student_id, assignment)
            row = rows.get(key)
            if row is None:
                report.failures.append(Finding(where, "missing from grades.csv"))
                continue
            if row["status"] != student.expected_status:
                report.failures.append(Finding(
                    where, f"status {row['status']!r}, expected {student.expected_status!r}",
                    row.get("detail", "")))
            score, maximum = float(row["score"]), float(row["max_score"])
            if is_reference(student) and (score != maximum or maximum <= 0):
                report.failures.append(Finding(
                    where, f"reference answer without full marks: {score:g} / {maximum:g}"))
            if key not in notebooks:
                continue
            for cell, wanted in expected_points(student, cell_points(notebooks[key])).items():
                got = float(row.get(cell) or 0.0)
                if got != wanted:
                    report.failures.append(Finding(where, f"{cell} scored {got:g}, "
                                                          f"expected {wanted:g}"))


def _check_log(log, report):
    lines = {line.strip() for line in log.read_text(errors="replace").splitlines()
             if WARNING_LINE_RE.search(line)}
    report.notices += [Finding(log.name, "warning in the grader's output", line)
                       for line in sorted(lines)]


def check(course_dir, grades_csv, sample_class, expect_torch=None, grader_log=None):
    """Everything the canary asserts, as a Report (no failures: the canary passes)."""
    report = Report()
    notebooks = _check_notebooks(Path(course_dir), report)
    with Path(grades_csv).open(newline="") as handle:
        rows = {(r["student"], r["assignment"]): r for r in csv.DictReader(handle)}
    _check_scores(sample_class, rows, notebooks, report)
    if expect_torch:
        wrong = sorted(v for v in report.kernel_torch if not _same_release(v, expect_torch))
        if wrong or not report.kernel_torch:
            report.failures.append(Finding(
                "grading kernel", f"ran torch {', '.join(wrong) or '(not reported)'}, "
                                  f"expected {expect_torch}"))
    if grader_log is not None and Path(grader_log).exists():
        _check_log(Path(grader_log), report)
    return report


def _grouped(findings):
    """Findings with the same message and text once, with every place they occurred."""
    groups = {}
    for f in findings:
        groups.setdefault((f.what, f.text), []).append(f.where)
    return groups


def render(report):
    lines = [f"torch in the grading kernels: {', '.join(sorted(report.kernel_torch)) or '?'}",
             f"checked {report.notebooks} autograded notebooks and {report.submissions} sample "
             "submissions"]
    for label, findings in (("FAIL", report.failures), ("NOTICE", report.notices)):
        for (what, text), places in _grouped(findings).items():
            shown = ", ".join(places[:4]) + (f" and {len(places) - 4} more"
                                             if len(places) > 4 else "")
            lines.append(f"{label} {shown}: {what}")
            lines += [f"    {line}" for line in _short(text).splitlines()] if text else []
    verdict = "PASS" if not report.failures else f"FAIL ({len(report.failures)} problems)"
    lines.append(f"canary verdict: {verdict}"
                 + (f", {len(report.notices)} notices" if report.notices else ""))
    return "\n".join(lines)


def check_instructor_notebooks(course_dir, timeout=300):
    """Run every instructor notebook of the course; 1 if any error or graded-cell stderr."""
    from autograder.develop import run_notebook

    failed = 0
    for path in sorted((Path(course_dir) / "source").glob("*/*.ipynb")):
        elapsed, problems, _ = run_notebook(path, timeout)
        print(f"{path.parent.name}: {elapsed:.0f} s, "
              + ("ok" if not problems else f"{len(problems)} problem(s)"))
        for problem in problems:
            print("  PROBLEM " + problem)
        failed |= bool(problems)
    return int(failed)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.canary",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--course-dir", type=Path, default=None,
                        help="default: the sample class's course (the instructor course "
                             "with --instructor-notebooks)")
    parser.add_argument("--grades", type=Path, default=SAMPLE_GRADES_DIR / "grades.csv")
    parser.add_argument("--expect-torch", default=None,
                        help="fail unless the grading kernels ran this torch release")
    parser.add_argument("--grader-log", type=Path, default=None,
                        help="output of `python -m autograder grade`: its warnings are listed")
    parser.add_argument("--instructor-notebooks", action="store_true",
                        help="instead: run the course's instructor notebooks and fail on "
                             "errors or stderr in graded cells")
    args = parser.parse_args(argv)
    if args.instructor_notebooks:
        return check_instructor_notebooks(args.course_dir or COURSE_DIR)
    from autograder.sample_class import SAMPLE_CLASS

    report = check(args.course_dir or SAMPLE_COURSE_DIR, args.grades, SAMPLE_CLASS,
                   args.expect_torch, args.grader_log)
    print(render(report))
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
