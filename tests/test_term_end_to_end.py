"""A whole term on a real course, as a lecturer runs it from docs/instructor.md: publish the student
distribution, release through the exchange, two Canvas downloads (a resubmission, a late
submission with Canvas's bare marker and an older copy) and one submission from the exchange
with nbgrader's timestamp and secret, grade, read the feedback and return it through the
exchange, override a score as the formgrader does, re-grade that student, export the file
to upload (and nbgrader's own export). Chapter 1 only, through the CLI."""

import zipfile
from datetime import datetime

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader.utils import notebook_hash
from test_feedback_page import english_labels_in  # tests/test_feedback_page.py
from test_zip_collect import _rows, nbgrader  # tests/test_zip_collect.py

from autograder.__main__ import main
from autograder.course import chapter_named, sqlite_gradebook
from autograder.export import gradebook_outcomes
from autograder.hidden.seeds import SECRET_FILE
from autograder.outcome import Status
from autograder.pipeline import prepare_course
from autograder.submissions import fill_solutions, solution_code
from autograder.term import TERM_ENV

pytestmark = pytest.mark.slow

OVERRIDDEN = "manual_backward_test"
TERM = """timezone = "Europe/Madrid"
[due]
01_grafo_dinamico = 2026-12-01T12:00:00
[late]
percent_per_day = 10
max_percent = 50
grace_minutes = 15
marker_hours = 24
"""
DANA_SECRET = "d4" * 64  # nbgrader submit's submission_secret.txt
ENTRY_TIME = (2026, 12, 2, 9, 0, 0)  # Canvas's entries: all the same date


def _download(path, entries):
    with zipfile.ZipFile(path, "w") as bundle:
        for name, nb in entries:
            bundle.writestr(zipfile.ZipInfo(name, date_time=ENTRY_TIME), nbformat.writes(nb))
    return path


def test_a_term_from_publishing_to_the_file_to_upload(tmp_path, monkeypatch, capsys):
    (tmp_path / "term.toml").write_text(TERM)
    monkeypatch.setenv(TERM_ENV, str(tmp_path / "term.toml"))
    monkeypatch.delenv("AUTOGRADER_DB_URL", raising=False)
    monkeypatch.delenv("COURSE_SECRET", raising=False)
    chapter = chapter_named("01")
    name = chapter.name
    course, public, grades = tmp_path / "course", tmp_path / "public", tmp_path / "grades"
    prepare_course(course, selected=[chapter])
    with Gradebook(sqlite_gradebook(course)) as gradebook:  # 12:00 in Madrid, in UTC
        assert gradebook.find_assignment(name).duedate == datetime(2026, 12, 1, 11, 0)
    source = nbformat.read(course / "source" / name / f"{name}.ipynb", 4)
    release = nbformat.read(course / "release" / name / f"{name}.ipynb", 4)
    answers = solution_code(source)
    solved = fill_solutions(release, answers)

    # Publish: the public repository gets the notebooks, and nothing private.
    assert main(["publish", str(public), "--repository", "uni/autograd-estudiantes",
                 "--course-dir", str(course)]) == 0
    secret = (course / SECRET_FILE).read_text().strip()
    published = "\n".join(p.read_text(errors="replace") for p in public.rglob("*")
                          if p.is_file())
    assert secret not in published
    assert "BEGIN SOLUTION" not in published and "HIDDEN TESTS" not in published
    assert "uni/autograd-estudiantes" in published
    stubs = {line.strip() for cell in release.cells for line in cell.source.splitlines()}
    answer_lines = {line.strip() for code in answers.values() for line in code.splitlines()
                    if len(line.strip()) > 30} - stubs
    assert answer_lines and not [line for line in answer_lines if line in published]

    # Release through nbgrader's exchange (what `nbgrader fetch_assignment` serves).
    nbgrader("release_assignment", name, course=course)
    assert (course / "exchange" / "course" / "outbound" / name / f"{name}.ipynb").exists() \
        or any((course / "exchange").rglob(f"outbound/{name}/{name}.ipynb"))

    # Two downloads from Canvas.
    first = _download(tmp_path / "first.zip", [(f"anaperez_11_100_{name}.ipynb", solved),
                                               (f"luisgomez_12_200_{name}.ipynb", release)])
    second = _download(tmp_path / "second.zip", [
        (f"luisgomez_12_300_{name}.ipynb", solved),  # corrected: replaces his stubs
        (f"carlaruiz_late_13_400_{name}.ipynb", solved),  # late, no time: 24 h
        (f"anaperez_11_90_{name}.ipynb", release),  # older than hers: skipped
    ])
    for download in (first, second):
        assert main(["collect-lms", name, str(download), "--course-dir", str(course)]) == 0
    said = capsys.readouterr().out
    assert "replaced" in said and "skipped" in said
    kept = list((course / "replaced" / "luisgomez" / name).glob(f"*/{name}.ipynb"))
    assert len(kept) == 1 and nbformat.read(kept[0], 4) == release  # nothing lost
    # From the exchange: nbgrader collect's timestamp, 2 days and 30 minutes late.
    dana = course / "submitted" / "danasanz" / name
    dana.mkdir(parents=True)
    nbformat.write(solved, dana / f"{name}.ipynb")
    (dana / "timestamp.txt").write_text("2026-12-03 11:30:00.000000 UTC")
    (dana / "submission_secret.txt").write_text(DANA_SECRET)  # what release_feedback reads

    # Grade, then read what students get.
    grade = ["grade", "--submissions", str(course / "submitted"), "--course-dir", str(course),
             "--out", str(grades), "--timeout", "10", "--workers", "2", "--lines"]
    assert main(grade) == 0
    rows = _rows(grades / "grades.csv")
    full = float(rows["anaperez"]["max_score"])
    students = ["anaperez", "carlaruiz", "danasanz", "luisgomez"]
    assert sorted(rows) == students
    assert {r["status"] for r in rows.values()} == {Status.GRADED}
    penalties = {"anaperez": 0.0, "luisgomez": 0.0, "carlaruiz": round(full * 0.1, 2),
                 "danasanz": round(full * 0.3, 2)}  # 24 h: one day; 48 h 30 min: three
    for student, penalty in penalties.items():
        assert float(rows[student]["late_penalty"]) == penalty, student
        assert float(rows[student]["score"]) == pytest.approx(full - penalty), student
    assert "tardía sin indicar la hora" in rows["carlaruiz"]["notes"]
    assert {o.student: o.late_penalty for o in gradebook_outcomes(None, course)} == penalties

    def page(student):
        return (grades / "feedback" / student / f"{name}.html").read_text()

    for student in rows:
        assert english_labels_in(page(student)) == [], student
    assert (f"Entregado con 24 h de retraso: −{penalties['carlaruiz']:g} puntos."
            in page("carlaruiz"))
    assert (f"Entregado con 49 h de retraso: −{penalties['danasanz']:g} puntos."
            in page("danasanz"))
    assert "de retraso" not in page("anaperez")
    # Returned through the exchange (docs/instructor.md, step 4), named by the exchange's secret.
    nbgrader("release_feedback", name, "--student", "danasanz", course=course)
    hashed = notebook_hash(secret=DANA_SECRET, notebook_id=name)
    [returned] = (course / "exchange").rglob(f"feedback/{hashed}.html")
    assert returned.read_text() == page("danasanz")

    # The instructor lowers one of Luis's cells by hand, then Luis is re-graded.
    with Gradebook(sqlite_gradebook(course)) as gradebook:
        cell = gradebook.find_grade(OVERRIDDEN, name, name, "luisgomez")
        cell.manual_score = 1.0
        gradebook.db.commit()
        auto = cell.auto_score
    assert auto and auto > 1.0
    assert main([*grade, "--student", "luisgomez"]) == 0
    assert main(["export", "--course-dir", str(course), "--out",
                 str(grades / "grades.csv")]) == 0
    exported = _rows(grades / "grades.csv")
    assert sorted(exported) == students
    assert float(exported["luisgomez"][OVERRIDDEN]) == 1.0
    assert float(exported["luisgomez"]["score"]) == pytest.approx(full - auto + 1.0)
    assert f"{OVERRIDDEN}: auto {auto:g} → manual 1" in exported["luisgomez"]["overrides"]
    assert {s: float(exported[s]["late_penalty"]) for s in students} == penalties
    assert exported["anaperez"]["score"] == rows["anaperez"]["score"]
    assert all(r["status"] == Status.GRADED for r in exported.values())
    nbgrader("export", "--to", str(tmp_path / "nbgrader.csv"), course=course)
    assert all(s in (tmp_path / "nbgrader.csv").read_text() for s in students)
