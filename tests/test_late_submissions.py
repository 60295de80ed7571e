"""Due dates and late penalties end to end, on chapter 1: a due date in the term file, two
Canvas downloads through ``collect-lms`` (the second with a resubmission, a late one with
Canvas's bare marker, and an older resubmission), one submission from the exchange with
nbgrader's timestamp.txt, all graded: the penalties in grades.csv, the gradebook and the
feedback pages, the replaced submission kept."""

import zipfile
from datetime import datetime

import nbformat
import pytest
from nbgrader.api import Gradebook
from test_zip_collect import _rows  # tests/test_zip_collect.py

from autograder.course import chapter_named, sqlite_gradebook
from autograder.export import gradebook_outcomes
from autograder.lms import collect_lms
from autograder.pipeline import grade, prepare_course
from autograder.submissions import fill_solutions, solution_code
from autograder.term import TERM_ENV

pytestmark = pytest.mark.slow

TERM = """timezone = "Europe/Madrid"
[due]
01_grafo_dinamico = 2026-12-01T12:00:00
[late]
percent_per_day = 10
max_percent = 50
grace_minutes = 15
marker_hours = 24
"""
ENTRY_TIME = (2026, 12, 2, 9, 0, 0)  # Canvas's entries: all the same date


def _download(path, entries):
    with zipfile.ZipFile(path, "w") as bundle:
        for name, nb in entries:
            bundle.writestr(zipfile.ZipInfo(name, date_time=ENTRY_TIME), nbformat.writes(nb))
    return path


def test_downloads_and_exchange_submissions_get_the_terms_late_penalties(tmp_path, monkeypatch):
    (tmp_path / "term.toml").write_text(TERM)
    monkeypatch.setenv(TERM_ENV, str(tmp_path / "term.toml"))
    chapter = chapter_named("01")
    name = chapter.name
    course = tmp_path / "course"
    prepare_course(course, selected=[chapter])
    with Gradebook(sqlite_gradebook(course)) as gradebook:  # 12:00 in Madrid, in UTC
        assert gradebook.find_assignment(name).duedate == datetime(2026, 12, 1, 11, 0)
    source = nbformat.read(course / "source" / name / f"{name}.ipynb", 4)
    release = nbformat.read(course / "release" / name / f"{name}.ipynb", 4)
    solved = fill_solutions(release, solution_code(source))

    first = _download(tmp_path / "first.zip", [(f"anaperez_11_100_{name}.ipynb", solved),
                                               (f"luisgomez_12_200_{name}.ipynb", release)])
    assert [a.action for a in collect_lms(name, [first], course)] == ["added", "added"]
    second = _download(tmp_path / "second.zip", [
        (f"luisgomez_12_300_{name}.ipynb", solved),  # Luis corrected his work
        (f"carlaruiz_late_13_400_{name}.ipynb", solved),  # late: 24 h by the term
        (f"anaperez_11_90_{name}.ipynb", release),  # older than what Ana has in
    ])
    actions = {a.student: a for a in collect_lms(name, [second], course)}
    assert {s: a.action for s, a in actions.items()} == {
        "luisgomez": "replaced", "carlaruiz": "added", "anaperez": "skipped"}
    kept = actions["luisgomez"].kept_at
    assert kept.parent == course / "replaced" / "luisgomez" / name
    assert nbformat.read(kept / f"{name}.ipynb", 4) == release
    assert str(kept) in actions["luisgomez"].line()
    # From the exchange: nbgrader collect's timestamp, 2 days and 30 minutes late.
    dana = course / "submitted" / "danasanz" / name
    dana.mkdir(parents=True)
    nbformat.write(solved, dana / f"{name}.ipynb")
    (dana / "timestamp.txt").write_text("2026-12-03 11:30:00.000000 UTC")

    out = tmp_path / "grades"
    outcomes = {o.student: o for o in grade(course / "submitted", out, course_dir=course,
                                            timeout=10, progress=None)}
    full = outcomes["anaperez"].max_score
    expected = {"anaperez": 0.0, "luisgomez": 0.0, "carlaruiz": round(full * 0.1, 2),
                "danasanz": round(full * 0.3, 2)}
    rows = _rows(out / "grades.csv")
    for student, penalty in expected.items():
        assert float(rows[student]["late_penalty"]) == penalty, student
        assert float(rows[student]["score"]) == pytest.approx(full - penalty), student
    assert "tardía sin indicar la hora" in rows["carlaruiz"]["notes"]
    recorded = {o.student: o.late_penalty for o in gradebook_outcomes(None, course)}
    assert recorded == expected

    def page(student):
        return (out / "feedback" / student / f"{name}.html").read_text()

    assert f"Entregado con 24 h de retraso: −{expected['carlaruiz']:g} puntos." in page(
        "carlaruiz")
    assert f"Entregado con 49 h de retraso: −{expected['danasanz']:g} puntos." in page(
        "danasanz")
    assert "de retraso" not in page("anaperez")
