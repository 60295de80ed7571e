"""Corpus of student-like implementations, each labelled with how grading must treat it.

``CORRECT`` variants are valid solutions written differently from the reference:
every check must give them full marks. Every other label is the diagnosis id (see
``autograder.student.compare.MENSAJES``) that a wrong variant must receive.
"""

import importlib
from collections.abc import Callable
from dataclasses import dataclass

CORRECT = "correcta"


@dataclass(frozen=True)
class Variant:
    exercise: str  # exercise id, e.g. "ch01_manual_backward"
    name: str
    function: Callable
    expected: str  # CORRECT or a diagnosis id

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
    if chapter_keys is None:
        from autograder.course import chapter_modules

        return [v for m in chapter_modules("variants") for v in m.registry.variants]
    found = []
    for key in chapter_keys:
        found += importlib.import_module(f"autograder.variants.{key}").registry.variants
    return found
