"""The instructor's private data: the sample class is graded apart from the real course,
`make clean` and `reset-course` never lose the secret or a gradebook, grades files are
ignored by git, and `export` writes the one grades file to upload (points from the
gradebook with manual overrides, status and notes from grading)."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder import __main__ as cli
from autograder import course
from autograder.clean import clean
from autograder.course import COURSE_DIR, GRADES_DIR, ROOT, SAMPLE_COURSE_DIR, SAMPLE_GRADES_DIR
from autograder.outcome import Status
from autograder.reset import reset_course


@pytest.fixture
def recorded_grade_run(monkeypatch):
    """`python -m autograder grade` with nothing graded: the folders it was handed."""
    import autograder.pipeline
    import autograder.sample_class
    import autograder.sample_generated
    import autograder.sandbox

    calls = {}

    def fake_grade(submissions, out, course_dir, db_url, **options):
        calls.update(submissions=submissions, out=out, course_dir=course_dir, db_url=db_url)
        return []

    monkeypatch.setattr(autograder.pipeline, "grade", fake_grade)
    monkeypatch.setattr(autograder.pipeline, "prepare_course",
                        lambda course_dir, db_url: calls.update(prepared=course_dir))
    monkeypatch.setattr(autograder.sample_class, "write_sample_class",
                        lambda course_dir, destination: destination)
    monkeypatch.setattr(autograder.sample_generated, "grade_in_background",
                        lambda course_dir, shard: ("graded from", course_dir))
    monkeypatch.setattr(autograder.sample_generated, "add_generated",
                        lambda course_dir, out, db_url, shard, pending: calls.update(
                            generated=(course_dir, out, db_url, pending)) or [])
    monkeypatch.setattr(autograder.sandbox, "isolation",
                        lambda: autograder.sandbox.Isolation(True, "prueba"))
    return calls


def test_the_sample_class_is_graded_in_a_course_of_its_own(recorded_grade_run, monkeypatch):
    monkeypatch.setenv(course.DB_URL_ENV, "postgresql://grader@server/curso")
    assert cli.main(["grade"]) == 0
    calls = recorded_grade_run
    assert calls["prepared"] == calls["course_dir"] == SAMPLE_COURSE_DIR
    assert calls["out"] == SAMPLE_GRADES_DIR
    assert calls["submissions"].is_relative_to(course.SAMPLE_DIR)
    # not the shared gradebook either: the sample's own file
    assert calls["db_url"] == course.sqlite_gradebook(SAMPLE_COURSE_DIR)
    # the generated rest of the class too
    assert calls["generated"] == (calls["course_dir"], calls["out"], calls["db_url"],
                                  ("graded from", calls["course_dir"]))
    for instructors in (COURSE_DIR, GRADES_DIR):
        assert not any(p.is_relative_to(instructors) for p in (
            calls["course_dir"], calls["out"], calls["submissions"]))


def test_the_sample_class_refuses_the_instructor_course(recorded_grade_run, capsys):
    assert cli.main(["grade", "--course-dir", str(COURSE_DIR)]) == 2
    assert cli.main(["grade", "--out", str(GRADES_DIR)]) == 2
    assert "never graded into" in capsys.readouterr().err
    assert recorded_grade_run == {}


def test_a_real_class_is_graded_in_the_instructor_course(recorded_grade_run, tmp_path):
    (tmp_path / "ana").mkdir()
    assert cli.main(["grade", "--submissions", str(tmp_path)]) == 0
    assert recorded_grade_run["course_dir"] == COURSE_DIR
    assert recorded_grade_run["out"] == GRADES_DIR
    assert "prepared" not in recorded_grade_run and "generated" not in recorded_grade_run


def _course(tmp_path):
    build = tmp_path / "build"
    course_dir = build / "course"
    for folder in ("source/01", "release/01", "submitted/ana/01", "autograded/ana/01",
                   "replaced/ana/01/20261204T100000Z"):  # collect-lms's older copy
        (course_dir / folder).mkdir(parents=True)
    (course_dir / "course_secret.txt").write_text("secreto\n")
    (course_dir / "grades.csv").write_text("student_id\nana\n")  # `nbgrader export`
    (course_dir / "gradebook.db").write_text("notas de la clase")
    (build / "grades").mkdir()
    (build / "grades" / "grades.csv").write_text("student\nana\n")
    for folder in ("sample/course", "bench"):
        (build / folder).mkdir(parents=True)
    return build, course_dir


def test_reset_course_keeps_the_secret_and_moves_the_class_aside(tmp_path):
    build, course_dir = _course(tmp_path)
    said = reset_course(course_dir, build / "grades", stamp="20261204-1000")
    archive = build / "archive" / "20261204-1000"
    assert (course_dir / "course_secret.txt").read_text() == "secreto\n"
    assert (archive / "course" / "gradebook.db").read_text() == "notas de la clase"
    assert (archive / "course" / "submitted" / "ana" / "01").is_dir()
    assert (archive / "course" / "replaced" / "ana" / "01").is_dir()
    assert (archive / "course" / "grades.csv").read_text() == "student_id\nana\n"
    assert (archive / "grades" / "grades.csv").read_text() == "student\nana\n"
    assert sorted(p.name for p in course_dir.iterdir()) == [
        "course_secret.txt", "release", "source"]
    assert not (build / "grades").exists()
    text = "\n".join(said)
    assert f"kept {course_dir / 'course_secret.txt'}" in text
    assert f"moved {course_dir / 'gradebook.db'} to {archive / 'course' / 'gradebook.db'}" in text


def test_reset_course_leaves_a_server_gradebook_alone(tmp_path, monkeypatch, capsys):
    build, course_dir = _course(tmp_path)
    monkeypatch.setenv(course.DB_URL_ENV, "postgresql://grader@server/curso")
    assert cli.main(["reset-course", "--course-dir", str(course_dir)]) == 2
    assert "server" in capsys.readouterr().err
    assert (course_dir / "gradebook.db").exists()


def test_clean_removes_what_is_regenerated_and_says_what_it_kept(tmp_path):
    build, course_dir = _course(tmp_path)
    said = []
    clean(build, say=said.append)
    assert sorted(p.name for p in build.iterdir()) == ["course", "grades"]
    kept = ["autograded", "course_secret.txt", "gradebook.db", "grades.csv", "replaced",
            "submitted"]
    assert sorted(p.name for p in course_dir.iterdir()) == kept
    text = "\n".join(said)
    for name in kept:
        assert f"kept {course_dir / name} (" in text, name
    assert f"kept {build / 'grades'} (" in text
    assert f"removed {build / 'sample'}" in text and "make clean-private" in text


def test_clean_private_deletes_everything_naming_the_private_data(tmp_path):
    build, course_dir = _course(tmp_path)
    said = []
    clean(build, private=True, say=said.append)
    assert not build.exists()
    assert f"deleting {course_dir / 'course_secret.txt'}" in "\n".join(said)
    assert f"deleting {course_dir / 'gradebook.db'}" in "\n".join(said)
    assert f"deleting {course_dir / 'replaced'}" in "\n".join(said)


def test_what_reset_course_archives_make_clean_keeps_and_names():
    from autograder.clean import PRIVATE
    from autograder.reset import CLASS_ENTRIES

    assert {f"course/{name}" for name in CLASS_ENTRIES} <= set(PRIVATE)


def test_the_makefile_cleans_through_the_module_that_keeps_private_data():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nclean:\n", 1)[1].split("\n\n", 1)[0]
    assert "-m autograder.clean" in recipe and "rm " not in recipe and "--private" not in recipe


def test_grades_files_and_secrets_are_ignored_by_git_anywhere():
    names = ["grades.csv", "notas.csv", "build/grades/grades.csv", "docs/calificaciones.csv",
             "course_secret.txt", "gradebook.db", "gradebook-20261204.db", "diagnoses.json",
             "out/diagnoses.json", "informe/informe.html"]
    done = subprocess.run(["git", "check-ignore", "--no-index", *names], cwd=ROOT,
                          capture_output=True, text=True)
    assert sorted(done.stdout.split()) == sorted(names)
    tracked_but_ignored = subprocess.run(
        ["git", "ls-files", "--cached", "--ignored", "--exclude-standard"], cwd=ROOT,
        capture_output=True, text=True).stdout
    assert tracked_but_ignored == ""


CELLS = {"f_test": 2.0, "g_test": 1.0}


def _gradebook(course_dir, scores):
    """A gradebook as grading and the formgrader leave it: scores = student ->
    cell -> (auto_score, manual_score)."""
    course_dir.mkdir(parents=True)
    with Gradebook(course.sqlite_gradebook(course_dir)) as gradebook:
        gradebook.add_assignment("01")
        gradebook.add_notebook("01", "01")
        for cell, points in CELLS.items():
            gradebook.add_grade_cell(cell, "01", "01", max_score=points, cell_type="code")
        for student, cells in scores.items():
            gradebook.add_student(student)
            gradebook.add_submission("01", student)
            for cell, (auto, manual) in cells.items():
                grade = gradebook.find_grade(cell, "01", "01", student)
                grade.auto_score, grade.manual_score = auto, manual
            gradebook.db.commit()


def _rows(path):
    with path.open(newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def test_export_joins_gradebook_points_overrides_and_grading_statuses(tmp_path, monkeypatch):
    monkeypatch.delenv(course.DB_URL_ENV, raising=False)
    # nbgrader runs `alembic` from PATH to create a gradebook
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    course_dir, grades = tmp_path / "course", tmp_path / "grades" / "grades.csv"
    _gradebook(course_dir, {
        "ana": {"f_test": (2.0, None), "g_test": (1.0, None)},
        "bruno": {"f_test": (0.0, 1.5), "g_test": (0.0, None)},  # set by hand in formgrader
        "carla": {"f_test": (2.0, None), "g_test": (1.0, None)},  # stale: her kernel died
        "dora": {"f_test": (2.0, None), "g_test": (0.0, None)},  # another machine's shard
    })
    grades.parent.mkdir()
    with grades.open("w", newline="") as handle:  # what `grade` wrote
        writer = csv.writer(handle)
        writer.writerow(["student", "assignment", "status", "detail", "notes", "f_test",
                         "g_test", "score", "max_score"])
        writer.writerow(["ana", "01", Status.GRADED, "", "cuaderno renombrado", 2, 1, 3, 3])
        writer.writerow(["bruno", "01", Status.GRADED, "", "", 0, 0, 0, 3])
        writer.writerow(["carla", "01", Status.KERNEL_DIED, "memoria", "", 0, 0, 0, 3])
        writer.writerow(["eva", "01", Status.UNREADABLE, "JSON roto", "", 0, 0, 0, 3])

    assert cli.main(["export", "--course-dir", str(course_dir), "--out", str(grades)]) == 0

    rows = _rows(grades)
    assert list(rows) == ["ana", "bruno", "carla", "dora", "eva"]
    assert (rows["ana"]["status"], rows["ana"]["notes"], rows["ana"]["score"]) == (
        Status.GRADED, "cuaderno renombrado", "3.0")
    assert (rows["bruno"]["f_test"], rows["bruno"]["score"]) == ("1.5", "1.5")
    assert rows["bruno"]["overrides"] == "f_test: auto 0 → manual 1.5"
    assert (rows["carla"]["status"], rows["carla"]["score"]) == (Status.KERNEL_DIED, "0.0")
    assert (rows["dora"]["status"], rows["dora"]["score"]) == (Status.RECORDED, "2.0")
    assert (rows["eva"]["status"], rows["eva"]["detail"]) == (Status.UNREADABLE, "JSON roto")
    assert rows["ana"]["overrides"] == rows["eva"]["overrides"] == ""
