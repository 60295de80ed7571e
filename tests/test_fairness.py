"""The fairness report over every chapter: CI fails unless grading is fair to the corpus."""

from autograder.fairness import MIN_DIAGNOSED, fairness_rows, report, summary


def test_fairness_report_passes():
    rows = fairness_rows()
    text = report(rows)
    result = summary(rows)
    assert result["correct_full"][0] == result["correct_full"][1], text
    assert result["wrong_below_full"][0] == result["wrong_below_full"][1], text
    assert result["diagnosed"] >= MIN_DIAGNOSED, text
    assert result["passed"] and "FAIRNESS: PASS" in text
