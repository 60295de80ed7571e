"""``python -m autograder probe DIR``: grade blind submissions through the hidden tests.

Reviewers who read only the student notebooks write answers to the exercises, one file
each, laid out as ``DIR/chNN/<function>/<correct|wrong>__<name>.py`` (the file defines the
function; a first comment line may say what it tries). Each is graded in process, as the
fairness report grades the corpus, for several students: a correct file must get full
marks for every one of them, a wrong one must lose points for every one of them. The
report lists every file that does not, with the diagnosis it got.
"""

import contextlib
import io
import warnings
from dataclasses import dataclass
from pathlib import Path

from autograder.course import chapter_named
from autograder.hidden.runner import grade_hidden
from autograder.tables import format_table

STUDENTS = ("ana", "bruno", "carla", "dario")
SECRET = "revision-a-ciegas"


@dataclass(frozen=True)
class Probe:
    chapter: str
    exercise: str
    path: Path
    correct: bool
    points: tuple  # per student
    maximum: float
    diagnosis: str  # the first student's

    @property
    def fair(self):
        if self.correct:
            return all(p == self.maximum for p in self.points)
        return all(p < self.maximum for p in self.points)


def _load(path, exercise):
    namespace = {"__name__": f"probe_{path.stem}"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102
    return namespace[exercise]


def _raiser(error):
    def function(*args, **kwargs):
        raise error
    return function


def grade_probe(path):
    chapter_key, exercise = path.parent.parent.name, path.parent.name
    label = path.name.split("__", 1)[0]
    hidden = chapter_named(chapter_key).module("hidden").HIDDEN
    try:
        function = _load(path, exercise)
    except Exception as error:  # noqa: BLE001 - a file that cannot load scores nothing
        function = _raiser(error)
    points, diagnosis = [], "—"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        for student in STUDENTS:
            result = grade_hidden(exercise, hidden, function, student, SECRET)
            points.append(result.puntos)
            if student == STUDENTS[0]:
                diagnosis, maximum = result.diagnostico or "—", result.maximo
    return Probe(chapter_key, exercise, path, label == "correct", tuple(points), maximum,
                 diagnosis)


def probes(folder):
    return [grade_probe(path) for path in sorted(Path(folder).glob("ch*/*/*__*.py"))]


def report(results):
    correct = [r for r in results if r.correct]
    wrong = [r for r in results if not r.correct]
    rows = [("chapter", "exercise", "file", "points", "diagnosis")]
    rows += [(r.chapter, r.exercise, r.path.name, "/".join(f"{p:g}" for p in r.points)
              + f" of {r.maximum:g}", r.diagnosis) for r in results if not r.fair]
    lines = format_table(rows) if len(rows) > 1 else ["every file graded as labelled"]
    lines += ["", f"correct at full marks for every student: "
                  f"{sum(r.fair for r in correct)}/{len(correct)}",
              f"wrong below full marks for every student: {sum(r.fair for r in wrong)}/"
              f"{len(wrong)} ({sum(r.fair for r in wrong) / max(1, len(wrong)):.0%})"]
    return "\n".join(lines)
