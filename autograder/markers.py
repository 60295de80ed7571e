"""How a chapter source marks its exercises, and the nbgrader cells the build makes of them.

In ``solutions/NN_slug.py`` an exercise is two cells, named by the function students write:

    # %% exercise="<function>"     the solution cell (BEGIN/END SOLUTION inside)
    # %% test="<function>"         the graded cell: leave it empty

The build turns them into nbgrader cells: grade id = the function name, points = the sum
of the parts the chapter declares (``autograder/chapters/chNN/student.py``), and the test
cell's code (the public check, then the hidden test between nbgrader's markers).
"""

import re

EXERCISE, TEST = "exercise", "test"
TEST_SUFFIX = "_test"
SOLUTION_MARKERS_RE = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)
TEST_SOURCE = """comprobar_{name}({name})
### BEGIN HIDDEN TESTS
from autograder.chapters.{key}.hidden import check

check("{name}", {name})
### END HIDDEN TESTS"""


def solution_cell_of(cell):
    """The function name a source cell is the solution of (None if it is not one)."""
    return cell.metadata.get(EXERCISE)


def graded_cell_of(cell):
    """The function name a source cell is the graded test of (None if it is not one)."""
    return cell.metadata.get(TEST)


def solution_metadata(name):
    return {"grade": False, "grade_id": name, "locked": False, "schema_version": 3,
            "solution": True, "task": False}


def test_metadata(name, points):
    return {"grade": True, "grade_id": name + TEST_SUFFIX, "locked": True, "points": points,
            "schema_version": 3, "solution": False, "task": False}


def test_source(chapter_key, name):
    return TEST_SOURCE.format(key=chapter_key, name=name)


def solution_code(source):
    """A solution cell's code without nbgrader's markers."""
    return SOLUTION_MARKERS_RE.sub("", source)
