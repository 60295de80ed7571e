"""nbgrader's own ``zip_collect`` (docs/instructor.md: the stock alternative to ``collect-lms``): a
Canvas zip, with a renamed late resubmission, extracted by the course's file-name pattern and
graded in the course's submitted/ folder. The rest of the term (re-grades, exports) is
tests/test_term_end_to_end.py's."""

import csv
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.__main__ import main
from autograder.course import chapter_named
from autograder.outcome import Status
from autograder.pipeline import grade, prepare_course
from autograder.submissions import fill_solutions, solution_code

pytestmark = pytest.mark.slow


def _rows(path):
    with path.open(newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def nbgrader(*args, course):
    scripts = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": scripts + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_a_canvas_zip_through_nbgrader_zip_collect_is_graded(tmp_path):
    chapter = chapter_named("01")
    name = chapter.name
    course = tmp_path / "course"
    prepare_course(course, selected=[chapter])
    source = nbformat.read(course / "source" / name / f"{name}.ipynb", 4)
    release = nbformat.read(course / "release" / name / f"{name}.ipynb", 4)
    solved = fill_solutions(release, solution_code(source))

    archive = course / "downloaded" / name / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "submissions.zip", "w") as bundle:
        bundle.writestr(f"anaperez_1234_5678_{name}.ipynb", nbformat.writes(solved))
        # A late resubmission that Canvas renamed; the student never touched the stubs.
        bundle.writestr(f"luisgomez_late_2345_6789_{name}-1.ipynb", nbformat.writes(release))
    nbgrader("zip_collect", name, course=course)
    submitted = course / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["anaperez", "luisgomez"]

    stamp = submitted / "anaperez" / name / "timestamp.txt"  # as nbgrader collect writes
    stamp.write_text("2026-12-01 10:00:00.000000 UTC")
    out = tmp_path / "grades"
    outcomes = {o.student: o for o in grade(submitted, out, course_dir=course, timeout=10,
                                            progress=None)}
    assert outcomes["anaperez"].score == outcomes["anaperez"].max_score > 0
    assert outcomes["luisgomez"].score == 0
    assert {o.status for o in outcomes.values()} == {Status.GRADED}
    for folder in ("submitted", "autograded"):  # late penalties read it there
        assert (course / folder / "anaperez" / name / "timestamp.txt").read_text() == \
            stamp.read_text()


def test_regrading_a_student_without_submissions_says_so(tmp_path, capsys):
    (tmp_path / "submitted" / "anaperez").mkdir(parents=True)
    assert main(["grade", "--submissions", str(tmp_path / "submitted"),
                 "--student", "luisgomes"]) == 2
    assert "luisgomes" in capsys.readouterr().err
