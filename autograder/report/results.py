"""The diagnoses of a grading run, beside its ``grades.csv``: ``diagnoses.json``.

The gradebook holds points only, and ``grades.csv`` the status and notes; what each
hidden test found part by part (diagnosis ids and facts, ``Outcome.hidden_tests``) is
written here by ``grade`` on every machine, and read back by ``report`` from each run's
results, like the statuses ``export`` keeps (``--results``)."""

import json
from pathlib import Path

DIAGNOSES_FILE = "diagnoses.json"


def diagnoses_path(grades_csv):
    return Path(grades_csv).with_name(DIAGNOSES_FILE)


def read_diagnoses(*paths):
    """(student, assignment) -> hidden tests, from the files that exist; a later file wins."""
    found = {}
    for path in paths:
        if Path(path).exists():
            for entry in json.loads(Path(path).read_text()):
                found[(entry["student"], entry["assignment"])] = entry["hidden_tests"]
    return found


def write_diagnoses(outcomes, path, update=False):
    """One entry per submission of ``outcomes``; with ``update`` the file's other entries
    are kept (a re-grade of a few students)."""
    found = read_diagnoses(path) if update else {}
    found.update({(o.student, o.assignment): o.hidden_tests for o in outcomes})
    entries = [{"student": s, "assignment": a, "hidden_tests": tests}
               for (s, a), tests in sorted(found.items())]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(entries, ensure_ascii=False, indent=0) + "\n")
    return Path(path)


def attach(outcomes, diagnoses):
    """Give each Outcome its hidden tests from ``read_diagnoses``."""
    for o in outcomes:
        o.hidden_tests = diagnoses.get((o.student, o.assignment), o.hidden_tests)
    return outcomes
