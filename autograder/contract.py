"""An exercise's contract as numbered clauses: one fact each, what the student reads and
what the hidden tests check, kept in one place.

Each chapter's ``autograder/chapters/chNN/contract.py`` holds ``CLAUSES``: function name ->
a tuple of ``Clause``. The build renders them, numbered, into the exercise's docstring where
the source has the line ``<contrato>`` (``render_docstring``), so the notebook shows exactly
the list the tests hold to. Every clause names:

- ``cases``: the hidden cases that check it. ``EVERY_CASE`` when every case does (a return
  type, a value compared on every input); otherwise ``(dimension, value)`` pairs of the
  exercise's ``Space`` (``autograder.hidden.space``), each of which every student's draws
  must meet: the clause about a partial last cycle names ``("accum.partial_cycle", True)``;
- ``violated_by``: the corpus variants (``variants.py``) that break this clause and no other,
  which the contract tests require to lose points.

``tests/chapters/test_clauses.py`` holds every exercise to this; the fairness report prints
each clause with the points of the variants that break it, and the graded feedback cites the
clause a mistake breaks (``clauses_by_failure``).
"""

import functools
import re
import textwrap
from dataclasses import dataclass

EVERY_CASE = "todos"
PLACEHOLDER = "<contrato>"
HEADING = "Contrato (cada cláusula la comprueba una prueba oculta):"
WIDTH = 92  # the docstring's lines, indentation included, as the sources' ruff limit allows
# Diagnoses that say nothing about which clause was broken (a crash, a stub, a fixed answer).
GENERIC_DIAGNOSES = frozenset({
    "excepcion", "sin_implementar", "sin_definir", "resultado_fijo", "resultado_constante",
    "no_reconocido", "manipulacion", "sin_observacion"})


@dataclass(frozen=True)
class Clause:
    text: str  # one fact, in Spanish, as the docstring shows it
    cases: object  # EVERY_CASE or a tuple of (dimension name, value the draws must meet)
    violated_by: tuple  # names of corpus variants that break this clause alone

    def __post_init__(self):
        if self.cases != EVERY_CASE:
            object.__setattr__(self, "cases", tuple(tuple(pair) for pair in self.cases))
        object.__setattr__(self, "violated_by", tuple(self.violated_by))


def clauses_of(chapter):
    """The chapter's ``CLAUSES`` (empty when it has no contract module)."""
    try:
        return chapter.module("contract").CLAUSES
    except ModuleNotFoundError as missing:
        if missing.name != f"autograder.chapters.{chapter.key}.contract":
            raise
        return {}


def _flat(text):
    return " ".join(text.split())


CITING_STUDENT = CITING_SECRET = "clausulas"


@functools.cache
def clauses_by_failure(chapter_key, exercise, grade):
    """(part name, diagnosis id) -> the clauses ("N. text") whose violating variants fail that
    part with that diagnosis: what the graded feedback cites for a failure. ``grade`` is
    ``autograder.hidden.runner.grade_hidden``; each violating variant is graded once per
    process, the first time a submission fails this exercise."""
    from autograder.corpus import all_variants
    from autograder.course import chapter_named

    chapter = chapter_named(chapter_key)
    functions = {v.name: v.function for v in all_variants((chapter_key,))
                 if v.exercise == exercise}
    table = chapter.module("hidden").HIDDEN
    found = {}
    for number, clause in enumerate(clauses_of(chapter).get(exercise, ()), 1):
        for name in clause.violated_by:
            if name not in functions:
                continue
            result = grade(exercise, table, functions[name], CITING_STUDENT, CITING_SECRET)
            for part, failure in result.fallos:
                if failure is not None and failure.diagnostico not in GENERIC_DIAGNOSES:
                    key = (part.nombre, failure.diagnostico)
                    found.setdefault(key, {})[f"{number}. {_flat(clause.text)}"] = None
    return {key: tuple(cited) for key, cited in found.items()}


def render(clauses, indent="    "):
    """The numbered list as docstring lines (no trailing newline)."""
    lines = [indent + HEADING, ""]
    for number, clause in enumerate(clauses, 1):
        first = f"{indent}{number}. "
        lines += textwrap.wrap(_flat(clause.text), WIDTH, initial_indent=first,
                               subsequent_indent=" " * len(first))
    return "\n".join(lines)


_PLACEHOLDER_LINE = re.compile(rf"^([ \t]*){re.escape(PLACEHOLDER)}[ \t]*$", re.MULTILINE)


def placeholders(source):
    return len(_PLACEHOLDER_LINE.findall(source))


def render_docstring(source, clauses):
    """The solution cell's source with its ``<contrato>`` line replaced by the clauses."""
    if not clauses:
        raise ValueError(f"the docstring has {PLACEHOLDER!r} but the chapter's contract.py "
                         "declares no clauses for it")
    if placeholders(source) != 1:
        raise ValueError(f"the exercise's docstring needs exactly one line {PLACEHOLDER!r} "
                         f"(found {placeholders(source)})")
    return _PLACEHOLDER_LINE.sub(lambda m: render(clauses, m.group(1)), source, count=1)
