"""The fairness report over every chapter: CI fails unless grading is fair to the corpus."""

from autograder.fairness import (
    MIN_DIAGNOSED,
    draw_misses,
    fairness_rows,
    misses_report,
    report,
    summary,
)


def test_fairness_report_passes():
    rows = fairness_rows()
    text = report(rows)
    result = summary(rows)
    assert result["correct_full"][0] == result["correct_full"][1], text
    assert result["wrong_below_full"][0] == result["wrong_below_full"][1], text
    assert result["diagnosed"] >= MIN_DIAGNOSED, text
    assert result["passed"] and "FAIRNESS: PASS" in text


# Fixed, so that CI is deterministic; ``fairness --draws N`` draws fresh ones.
MORE_SECRETS = ("sorteo-de-clase-1", "sorteo-de-clase-2")


def test_correct_variants_keep_full_marks_under_other_draws_on_one_thread():
    misses = draw_misses(MORE_SECRETS)
    assert not misses, misses_report(misses, len(MORE_SECRETS))
