"""The term: due dates and the late-submission policy, read from ``term.toml`` at the
repository root (``$AUTOGRADER_TERM`` names another file), the one place they are set.

The build writes each assignment's due date into the gradebook (``record_due_date``);
nbgrader computes how late a submission is from its ``timestamp.txt``, and its
``AssignLatePenalties`` asks ``TermLatePenalty`` (the plugin ``nbgrader_config.py`` names)
what that costs. LMS intake (``autograder.lms``) asks what a bare "late" marker stands for.
"""

import math
import os
from dataclasses import dataclass, fields
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from nbgrader.plugins import LateSubmissionPlugin

from autograder.course import CHAPTER_FILE_RE, ROOT, SOLUTIONS_DIR

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli comes with jupytext
    import tomli as tomllib

TERM_ENV = "AUTOGRADER_TERM"
DAY_S = 24 * 3600


def term_file():
    return Path(os.environ.get(TERM_ENV) or ROOT / "term.toml")


@dataclass(frozen=True)
class LatePolicy:
    """What lateness costs: ``percent_per_day`` of the points earned for each started day
    after the due date, at most ``max_percent``; nothing within ``grace_minutes``.
    ``marker_hours``: how late a bare LMS "late" marker (no submission time) counts."""

    percent_per_day: float = 0.0
    max_percent: float = 100.0
    grace_minutes: float = 0.0
    marker_hours: float = 24.0

    def is_late(self, seconds_late):
        return seconds_late > self.grace_minutes * 60

    def percent(self, seconds_late):
        if not self.is_late(seconds_late):
            return 0.0
        return min(self.max_percent, math.ceil(seconds_late / DAY_S) * self.percent_per_day)

    def penalty(self, score, seconds_late):
        """Points taken off a submission that earned ``score``, ``seconds_late`` after its
        due date (never more than the score)."""
        return round(max(0.0, score) * self.percent(seconds_late) / 100, 2)


@dataclass(frozen=True)
class Term:
    due: dict  # assignment name -> due date, naive UTC (as nbgrader's gradebook keeps it)
    late: LatePolicy

    def marker_time(self, assignment):
        """The submission time a bare "late" marker stands for (naive UTC), or None when
        the assignment has no due date (then nothing is late)."""
        due = self.due.get(assignment)
        return None if due is None else due + timedelta(hours=self.late.marker_hours)


def _utc(value, zone, where):
    if isinstance(value, date) and not isinstance(value, datetime):
        raise ValueError(f"{where}: {value} has no time of day; write e.g. {value}T23:59:00")
    if not isinstance(value, datetime):
        raise ValueError(f"{where}: expected a date and time, got {value!r}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone)
    return value.astimezone(timezone.utc).replace(tzinfo=None)


def load_term(path=None):
    """The term file, checked: a known timezone, due dates of assignments that exist,
    only the policy's own keys. A missing file is a term without due dates."""
    path = Path(path or term_file())
    if not path.exists():
        return Term({}, LatePolicy())
    data = tomllib.loads(path.read_text())
    zone = ZoneInfo(data.get("timezone", "UTC"))
    assignments = {p.stem for p in SOLUTIONS_DIR.glob("*.py") if CHAPTER_FILE_RE.match(p.name)}
    unknown = set(data.get("due", {})) - assignments
    if unknown:
        raise ValueError(f"{path} [due]: no assignment named {sorted(unknown)} "
                         f"(known: {sorted(assignments)})")
    known_keys = {f.name for f in fields(LatePolicy)}
    late = data.get("late", {})
    if set(late) - known_keys:
        raise ValueError(f"{path} [late]: unknown {sorted(set(late) - known_keys)} "
                         f"(known: {sorted(known_keys)})")
    due = {name: _utc(value, zone, f"{path} [due] {name}")
           for name, value in data.get("due", {}).items()}
    return Term(due, LatePolicy(**{k: float(v) for k, v in late.items()}))


def record_due_date(gradebook, assignment, term=None):
    """Write the term's due date of ``assignment`` (or none) into an open gradebook."""
    term = term or load_term()
    gradebook.update_or_create_assignment(assignment, duedate=term.due.get(assignment))


class TermLatePenalty(LateSubmissionPlugin):
    """nbgrader's late-penalty plugin with the term's policy
    (``c.AssignLatePenalties.plugin_class``). nbgrader calls it for a submission whose
    timestamp is after its assignment's due date, and records the points it returns as
    the notebook's ``late_submission_penalty``."""

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return load_term().late.penalty(score, total_seconds_late)
