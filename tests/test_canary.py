"""The torch drift canary's verdict (autograder/canary.py) on a tiny fabricated course."""

import csv

import nbformat

from autograder.canary import check, render
from autograder.outcome import Status
from autograder.submissions import SampleStudent

ASSIGNMENT = "01_prueba"
CLASS = {ASSIGNMENT: [SampleStudent("ana", "referencia"),
                      SampleStudent("bruno", "esqueletos", use_reference=False, lost=("*",))]}


def _stream(name, text):
    return nbformat.v4.new_output("stream", name=name, text=text)


def _notebook(torch_version="2.14.1+cpu", test_stderr="", helper_stderr=""):
    helper = nbformat.v4.new_code_cell("mostrar_entorno()")
    helper.metadata["nbgrader"] = {"grade": False, "solution": False, "locked": True,
                                   "grade_id": "ch01_utilidades"}
    helper.outputs = [_stream("stdout", f"Entorno: local · torch {torch_version}\n")]
    if helper_stderr:
        helper.outputs.append(_stream("stderr", helper_stderr))
    test = nbformat.v4.new_code_cell("check_f(f)")
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True,
                                 "grade_id": "ch01_f_test", "points": 2}
    test.outputs = [_stream("stdout", "Pruebas ocultas de ch01_f: 2 / 2 puntos\n")]
    if test_stderr:
        test.outputs.append(_stream("stderr", test_stderr))
    return nbformat.v4.new_notebook(cells=[helper, test])


def _course(tmp_path, ana_points=2.0, **notebook):
    course = tmp_path / "course"
    for student in ("ana", "bruno"):
        path = course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(_notebook(**notebook), path)
    grades = tmp_path / "grades.csv"
    with grades.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "assignment", "status", "detail", "notes", "ch01_f_test",
                         "score", "max_score"])
        writer.writerow(["ana", ASSIGNMENT, Status.GRADED, "", "", ana_points, ana_points, 2.0])
        writer.writerow(["bruno", ASSIGNMENT, Status.GRADED, "", "", 0.0, 0.0, 2.0])
    return course, grades


def test_a_clean_run_passes(tmp_path):
    report = check(*_course(tmp_path), CLASS, expect_torch="2.14.1")
    assert report.failures == [] and report.notices == []
    assert report.kernel_torch == {"2.14.1+cpu"}
    assert "canary verdict: PASS" in render(report)


def test_stderr_in_a_graded_cell_fails_and_shows_the_warning(tmp_path):
    warning = "ejemplo.py:3: FutureWarning: `torch.algo` is deprecated\n"
    report = check(*_course(tmp_path, test_stderr=warning), CLASS)
    assert len(report.failures) == 2  # ana's and bruno's notebooks
    text = render(report)
    assert "graded cell 1 (ch01_f_test) wrote to stderr" in text
    assert "FutureWarning: `torch.algo` is deprecated" in text
    assert "canary verdict: FAIL" in text


def test_stderr_elsewhere_is_only_a_notice(tmp_path):
    report = check(*_course(tmp_path, helper_stderr="UserWarning: ruido\n"), CLASS)
    assert report.failures == []
    assert [n.what for n in report.notices] == ["cell 0 (ch01_utilidades) wrote to stderr"] * 2


def test_a_reference_student_without_full_marks_fails(tmp_path):
    report = check(*_course(tmp_path, ana_points=1.5), CLASS)
    whats = [f.what for f in report.failures if f.where == f"ana/{ASSIGNMENT}"]
    assert "reference answer without full marks: 1.5 / 2" in whats
    assert "ch01_f_test scored 1.5, expected 2" in whats


def test_a_missing_submission_fails(tmp_path):
    course, grades = _course(tmp_path)
    extra = {ASSIGNMENT: [*CLASS[ASSIGNMENT], SampleStudent("carla", "otra")]}
    report = check(course, grades, extra)
    assert [(f.where, f.what) for f in report.failures] == [
        (f"carla/{ASSIGNMENT}", "missing from grades.csv")]


def test_the_kernel_must_run_the_torch_under_test(tmp_path):
    report = check(*_course(tmp_path, torch_version="2.13.0+cpu"), CLASS, expect_torch="2.14.1")
    assert [f.what for f in report.failures] == ["ran torch 2.13.0+cpu, expected 2.14.1"]


def test_warnings_in_the_grader_log_are_notices(tmp_path):
    log = tmp_path / "grade.log"
    log.write_text("Grading with 2 worker(s):\n/x/torch/a.py:9: FutureWarning: old API\n"
                   "[AutogradeApp | WARNING] Helper cell ch01_utilidades was missing\n")
    report = check(*_course(tmp_path), CLASS, grader_log=log)
    assert report.failures == []
    assert [n.text for n in report.notices] == ["/x/torch/a.py:9: FutureWarning: old API"]
