"""End to end: the bundled sample class through the real nbgrader pipeline."""

import csv
import hashlib
import html
import re

import pytest

from autograder.canary import expected_points
from autograder.course import gradebook_url
from autograder.export import summary_table
from autograder.outcome import SHOWS_NOTEBOOK as SHOWS
from autograder.outcome import Status
from autograder.pipeline import grade, prepare_course
from autograder.sample_class import SAMPLE_CLASS, write_sample_class
from autograder.sample_generated import add_generated, generated_class
from autograder.titles import hidden_tests_heading

pytestmark = pytest.mark.slow
LEAKS = ("BEGIN HIDDEN TESTS", "check(\"manual_backward\"", "autograder.chapters.ch01.hidden",
         "autograder.hidden", "HIDDEN_STEPS")


def digest(folder):
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    course = root / "course"
    prepare_course(course)
    submissions = write_sample_class(course, root / "submissions")
    before = digest(submissions)
    outcomes = grade(submissions, root / "out", course_dir=course, timeout=10,
                     progress=lambda line: None, workers=2)
    unchanged = digest(submissions) == before
    # The generated rest of the class, as `make grade` adds it (the first few: seconds).
    generated = add_generated(course, root / "out", gradebook_url(course), size=GENERATED)
    return {"outcomes": {(o.student, o.assignment): o for o in outcomes}, "out": root / "out",
            "submissions_unchanged": unchanged, "course": course,
            "submissions": submissions, "generated": generated}


FIRST = "01_grafo_dinamico"
GENERATED = 4  # generated students the end-to-end test adds (make grade: all of them)
EXPECTED = [(assignment, s) for assignment, students in SAMPLE_CLASS.items() for s in students]


@pytest.mark.parametrize("assignment,student", EXPECTED, ids=lambda x: getattr(x, "student_id", x))
def test_each_student_gets_the_expected_points_and_status(graded, assignment, student):
    outcome = graded["outcomes"][(student.student_id, assignment)]
    assert outcome.status == student.expected_status, outcome.detail
    assert outcome.max_score > 0
    expected = expected_points(student, outcome.max_scores)
    for cell, points in outcome.scores.items():
        assert points == expected[cell], f"{student.student_id}: {cell} scored {points}"


def test_feedback_for_everyone_without_hidden_tests(graded):
    for assignment, student in EXPECTED:
        page = graded["out"] / "feedback" / student.student_id / f"{assignment}.html"
        text = page.read_text()
        for leak in LEAKS:
            assert leak not in text, f"{page} shows {leak!r}"


def test_feedback_names_the_misconception_and_the_parts(graded):
    text = (graded["out"] / "feedback" / "carla" / "01_grafo_dinamico.html").read_text()
    assert "Error frecuente: p.grad guardado sin clone" in text
    assert "sin `.clone()`" in text and "Pista:" in text
    # the fix, which no public check shows, comes with the graded feedback (issue 18)
    assert "Cómo corregirlo: Guarda `p.grad.clone()`." in text
    text = (graded["out"] / "feedback" / "hugo" / "01_grafo_dinamico.html").read_text()
    assert "✓ valor de la penalización" in text and "✗ diferenciable" in text


def test_each_hidden_test_is_stored_part_by_part_in_the_graded_notebook(graded):
    """A class report reads the parts from the autograded notebook, not from its text."""
    import nbformat

    from autograder.facts import Facts

    for (student, assignment), outcome in graded["outcomes"].items():
        if outcome.status not in SHOWS:
            continue
        path = graded["course"] / "autograded" / student / assignment / f"{assignment}.ipynb"
        stored = Facts.read(nbformat.read(path, as_version=4)).hidden_tests
        assert stored, (student, assignment)
        for exercise, test in stored.items():
            assert test["points"] == outcome.scores[f"{exercise}_test"], (student, exercise)
            if test["zeroed"] is None:
                assert test["points"] == pytest.approx(sum(p["earned"] for p in test["parts"]))
                assert test["max_points"] == sum(p["points"] for p in test["parts"])
                assert all(p["earned"] == 0 for p in test["parts"] if p["diagnosis"])
    hugo = graded["course"] / "autograded" / "hugo" / FIRST / f"{FIRST}.ipynb"
    parts = Facts.read(nbformat.read(hugo, as_version=4)).hidden_tests["gradient_penalty"]
    earned = {p["part"].split()[0]: (p["earned"], p["diagnosis"]) for p in parts["parts"]}
    assert earned["valor"] == (1.5, None)
    assert earned["diferenciable"][0] == 0 and earned["diferenciable"][1]


def test_grades_csv_has_one_row_per_submission(graded):
    with (graded["out"] / "grades.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {(r["student"], r["assignment"]) for r in rows} == set(graded["outcomes"]) | {
        (o.student, o.assignment) for o in graded["generated"]}
    assert all(float(r["score"]) <= float(r["max_score"]) for r in rows)


# The class report on the sample class, against what grading wrote elsewhere.
HEADING = re.compile(r"^(Pruebas ocultas · .*): [\d.]+ / [\d.]+ puntos$")
PART = re.compile(r"^  ([✓✗]) (.*) \([\d.]+/[\d.]+\)$")


def feedback_parts(text, headings):
    """exercise id -> [(part, passed, first line of its message)], as a feedback page shows
    each hidden test's report (``headings``: report heading -> exercise id)."""
    found = {}
    for block in re.findall(r"<pre>(.*?)</pre>", text, re.S):
        lines = html.unescape(re.sub(r"<[^>]+>", "", block)).split("\n")
        heading = HEADING.match(lines[0])
        if not heading or heading.group(1) not in headings:
            continue
        parts = []
        for line in lines[1:]:
            part = PART.match(line)
            if part:
                parts.append([part.group(2), part.group(1) == "✓", None])
            elif line.startswith("      ") and parts and not parts[-1][1] \
                    and parts[-1][2] is None:
                parts[-1][2] = line.strip()
        found[headings[heading.group(1)]] = [tuple(p) for p in parts]
    return found


def message_kind(message):
    """What a student reads names the misconception by its title («Error frecuente: …»);
    the two that name none (an exception, a value not recognised) by their wording."""
    from autograder.report.names import _catalogue
    from autograder.student.messages import SIN_NOMBRE

    if message.startswith("Error frecuente: "):
        return max((title for title, *_ in _catalogue().values()
                    if message.startswith(f"Error frecuente: {title}. ")), key=len)
    kinds = [i for i in SIN_NOMBRE if re.fullmatch(".*".join(
        map(re.escape, re.split(r"\{\w+\}", _catalogue()[i][1].split("\n")[0]))), message)]
    assert len(kinds) == 1, message
    return kinds[0]


def kind_of(diagnosis):
    """A diagnosis id as ``message_kind`` names it."""
    from autograder.report.names import diagnosis_title
    from autograder.student.messages import SIN_NOMBRE

    return diagnosis if diagnosis in SIN_NOMBRE else diagnosis_title(diagnosis)


@pytest.fixture(scope="module")
def reported(graded, tmp_path_factory):
    """The report `make report` builds, on the sample class the fixture graded."""
    from autograder.report import build_report, load_class
    from autograder.report.stats import ClassStats

    outcomes, students = load_class(None, graded["course"], [graded["out"] / "grades.csv"])
    out = tmp_path_factory.mktemp("report")
    build_report(outcomes, out, students)
    with (out / "estudiantes.csv").open(newline="") as handle:
        rows = {r["student"]: r for r in csv.DictReader(handle)}
    return {"stats": ClassStats.of(outcomes, students), "rows": rows}


def test_the_generated_students_score_as_their_variants_declare(graded, reported):
    """Every correct variant at full marks, every mistake below; every chapter handed in
    by the students the declarations name (the hand-written and the generated ones)."""
    declared = generated_class(GENERATED)
    assert {o.student for o in graded["generated"]} == {s.student_id for s in declared}
    stats = reported["stats"]
    assert len(stats.students) == len({s.student_id for _, s in EXPECTED}) + GENERATED
    for chapter in stats.chapters:
        assert set(chapter.scores) == {s.student_id for a, s in EXPECTED if a ==
                                       chapter.assignment} | {
            s.student_id for s in declared if chapter.assignment in s.answers}
    exercises = {(e.assignment, e.exercise_id): e for e in stats.exercises}
    for student in declared:
        for assignment, answers in student.answers.items():
            for exercise, variant in answers.items():
                e = exercises[(assignment, exercise)]
                full = e.scores[student.student_id] == e.max_score
                assert full == variant.correct, (student.student_id, variant.name)


def test_the_report_counts_what_the_feedback_pages_show(graded, reported):
    """Misconceptions and part pass rates: read from the feedback pages of the students
    graded in kernels (the generated ones have none: their hidden tests ran in process,
    and their parts are added from that run), they equal the report's."""
    from autograder.course import chapters

    shown, tallies, course = {}, {}, {}
    for chapter in chapters():
        headings = {hidden_tests_heading(chapter.name, exercise): exercise
                    for exercise in chapter.module("hidden").HIDDEN}
        for page in sorted((graded["out"] / "feedback").glob(f"*/{chapter.name}.html")):
            student = page.parent.name
            for exercise, parts in feedback_parts(page.read_text(), headings).items():
                for part, passed, message in parts:
                    tally = tallies.setdefault((chapter.name, exercise, part), [0, 0])
                    tally[0] += passed
                    tally[1] += 1
                    if not passed:
                        kind = message_kind(message)
                        shown.setdefault((chapter.name, exercise), {}).setdefault(
                            kind, set()).add(student)
                        course.setdefault(kind, set()).add(student)
    with_pages = {p.parent.name for p in (graded["out"] / "feedback").glob("*/*.html")}
    assert shown and with_pages.isdisjoint(o.student for o in graded["generated"])
    for o in graded["generated"]:
        for exercise, test in o.hidden_tests.items():
            for part in test["parts"]:
                tally = tallies.setdefault((o.assignment, exercise, part["part"]), [0, 0])
                tally[0] += part["diagnosis"] is None
                tally[1] += 1
    stats = reported["stats"]
    for e in stats.exercises:
        found = {}
        for d in e.ranked():
            found.setdefault(kind_of(d.id), set()).update(d.students & with_pages)
        assert {k: v for k, v in found.items() if v} == shown.get(
            (e.assignment, e.exercise_id), {}), e.exercise_id
        assert e.pass_rates() == {part: p / n for (a, f, part), (p, n) in tallies.items()
                                  if (a, f) == (e.assignment, e.exercise_id)}
    # Across the course, in the report's table of students.
    found = {}
    for student, row in reported["rows"].items():
        for diagnosis in row["diagnoses"].split():
            if student in with_pages:
                found.setdefault(kind_of(diagnosis), set()).add(student)
    assert found == course


def test_the_report_pass_rates_equal_the_gradebook(graded, reported):
    """Per exercise: mean, share at full marks and at zero, as the gradebook's points
    give them (read here with nbgrader's API); per chapter, who did not hand it in."""
    from nbgrader.api import Gradebook

    with Gradebook(gradebook_url(graded["course"])) as gradebook:
        students = len(gradebook.students)
        points, handed_in = {}, {}
        for assignment in gradebook.assignments:
            handed_in[assignment.name] = len(assignment.submissions)
            for submission in assignment.submissions:
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        points.setdefault((assignment.name, grade.name), []).append(
                            (float(grade.score), grade.max_score))
    stats = reported["stats"]
    assert len(stats.students) == students
    assert {c.assignment: students - c.not_submitted for c in stats.chapters} == handed_in
    assert {(e.assignment, e.cell) for e in stats.exercises} == set(points)
    for e in stats.exercises:
        scores = points[(e.assignment, e.cell)]
        assert e.mean == pytest.approx(sum(s for s, _ in scores) / len(scores))
        assert e.full_share == sum(s == m for s, m in scores) / len(scores)
        assert e.zero_share == sum(s == 0 for s, _ in scores) / len(scores)


def test_submissions_are_never_modified(graded):
    assert graded["submissions_unchanged"]


def test_summary_table_lists_everyone(graded):
    table = summary_table(graded["outcomes"].values())
    for student, _ in graded["outcomes"]:
        assert student in table


def test_a_run_killed_half_way_then_rerun_gives_the_same_grades(tmp_path):
    import subprocess
    import sys

    root = tmp_path
    course = root / "course"
    prepare_course(course)
    everyone = write_sample_class(course, root / "all")
    small = root / "small"
    for student in ("ana", "carla", "hugo"):
        (small / student).mkdir(parents=True)
        (everyone / student / FIRST).rename(small / student / FIRST)
    command = [sys.executable, "-c",
               "import sys; from pathlib import Path; from autograder.pipeline import grade; "
               f"grade(Path({str(small)!r}), Path(sys.argv[1]), course_dir=Path({str(course)!r}),"
               " timeout=10)"]
    subprocess.run(command + [str(root / "first")], check=True, capture_output=True, timeout=600)
    killed = subprocess.Popen(command + [str(root / "killed")], stdout=subprocess.PIPE, text=True)
    for line in killed.stdout:  # kill it as soon as one student is graded
        if line.startswith("  ana/"):
            killed.kill()
            break
    killed.wait(timeout=60)
    subprocess.run(command + [str(root / "rerun")], check=True, capture_output=True, timeout=600)
    first = (root / "first" / "grades.csv").read_text()
    assert first == (root / "rerun" / "grades.csv").read_text()
    assert first.count("\n") == 4


def _comparable(page):
    # Object reprs carry memory addresses, which differ between any two runs.
    return re.sub(r" at 0x[0-9a-f]+", " at 0x…", page.read_text())


def test_sequential_grading_gives_the_same_grades_and_feedback_as_parallel(graded, tmp_path):
    """The class fixture is graded by two workers; grade three of its submissions (one
    crashing) again, one at a time, with the same secret and compare everything."""
    import shutil

    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(graded["course"] / "course_secret.txt", course / "course_secret.txt")
    some = tmp_path / "some"
    for student in ("ana", "carla", "fede"):
        shutil.copytree(graded["submissions"] / student / FIRST, some / student / FIRST)
    outcomes = grade(some, tmp_path / "out", course_dir=course, timeout=10,
                     progress=lambda line: None, workers=1)
    for outcome in outcomes:
        twin = graded["outcomes"][(outcome.student, outcome.assignment)]
        assert (outcome.status, outcome.scores, outcome.notes) == (
            twin.status, twin.scores, twin.notes)
        page = f"feedback/{outcome.student}/{outcome.assignment}.html"
        assert _comparable(tmp_path / "out" / page) == _comparable(graded["out"] / page)


def test_parallel_grading_records_every_grade_in_the_course_gradebook(graded):
    from nbgrader.api import Gradebook

    from autograder.course import gradebook_url

    with Gradebook(gradebook_url(graded["course"])) as gradebook:
        for (student, assignment), outcome in graded["outcomes"].items():
            if outcome.status in (Status.KERNEL_DIED, Status.GRADER_ERROR, Status.UNREADABLE):
                continue
            submission = gradebook.find_submission_notebook(assignment, assignment, student)
            recorded = {g.name: float(g.score or 0.0) for g in submission.grades}
            assert recorded == outcome.scores, (student, assignment)
