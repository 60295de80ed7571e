"""What grading one submission produced, and its status (spelled here only, with its words)."""

import enum
from dataclasses import dataclass, field


class Status(str, enum.Enum):
    """How grading a submission ended. The value is what grades.csv and the summary show;
    ``text`` says it to a student, in Spanish."""

    GRADED = "graded", "calificada"
    TIMED_OUT = "timed out", "una celda superó el tiempo límite y se interrumpió"
    CRASHED = ("crashed",
               "una celda terminó el proceso de Python; se omitió y se calificó el resto")
    TAMPERING = ("tampering detected",
                 "se detectó una manipulación; los ejercicios afectados no puntúan")
    UNREADABLE = "unreadable", "el cuaderno entregado no se pudo leer"
    KERNEL_DIED = ("kernel died",
                   "el kernel se cerró durante la ejecución: la entrega no pudo calificarse")
    GRADER_CRASHED = ("grader crashed", "el proceso que la calificaba murió en cada intento: "
                      "la entrega no pudo calificarse")
    GRADER_ERROR = "grader error", "error al calificar"
    RECORDED = "recorded", "registrada en el libro de calificaciones"  # read back, not graded

    def __new__(cls, value, text):
        member = str.__new__(cls, value)
        member._value_ = value
        member.text = text
        return member

    # The plain value wherever it is written (f-strings, CSV), on every Python version.
    def __str__(self):
        return self.value

    def __format__(self, spec):
        return format(self.value, spec)


# Nothing graded: every exercise scores 0, whatever the gradebook held before.
UNGRADED = frozenset({Status.KERNEL_DIED, Status.GRADER_CRASHED, Status.GRADER_ERROR,
                      Status.UNREADABLE})
# An autograded notebook to show: the feedback page is nbgrader's, not the plain one.
SHOWS_NOTEBOOK = frozenset({Status.GRADED, Status.TIMED_OUT, Status.CRASHED, Status.TAMPERING})
# Their detail is for the grades file, too long or technical for the summary table.
DETAIL_NOT_SUMMARISED = frozenset({Status.KERNEL_DIED, Status.GRADER_ERROR})


# The protections a grading kernel ran under (``Facts.protection``, recorded by the grader).
PROTECTION_WORDS = {"bubblewrap": "aislamiento del sistema operativo (bubblewrap)",
                    "seccomp": "filtro de llamadas al sistema (seccomp)",
                    "guard": "guardián dentro del kernel"}
NO_PROTECTION_RECORD = "sin registro: el cuaderno no llegó a ejecutarse"


def protection_text(layers):
    """The protections that graded a submission, in Spanish; says so when the operating
    system's were missing."""
    words = [PROTECTION_WORDS[layer] for layer in PROTECTION_WORDS if layer in layers]
    if not words:
        return NO_PROTECTION_RECORD
    text = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " y " + words[-1]
    if "bubblewrap" not in layers:
        text += " (SIN aislamiento del sistema operativo)"
    return text


@dataclass
class Outcome:
    """What grading one submission produced."""

    student: str
    assignment: str
    status: Status = Status.GRADED
    detail: str = ""  # in Spanish: which cell, what tampering, why unreadable
    scores: dict = field(default_factory=dict)  # grade cell id -> points
    max_scores: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)  # repairs made on intake, in Spanish
    # grade cell id -> (autograder's points, instructor's): scores set by hand in the
    # formgrader, which nbgrader keeps over re-grades and counts instead of the autograder's
    overrides: dict = field(default_factory=dict)
    late_penalty: float = 0.0  # points off for lateness (nbgrader's, ``autograder.term``)
    protection: str = NO_PROTECTION_RECORD  # what the kernel ran under (``protection_text``)
    timings: dict = field(default_factory=dict, compare=False)  # seconds, for the benchmark
    # exercise id -> what its hidden test found, part by part, with each failure's
    # diagnosis and facts (``facts.Facts.hidden_tests``): what the class report adds up
    hidden_tests: dict = field(default_factory=dict, compare=False)

    def record(self, grade):
        """One graded cell as the gradebook holds it (an nbgrader ``Grade``): its points, a
        manual override where the instructor set one. Autograded points of a submission
        that was not graded this time are stale, and count 0."""
        self.max_scores[grade.name] = grade.max_score
        if grade.manual_score is not None:
            self.overrides[grade.name] = (grade.auto_score, grade.manual_score)
            self.scores[grade.name] = float(grade.score)
        else:
            self.scores[grade.name] = 0.0 if self.status in UNGRADED else float(
                grade.score or 0.0)

    @property
    def score(self):
        """The points, after the late penalty (as nbgrader's own export counts them)."""
        return max(0.0, sum(self.scores.values()) - self.late_penalty)

    @property
    def max_score(self):
        return sum(self.max_scores.values())
