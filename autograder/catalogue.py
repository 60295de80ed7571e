"""The exercise catalogue: every graded exercise, from the chapter sources and declarations."""

import ast
from dataclasses import dataclass

import jupytext

from autograder.course import chapters
from autograder.markers import TEST_SUFFIX, solution_cell_of
from autograder.tables import format_table

# The difficulty tags an exercise declares (``HiddenExercise.difficulty``): within a chapter
# they never go down, and the course's last exercise alone is a "reto" (its capstone).
LEVELS = {1: "básico", 2: "intermedio", 3: "avanzado", 4: "reto"}


@dataclass(frozen=True)
class Exercise:
    chapter: str
    grade_id: str  # the graded (test) cell
    function: str
    signature: str
    points: float
    difficulty: int  # a key of LEVELS
    parts: int
    hidden_cases: int

    @property
    def exercise_id(self):
        """The exercise's id: its function name (and its solution cell's grade id)."""
        return self.function


def _defined_function(source, name):
    """The signature of the function ``name`` a solution cell defines."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return f"{node.name}({ast.unparse(node.args)})"
    raise ValueError(f"the solution cell of {name} does not define it")


def exercises():
    """Every graded exercise of every chapter, in notebook order, from its declaration."""
    import torch

    found = []
    for chapter in chapters():
        hidden = chapter.module("hidden").HIDDEN
        for cell in jupytext.read(chapter.source).cells:
            name = solution_cell_of(cell)
            if name is None:
                continue
            declared = hidden[name]
            found.append(Exercise(
                chapter=chapter.name, grade_id=name + TEST_SUFFIX, function=name,
                signature=_defined_function(cell.source, name), points=declared.points,
                difficulty=declared.difficulty,
                parts=len(declared.exercise.partes),
                hidden_cases=len(declared.draw(torch.Generator().manual_seed(0)))))
    return found


def catalogue_table(items=None):
    """The catalogue as an aligned text table, with the total points."""
    items = exercises() if items is None else items
    # Each part is checked on 1 public case (in the notebook) and on every hidden case.
    rows = [("chapter", "grade_id", "function", "points", "difficulty", "parts", "public",
             "hidden")]
    rows += [(e.chapter, e.grade_id, e.signature, f"{e.points:g}",
              f"{e.difficulty} {LEVELS.get(e.difficulty, '?')}", str(e.parts), str(e.parts),
              str(e.parts * e.hidden_cases)) for e in items]
    lines = format_table(rows)
    lines.append(f"\n{len(items)} exercises, {sum(e.points for e in items):g} points. "
                 "public/hidden: checks run (parts × cases) in the notebook / at grading.")
    return "\n".join(lines)
