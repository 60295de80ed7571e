"""Chapter 6's attack corpus (``autograder.adversarial.CH06_CASES``) through the real
pipeline, in one batch with the honest student, with two workers and with one: no attacker
gets a point it did not earn, nothing of the course, of another student or of the grader
reaches a feedback page or the grader's own output, every student has a row, and the honest
student has full marks. Needs the OS sandbox (``autograder.sandbox``)."""

import csv

import pytest

from autograder.adversarial import CH06, CH06_CASES, FORGED_LINE, case_failures, grade_corpus
from autograder.hidden.seeds import SECRET_FILE
from autograder.outcome import NO_PROTECTION_RECORD, UNGRADED, Status, protection_text
from autograder.sample_class import SAMPLE_CLASS
from autograder.sandbox import isolation

pytestmark = pytest.mark.slow
HONEST = SAMPLE_CLASS[CH06][0]


@pytest.fixture(scope="module", params=[2, 1], ids=lambda w: f"{w}w")
def graded(request, tmp_path_factory):
    assert isolation().active, f"these tests need the OS sandbox: {isolation().detail}"
    root = tmp_path_factory.mktemp(f"adversarial_ch06_{request.param}")
    return grade_corpus(root, CH06_CASES, request.param, CH06), root


def test_every_student_has_a_row_and_the_honest_one_full_marks(graded):
    by_student, root = graded
    assert set(by_student) == {c.student_id for c in CH06_CASES} | {HONEST.student_id}
    honest = by_student[HONEST.student_id]
    assert honest.status == Status.GRADED and honest.score == honest.max_score > 0
    with (root / "out" / "grades.csv").open(newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(by_student)
    full = protection_text(["bubblewrap", "seccomp", "guard"])
    for student, outcome in by_student.items():
        expected = NO_PROTECTION_RECORD if outcome.status in UNGRADED else full
        assert rows[student]["protection"] == expected, student


def test_no_undeserved_points_and_a_reason_for_each_case(graded):
    by_student, _ = graded
    assert not [f for case in CH06_CASES for f in case_failures(case, by_student[case.student_id])]


def test_nothing_of_the_course_or_the_grader_reaches_a_page_or_the_graders_output(graded):
    by_student, root = graded
    secret = (root / "course" / SECRET_FILE).read_text().strip()
    output = (root / "grader_output.txt").read_text(errors="replace")
    assert f"{HONEST.student_id}/{CH06}:" in output  # the grader's own lines are there
    assert FORGED_LINE not in output and "\x1b[2J" not in output
    for student in by_student:
        page = (root / "out" / "feedback" / student / f"{CH06}.html").read_text()
        assert secret not in page and "BEGIN SOLUTION" not in page, student
        assert "Calificado con:" in page
        if student != "c6_descriptores":
            assert FORGED_LINE not in page, student
