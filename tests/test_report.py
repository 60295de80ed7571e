"""The class report (``autograder.report``) and the LMS grade imports (``lms_export``):
counts equal to those computed independently, a page that loads nothing and shows student
text as text, CSVs that read back."""

import csv
import math
import re

import pytest

from autograder.export import export
from autograder.lms_export import (
    CANVAS_COLUMNS,
    CANVAS_POINTS_ROW,
    MOODLE_ID_COLUMN,
    write_lms_exports,
)
from autograder.outcome import Outcome, Status, protection_text
from autograder.report import build_report
from autograder.report.page import report_page
from autograder.report.results import attach, read_diagnoses, write_diagnoses
from autograder.report.stats import ANONYMOUS, ClassStats, correlation
from autograder.report.summary import summary_lines

HOSTILE = "<script>alert('x')</script><img src=http://evil.example/x.png>"
A, B = "91_uno", "92_dos"  # chapters unknown to the course: named by their assignment
PARTS = {"f": [("valor", 2.0), ("forma", 1.0)], "g": [("valor", 3.0)]}
# student -> assignment -> function -> diagnosis of each part (None: passed)
CLASS = {
    "ana": {A: {"f": [None, None], "g": ["dos_veces"]}, B: {"f": ["dos_veces", None],
                                                            "g": [None]}},
    "bea": {A: {"f": ["signo", None], "g": ["dos_veces"]}, B: {"f": [None, None],
                                                              "g": [None]}},
    "carlos": {A: {"f": ["signo", "forma_mal"], "g": [None]}},
    "dani": {A: {"f": [None, None], "g": [None]}, B: {"f": ["signo", "forma_mal"],
                                                      "g": ["dos_veces"]}},
}
ROSTER = [*CLASS, "eva"]  # eva submitted nothing


def outcome(student, assignment, found, status=Status.GRADED, notes=()):
    o = Outcome(student, assignment, status=status, notes=list(notes))
    for function, diagnoses in found.items():
        parts = [{"part": name, "points": points,
                  "earned": 0.0 if diagnosis else points, "diagnosis": diagnosis,
                  "facts": None if diagnosis is None else {"razon": 2.0, "donde": student}}
                 for (name, points), diagnosis in zip(PARTS[function], diagnoses)]
        cell = f"{function}_test"
        o.max_scores[cell] = sum(p for _, p in PARTS[function])
        o.scores[cell] = sum(p["earned"] for p in parts)
        o.hidden_tests[function] = {"points": o.scores[cell], "max_points": o.max_scores[cell],
                                    "parts": parts, "zeroed": None}
    return o


@pytest.fixture
def outcomes():
    made = [outcome(s, a, found) for s, chapters in CLASS.items() for a, found in
            chapters.items()]
    made[0].notes = ["se restauró una celda de pruebas borrada"]
    made.append(Outcome("zoe" + HOSTILE, B, status=Status.TIMED_OUT, detail=HOSTILE,
                        notes=[HOSTILE], max_scores={"f_test": 3.0, "g_test": 3.0},
                        scores={"f_test": 0.0, "g_test": 0.0}))
    return made


def test_misconception_counts_and_pass_rates_equal_the_ones_counted_by_hand(outcomes):
    stats = ClassStats.of(outcomes, ROSTER)
    # Independently, from CLASS: students per diagnosis, per exercise and in the course.
    per_exercise, course, passed = {}, {}, {}
    for student, chapters in CLASS.items():
        for assignment, found in chapters.items():
            for function, diagnoses in found.items():
                for (part, _), diagnosis in zip(PARTS[function], diagnoses):
                    tally = passed.setdefault((assignment, function, part), [0, 0])
                    tally[0] += diagnosis is None
                    tally[1] += 1
                    if diagnosis:
                        per_exercise.setdefault((assignment, function), {}).setdefault(
                            diagnosis, set()).add(student)
                        course.setdefault(diagnosis, set()).add(student)
    for e in stats.exercises:
        assert {d.id: d.students for d in e.ranked()} == per_exercise.get(
            (e.assignment, e.exercise_id), {})
        assert e.pass_rates() == {part: p / n for (a, f, part), (p, n) in passed.items()
                                  if (a, f) == (e.assignment, e.exercise_id)}
    assert {d.id: d.students for d in stats.ranked()} == course
    counts = [len(d.students) for d in stats.ranked()]
    assert counts == sorted(counts, reverse=True)
    top = stats.ranked()[0]
    assert top.id == "dos_veces" and stats.share_of_class(top) == 3 / 6  # zoe and eva count
    # Facts: one example, with its student's id taken out.
    assert top.example == {"razon": 2.0, "donde": ANONYMOUS}
    # Scores: the chapter and its exercises; eva (and carlos for B) did not submit.
    chapter_b = next(c for c in stats.chapters if c.assignment == B)
    assert chapter_b.not_submitted == 2 and len(chapter_b.scores) == 4
    f_a = next(e for e in stats.exercises if (e.assignment, e.cell) == (A, "f_test"))
    assert f_a.scores == {"ana": 3.0, "bea": 1.0, "carlos": 0.0, "dani": 3.0}
    assert (f_a.mean, f_a.full_share, f_a.zero_share) == (7 / 4, 0.5, 0.25)


def test_the_outcomes_that_need_a_human_are_listed(outcomes):
    stats = ClassStats.of(outcomes, ROSTER)
    assert [(o.student, o.status) for o in stats.needs_human] == [
        ("ana", Status.GRADED), ("zoe" + HOSTILE, Status.TIMED_OUT)]


def test_the_page_counts_the_protections_each_submission_was_graded_under(outcomes):
    full = protection_text(["bubblewrap", "seccomp", "guard"])
    for o in outcomes[1:]:
        o.protection = full
    outcomes[0].protection = protection_text(["guard"])
    stats = ClassStats.of(outcomes, ROSTER)
    assert stats.protections == {full: len(outcomes) - 1, outcomes[0].protection: 1}
    page = report_page(stats)
    assert "Protecciones al calificar" in page and "SIN aislamiento del sistema operativo" in page


def test_discrimination_is_the_correlation_with_the_rest_of_the_total(outcomes):
    stats = ClassStats.of(outcomes, ROSTER)
    for e in stats.exercises:
        xs = [e.scores.get(s, 0.0) for s in stats.students]
        rest = [stats.total_of(s) - x for s, x in zip(stats.students, xs)]
        mx, my = sum(xs) / len(xs), sum(rest) / len(rest)
        cov = sum((x - mx) * (y - my) for x, y in zip(xs, rest))
        norm = math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in rest))
        assert e.discrimination == pytest.approx(cov / norm)
    assert correlation([1, 1, 1], [1, 2, 3]) is None


def test_the_page_loads_nothing_and_shows_student_text_as_text(outcomes, tmp_path):
    page, _ = build_report(outcomes, tmp_path, ROSTER)
    text = page.read_text()
    assert HOSTILE not in text and "<script>alert" not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    # Nothing fetched: every src is a data URI, no stylesheet, no @import, no url().
    assert not re.search(r"<(link|iframe|object|embed)\b", text, re.I)
    assert all(src.startswith("data:") for src in re.findall(r"\bsrc='([^']*)'", text))
    assert not re.search(r"@import|url\(|src=\"", text)
    assert text.count("<script>") == 1 and "src=" not in text.split("<script>")[1]
    assert "default-src 'none'" in text
    assert "dos_veces" in text


def test_the_student_csv_reads_back(outcomes, tmp_path):
    stats = ClassStats.of(outcomes, ROSTER)
    _, path = build_report(outcomes, tmp_path, ROSTER)
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["student"] for r in rows] == stats.students
    for row, expected in zip(rows, stats.student_rows()):
        assert {a: float(row[a]) if row[a] else None for a in (A, B)} == expected["chapters"]
        assert float(row["total"]) == expected["total"]
        assert row["diagnoses"].split() == expected["diagnoses"]
    assert next(r for r in rows if r["student"] == "eva")["diagnoses"] == ""


def test_diagnoses_travel_beside_the_grades_file(outcomes, tmp_path):
    path = tmp_path / "diagnoses.json"
    write_diagnoses(outcomes[:2], path)
    write_diagnoses(outcomes[2:3], path, update=True)
    read = read_diagnoses(path)
    assert set(read) == {(o.student, o.assignment) for o in outcomes[:3]}
    bare = [Outcome(o.student, o.assignment) for o in outcomes[:3]]
    assert [o.hidden_tests for o in attach(bare, read)] == [o.hidden_tests
                                                           for o in outcomes[:3]]


def test_the_summary_after_grading_names_means_misconceptions_and_who_to_look_at(outcomes):
    lines = summary_lines(ClassStats.of(outcomes, ROSTER))
    text = "\n".join(lines)
    assert f"{A}: media 3.25 / 6, 4 entregas, 2 sin entregar" in text
    assert "dos_veces): 3 (50 % de la clase)" in text
    assert f"zoe{HOSTILE}/{B} ({Status.TIMED_OUT}, reparada al recibirla)" in text


def test_the_lms_imports_have_the_columns_canvas_and_moodle_require(outcomes, tmp_path):
    outcomes[1].late_penalty = 1.0
    grades = export(outcomes, tmp_path / "grades.csv")
    canvas, moodle = write_lms_exports(grades)
    assert canvas.parent == moodle.parent == tmp_path
    expected = {(o.student, o.assignment): o.score for o in outcomes}
    with canvas.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0])[:5] == CANVAS_COLUMNS == (
        "Student", "ID", "SIS User ID", "SIS Login ID", "Section")
    assert list(rows[0])[5:] == [A, B]
    assert rows[0]["Student"] == CANVAS_POINTS_ROW and rows[0][A] == "6"
    for row in rows[1:]:
        assert row["Student"] == row["SIS User ID"]
        for assignment in (A, B):
            key = (row["SIS User ID"], assignment)
            assert row[assignment] == (f"{expected[key]:g}" if key in expected else "")
    with moodle.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == [MOODLE_ID_COLUMN, A, B]
    assert {(r[MOODLE_ID_COLUMN], a): float(r[a]) for r in rows for a in (A, B)
            if r[a]} == expected
    assert expected[(outcomes[1].student, outcomes[1].assignment)] == 3.0  # 4, 1 off: late


def test_report_and_export_from_a_gradebook_and_two_machines_results(tmp_path, monkeypatch):
    """The gradebook every shard wrote to, each machine's grades.csv and diagnoses.json:
    the report adds them up, the student who never submitted included; export writes the
    LMS imports beside the grades file."""
    import os
    import sys

    from nbgrader.api import Gradebook

    from autograder import course
    from autograder.__main__ import main

    monkeypatch.delenv(course.DB_URL_ENV, raising=False)
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}"
                       f"{os.environ['PATH']}")  # nbgrader runs alembic from PATH
    course_dir = tmp_path / "course"
    course_dir.mkdir()
    ana = outcome("ana", A, {"f": ["signo", None], "g": [None]})
    bruno = outcome("bruno", A, {"f": [None, None], "g": ["dos_veces"]})
    with Gradebook(course.sqlite_gradebook(course_dir)) as gradebook:
        gradebook.add_assignment(A)
        gradebook.add_notebook(A, A)
        for cell, points in ana.max_scores.items():
            gradebook.add_grade_cell(cell, A, A, max_score=points, cell_type="code")
        for student in ("ana", "bruno", "carla"):
            gradebook.add_student(student)
        for o in (ana, bruno):
            gradebook.add_submission(A, o.student)
            for cell, points in o.scores.items():
                gradebook.find_grade(cell, A, A, o.student).auto_score = points
        gradebook.find_grade("g_test", A, A, "bruno").manual_score = 2.5  # by hand
        gradebook.db.commit()
    results = []
    carla = Outcome("carla", A, Status.UNREADABLE, "el archivo está vacío",
                    scores=dict.fromkeys(ana.scores, 0.0), max_scores=ana.max_scores)
    for machine, graded in (("m1", [ana]), ("m2", [bruno, carla])):
        grades = export(graded, tmp_path / machine / "grades.csv")
        write_diagnoses(graded, grades.with_name("diagnoses.json"))
        results += ["--results", str(grades)]
    out = tmp_path / "report"
    assert main(["report", "--course-dir", str(course_dir), *results, "--out", str(out)]) == 0
    with (out / "estudiantes.csv").open(newline="") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    assert {s: (r[A], r["diagnoses"]) for s, r in rows.items()} == {
        "ana": ("4", "signo"), "bruno": ("5.5", "dos_veces"), "carla": ("0", "")}
    page = (out / "informe.html").read_text()
    assert "dos_veces" in page and "el archivo está vacío" in page  # unreadable: not in
    # the gradebook, in the grades file, and a person should look at it
    target = tmp_path / "all" / "grades.csv"
    assert main(["export", "--course-dir", str(course_dir), *results, "--out",
                 str(target)]) == 0
    with (target.parent / "canvas.csv").open(newline="") as handle:
        canvas = {r["SIS User ID"]: r[A] for r in csv.DictReader(handle)}
    assert canvas == {"": "6", "ana": "4", "bruno": "5.5", "carla": "0"}


def test_the_facts_a_notebook_keeps_are_plain_and_short():
    import json

    from autograder.hidden.runner import FACT_CHARS, plain_facts
    from autograder.student.compare import ComprobacionFallida
    from autograder.student.diagnosis import Diagnostico

    failure = ComprobacionFallida(Diagnostico("excepcion", {
        "detalle": "x" * 500 + "ValueError: mal", "razon": float("nan"), "n": 3,
        "ok": True, "forma": (2, 3)}))
    facts = plain_facts(failure)
    json.loads(json.dumps(facts, allow_nan=False))
    assert len(facts["detalle"]) == FACT_CHARS and facts["detalle"].endswith("ValueError: mal")
    assert facts | {"detalle": None} == {"detalle": None, "razon": "nan", "n": 3, "ok": True,
                                         "forma": "(2, 3)"}


def test_no_gradebook_no_report_and_nothing_created(tmp_path, monkeypatch, capsys):
    from autograder import course
    from autograder.__main__ import main

    monkeypatch.delenv(course.DB_URL_ENV, raising=False)
    assert main(["report", "--course-dir", str(tmp_path / "none"), "--out",
                 str(tmp_path / "out")]) == 2
    assert "No gradebook" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_synthetic_class_adds_up_like_a_graded_one(tmp_path):
    from autograder.report.synthetic import synthetic_class

    shape = {A: [("f", PARTS["f"]), ("g", PARTS["g"])], B: [("f", PARTS["f"])]}
    made = synthetic_class(30, shape=shape, seed=1)
    assert {o.assignment for o in made} == {A, B}
    for o in made:
        for function, test in o.hidden_tests.items():
            assert o.scores[f"{function}_test"] == sum(p["earned"] for p in test["parts"])
    page, _ = build_report(made, tmp_path)
    assert page.stat().st_size < 3e6
