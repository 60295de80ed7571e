"""``grade`` orchestrates: the gradebook URL is decided once and handed down, and the
submissions go to whatever executor it is given (here one that runs no kernel)."""

import csv
import json

import nbformat
import pytest

from autograder import build, course, export, pipeline
from autograder.outcome import Status

pytestmark = pytest.mark.slow
CHAPTER = "01_grafo_dinamico"


class RecordingExecutor:
    """Grades nothing: says every readable submission got full marks."""

    def __init__(self):
        self.runs = []

    def grade(self, run, outcomes, done):
        self.runs.append((run, [(o.student, o.status) for o in outcomes]))
        for outcome in outcomes:
            if outcome.status == Status.GRADED:
                outcome.scores, outcome.max_scores = {"celda": 1.0}, {"celda": 1.0}
        return [done(o) for o in outcomes]


def test_grade_hands_its_executor_the_run_and_resolves_the_gradebook_once(
        tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_CHAPTERS", "01")
    monkeypatch.delenv(course.DB_URL_ENV, raising=False)
    calls = []
    resolve = course.gradebook_url

    def counted(*args, **kwargs):
        calls.append(args)
        return resolve(*args, **kwargs)

    for module in (course, build, export, pipeline):
        monkeypatch.setattr(module, "gradebook_url", counted)
    course_dir = tmp_path / "course"
    pipeline.prepare_course(course_dir)  # what an instructor does once, before grading
    release = nbformat.read(course_dir / "release" / CHAPTER / f"{CHAPTER}.ipynb", 4)
    for student in ("ana", "bea"):
        (tmp_path / "entregas" / student / CHAPTER).mkdir(parents=True)
    nbformat.write(release, tmp_path / "entregas" / "ana" / CHAPTER / f"{CHAPTER}.ipynb")
    (tmp_path / "entregas" / "bea" / CHAPTER / f"{CHAPTER}.ipynb").write_text("{roto")

    calls.clear()
    executor = RecordingExecutor()
    outcomes = pipeline.grade(tmp_path / "entregas", tmp_path / "notas", course_dir=course_dir,
                              progress=None, executor=executor)

    assert len(calls) == 1, calls
    [(run, handed)] = executor.runs
    assert run.db_url == course.sqlite_gradebook(course_dir.resolve())
    assert handed == [("ana", Status.GRADED), ("bea", Status.UNREADABLE)]
    assert [(o.student, o.status, o.score) for o in outcomes] == [
        ("ana", Status.GRADED, 1.0), ("bea", Status.UNREADABLE, 0)]
    with (tmp_path / "notas" / "grades.csv").open() as handle:
        assert [row["status"] for row in csv.DictReader(handle)] == [Status.GRADED,
                                                                       Status.UNREADABLE]
    # Beside it: what each hidden test found (for the class report) and the LMS imports.
    assert [(e["student"], e["hidden_tests"]) for e in json.loads(
        (tmp_path / "notas" / "diagnoses.json").read_text())] == [("ana", {}), ("bea", {})]
    with (tmp_path / "notas" / "canvas.csv").open() as handle:
        assert [row["SIS User ID"] for row in csv.DictReader(handle)] == ["", "ana", "bea"]
    assert (tmp_path / "notas" / "moodle.csv").exists()
