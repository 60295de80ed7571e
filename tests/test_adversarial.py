"""The adversarial corpus through the real pipeline, in one batch with an honest student."""

import pytest

from autograder.adversarial import ASSIGNMENT, CASES, write_corpus
from autograder.pipeline import grade, prepare_course
from autograder.sample_class import SAMPLE_CLASS, submission

pytestmark = pytest.mark.slow
HONEST = SAMPLE_CLASS[ASSIGNMENT][0]  # the reference solution


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    import nbformat

    root = tmp_path_factory.mktemp("adversarial")
    course = root / "course"
    prepare_course(course)
    submissions = write_corpus(course, root / "submissions")
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    folder = submissions / HONEST.student_id / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(submission(HONEST, source, release), folder / f"{ASSIGNMENT}.ipynb")
    graded = grade(submissions, root / "out", course_dir=course, timeout=10,
                   progress=lambda line: None, workers=2)
    return {o.student: o for o in graded}, root / "out"


def test_every_case_and_the_honest_student_have_an_outcome(outcomes):
    by_student, _ = outcomes
    assert set(by_student) == {c.student_id for c in CASES} | {HONEST.student_id}
    assert not [s for s, o in by_student.items() if o.status in ("grader error", "kernel died")]


def test_the_honest_student_is_graded_correctly(outcomes):
    honest = outcomes[0][HONEST.student_id]
    assert honest.status == "graded" and honest.score == honest.max_score == 8


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.student_id)
def test_no_undeserved_points_and_a_reason_for_each_case(outcomes, case):
    outcome = outcomes[0][case.student_id]
    assert outcome.status == case.status, (outcome.status, outcome.detail, outcome.notes)
    for cell, maximum in outcome.max_scores.items():
        allowed = case.max_points.get(cell, maximum)
        assert outcome.scores[cell] <= allowed, f"{cell}: {outcome.scores[cell]} > {allowed}"
        if cell not in case.max_points:  # what the trick did not touch is graded normally
            assert outcome.scores[cell] == maximum, f"{cell}: {outcome.scores[cell]}"
    said = " ".join([outcome.detail, *outcome.notes])
    assert case.reason in said, said


def test_each_case_has_spanish_feedback(outcomes):
    by_student, out = outcomes
    for student, outcome in by_student.items():
        page = (out / "feedback" / student / f"{ASSIGNMENT}.html").read_text()
        assert "BEGIN HIDDEN TESTS" not in page and "autograder.checks" not in page
        if outcome.status != "graded":
            assert "Estado:" in page or outcome.status == "unreadable"
