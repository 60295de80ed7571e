"""What grading one submission produced, and its status in words (spelled here only)."""

from dataclasses import dataclass, field

STATUS_TEXT = {
    "graded": "calificada",
    "timed out": "una celda superó el tiempo límite y se interrumpió",
    "crashed": "una celda terminó el proceso de Python; se omitió y se calificó el resto",
    "tampering detected": "se detectó una manipulación; los ejercicios afectados no puntúan",
    "unreadable": "el cuaderno entregado no se pudo leer",
    "kernel died": "el kernel se cerró durante la ejecución: la entrega no pudo calificarse",
    "grader crashed": "el proceso que la calificaba murió dos veces: la entrega no pudo "
                      "calificarse",
    "grader error": "error al calificar",
}
# Statuses with nothing graded: every exercise scores 0, whatever the gradebook held before.
UNGRADED = ("kernel died", "grader crashed", "grader error", "unreadable")


@dataclass
class Outcome:
    """What grading one submission produced."""

    student: str
    assignment: str
    status: str = "graded"
    detail: str = ""
    scores: dict = field(default_factory=dict)  # grade cell id -> points
    max_scores: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)  # repairs made on intake, in Spanish
    timings: dict = field(default_factory=dict, compare=False)  # seconds, for the benchmark

    @property
    def score(self):
        return sum(self.scores.values())

    @property
    def max_score(self):
        return sum(self.max_scores.values())
