"""Make submissions from notebooks: fill solution cells with code, like a student would."""

import copy
from dataclasses import dataclass, field

from nbgrader import utils

from autograder import markers
from autograder.outcome import Status


def solution_code(source_nb):
    """grade_id -> the reference code of each solution cell (markers removed)."""
    return {
        cell.metadata["nbgrader"]["grade_id"]: markers.solution_code(cell.source)
        for cell in source_nb.cells
        if cell.cell_type == "code" and utils.is_solution(cell)
    }


def fill_solutions(release_nb, code_by_grade_id):
    """A copy of ``release_nb`` whose solution cells hold the given code (others untouched)."""
    nb = copy.deepcopy(release_nb)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in code_by_grade_id and utils.is_solution(cell):
            cell.source = code_by_grade_id[grade_id]
    return nb


@dataclass(frozen=True)
class SampleStudent:
    """A student of the sample class: what to put in which cells, and the points expected."""

    student_id: str
    description: str
    replacements: dict = field(default_factory=dict)  # grade_id -> cell code
    use_reference: bool = True
    deleted: tuple = ()  # grade ids of cells the student deleted
    lost: tuple = ()  # grade ids of the exercises expected to score 0; ("*",) = all
    partial: dict = field(default_factory=dict)  # grade id -> points expected (partial credit)
    expected_status: Status = Status.GRADED
