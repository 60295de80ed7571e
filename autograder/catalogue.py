"""The exercise catalogue: every graded exercise, read from the chapter sources and checks."""

import ast
import importlib
from dataclasses import dataclass

import jupytext
from nbgrader import utils

from autograder.course import chapters
from autograder.tables import format_table


@dataclass(frozen=True)
class Exercise:
    chapter: str
    grade_id: str  # the graded (test) cell
    function: str
    signature: str
    points: float
    parts: int
    hidden_cases: int

    @property
    def exercise_id(self):
        """The exercise's stable id (``ch01_<slug>``): its solution cell's grade id."""
        return self.grade_id.removesuffix("_test")


def _defined_function(source):
    """(name, signature) of the first function a solution cell defines."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            return node.name, f"{node.name}({ast.unparse(node.args)})"
    raise ValueError("solution cell defines no function")


def _parts_and_cases(chapter_key, exercise_id):
    """How many scored parts the exercise has and on how many hidden cases they run."""
    import torch

    try:
        hidden = importlib.import_module(f"autograder.checks.{chapter_key}").HIDDEN[exercise_id]
    except (ModuleNotFoundError, KeyError):
        return 0, 0
    return len(hidden.exercise.partes), len(hidden.draw(torch.Generator().manual_seed(0)))


def exercises():
    """Every graded exercise of every chapter, in notebook order."""
    found = []
    for chapter in chapters():
        solutions = {}
        for cell in jupytext.read(chapter.source).cells:
            if cell.cell_type != "code" or "nbgrader" not in cell.metadata:
                continue
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            if utils.is_solution(cell):
                solutions[grade_id] = _defined_function(cell.source)
            elif utils.is_grade(cell):
                exercise_id = grade_id.removesuffix("_test")
                name, signature = solutions[exercise_id]
                parts, cases = _parts_and_cases(chapter.key, exercise_id)
                found.append(Exercise(
                    chapter=chapter.name, grade_id=grade_id, function=name,
                    signature=signature, points=float(cell.metadata["nbgrader"]["points"]),
                    parts=parts, hidden_cases=cases,
                ))
    return found


def catalogue_table(items=None):
    """The catalogue as an aligned text table, with the total points."""
    items = exercises() if items is None else items
    # Each part is checked on 1 public case (in the notebook) and on every hidden case.
    rows = [("chapter", "grade_id", "function", "points", "parts", "public", "hidden")]
    rows += [(e.chapter, e.grade_id, e.signature, f"{e.points:g}", str(e.parts),
              str(e.parts), str(e.parts * e.hidden_cases)) for e in items]
    lines = format_table(rows)
    lines.append(f"\n{len(items)} exercises, {sum(e.points for e in items):g} points. "
                 "public/hidden: checks run (parts × cases) in the notebook / at grading.")
    return "\n".join(lines)
