"""term.toml: the late policy's arithmetic, due dates in their timezone, and the plugin
nbgrader asks for a penalty."""

from datetime import datetime

import pytest

from autograder.term import TERM_ENV, LatePolicy, TermLatePenalty, load_term, term_file

HOUR = 3600
POLICY = LatePolicy(percent_per_day=10, max_percent=50, grace_minutes=15, marker_hours=24)


@pytest.mark.parametrize("seconds_late, percent", [
    (0, 0), (15 * 60, 0),  # within the grace period
    (15 * 60 + 1, 10), (24 * HOUR, 10),  # each started day counts whole
    (24 * HOUR + 1, 20), (72 * HOUR, 30),
    (30 * 24 * HOUR, 50),  # the cap
])
def test_percent_per_started_day_after_the_grace_period_up_to_the_cap(seconds_late, percent):
    assert POLICY.percent(seconds_late) == percent


def test_the_penalty_is_a_share_of_the_points_earned():
    assert POLICY.penalty(6.5, 25 * HOUR) == 1.3
    assert POLICY.penalty(0.0, 25 * HOUR) == 0.0
    assert POLICY.penalty(6.5, 10 * 60) == 0.0


def _term(tmp_path, text):
    path = tmp_path / "term.toml"
    path.write_text(text)
    return path


def test_due_dates_are_read_in_the_terms_timezone_and_kept_in_utc(tmp_path):
    term = load_term(_term(tmp_path, 'timezone = "Europe/Madrid"\n[due]\n'
                                     "01_grafo_dinamico = 2027-02-19T23:59:00\n"
                                     "02_sin_grafo = 2027-07-01T12:00:00+00:00\n"
                                     "[late]\npercent_per_day = 5\nmarker_hours = 48\n"))
    assert term.due == {"01_grafo_dinamico": datetime(2027, 2, 19, 22, 59),  # CET = UTC+1
                        "02_sin_grafo": datetime(2027, 7, 1, 12, 0)}
    assert term.late == LatePolicy(percent_per_day=5, marker_hours=48)
    assert term.marker_time("01_grafo_dinamico") == datetime(2027, 2, 21, 22, 59)
    assert term.marker_time("03_acumulacion") is None  # no due date: never late


@pytest.mark.parametrize("text, complaint", [
    ("[due]\n01_grafo_dinamco = 2027-02-19T23:59:00\n", "01_grafo_dinamco"),
    ("[due]\n01_grafo_dinamico = 2027-02-19\n", "no time of day"),
    ("[late]\npercent_per_week = 5\n", "percent_per_week"),
])
def test_a_mistyped_term_is_refused_with_the_reason(tmp_path, text, complaint):
    with pytest.raises(ValueError, match=complaint):
        load_term(_term(tmp_path, text))


def test_the_repositorys_term_file_is_valid(monkeypatch):
    monkeypatch.delenv(TERM_ENV, raising=False)
    term = load_term()
    assert term_file().name == "term.toml" and term_file().exists()
    assert term.late.percent_per_day > 0


def test_the_plugin_applies_the_term_named_by_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(TERM_ENV, str(_term(tmp_path, "[late]\npercent_per_day = 25\n")))
    assert TermLatePenalty().late_submission_penalty("ana", 8.0, 2 * 24 * HOUR) == 4.0
