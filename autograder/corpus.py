"""Corpus of student-like implementations, each labelled with how grading must treat it.

``CORRECT`` variants are valid solutions written differently from the reference:
every check must give them full marks. Every other label is the diagnosis id (see
``autograder.student.compare.MENSAJES``) that a wrong variant must receive.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace

CORRECT = "correcta"


@dataclass(frozen=True)
class Variant:
    exercise: str  # exercise id = the function name students write
    name: str
    function: Callable
    expected: str  # CORRECT or a diagnosis id
    chapter: str = ""  # e.g. "ch01" (set by ``all_variants``)

    @property
    def correct(self):
        return self.expected == CORRECT


class Registry:
    """Collects the variants of one chapter module via the ``variant`` decorator."""

    def __init__(self):
        self.variants = []

    def variant(self, exercise, expected):
        def register(function):
            self.variants.append(Variant(exercise, function.__name__, function, expected))
            return function
        return register


def all_variants(chapter_keys=None):
    """Every registered variant of the given chapters (default: all that have a corpus)."""
    from autograder.course import chapter_modules, chapter_named

    if chapter_keys is None:
        modules = chapter_modules("variants")
    else:
        modules = [chapter_named(key).module("variants") for key in chapter_keys]
    return [replace(v, chapter=m.__name__.split(".")[-2]) for m in modules
            for v in m.registry.variants]
