"""End to end, chapter 1 only: `python -m autograder grade` on the sample class leaves the
instructor's course alone, and a manual override set in the gradebook (as the formgrader
does) survives a re-grade and shows in the exported grades file."""

import csv
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.course import ROOT, sqlite_gradebook
from autograder.outcome import Status

pytestmark = pytest.mark.slow
FIRST = "01_grafo_dinamico"
CELL = "manual_backward_test"  # bruno (the stubs) scores 0 there


def _digest(folder):
    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in folder.rglob("*") if p.is_file()}


def _rows(path):
    with path.open(newline="") as handle:
        return {(row["student"], row["assignment"]): row for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """A build folder whose instructor course already holds a secret, a gradebook and a
    submission; then `make grade`'s command on chapter 1."""
    build = tmp_path_factory.mktemp("build")
    course = build / "course"
    (course / "submitted" / "luisgomez" / FIRST).mkdir(parents=True)
    (course / "course_secret.txt").write_text("secreto del curso real\n")
    (course / "gradebook.db").write_text("el libro de calificaciones real")
    (build / "grades").mkdir()
    (build / "grades" / "grades.csv").write_text("student,assignment\nluisgomez,01\n")
    before = _digest(build)
    env = {**os.environ, "AUTOGRADER_BUILD_DIR": str(build), "AUTOGRADER_CHAPTERS": "01",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("AUTOGRADER_DB_URL", None)
    env.pop("COURSE_SECRET", None)

    def grade(*options):
        done = subprocess.run([sys.executable, "-m", "autograder", "grade", "--timeout", "10",
                               "--workers", "2", "--lines", *options], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    first = grade()
    return {"build": build, "before": before, "grade": grade, "env": env, "stdout": first}


def test_the_sample_class_never_touches_the_instructor_course(build):
    root = build["build"]
    assert {p: d for p, d in _digest(root).items()
            if p.parts[0] in ("course", "grades")} == build["before"]
    rows = _rows(root / "sample" / "grades" / "grades.csv")
    assert {student for student, _ in rows} >= {"ana", "bruno", "elena", "fede"}
    assert (root / "sample" / "course" / "autograded" / "ana" / FIRST).is_dir()
    assert "is not touched" in build["stdout"]


def test_a_manual_override_survives_a_regrade_and_is_exported(build):
    sample = build["build"] / "sample"
    url = sqlite_gradebook(sample / "course")
    with Gradebook(url) as gradebook:  # what the formgrader does when a grader edits a score
        grade = gradebook.find_grade(CELL, FIRST, FIRST, "bruno")
        assert grade.auto_score == 0 and grade.manual_score is None
        grade.manual_score = 1.25
        gradebook.db.commit()

    build["grade"]("--student", "bruno")

    with Gradebook(url) as gradebook:
        grade = gradebook.find_grade(CELL, FIRST, FIRST, "bruno")
        assert (grade.auto_score, grade.manual_score, grade.score) == (0, 1.25, 1.25)
    grades = sample / "grades" / "grades.csv"
    regraded = _rows(grades)[("bruno", FIRST)]
    assert regraded[CELL] == "1.25" and regraded["overrides"] == f"{CELL}: auto 0 → manual 1.25"

    done = subprocess.run([sys.executable, "-m", "autograder", "export", "--course-dir",
                           str(sample / "course"), "--out", str(grades)], cwd=ROOT,
                          env=build["env"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = _rows(grades)
    assert rows[("bruno", FIRST)][CELL] == "1.25"
    assert rows[("bruno", FIRST)]["overrides"] == f"{CELL}: auto 0 → manual 1.25"
    assert float(rows[("bruno", FIRST)]["score"]) == 1.25
    assert rows[("elena", FIRST)]["status"] == Status.TIMED_OUT  # grading's status, kept
    assert rows[("ana", FIRST)]["overrides"] == ""
