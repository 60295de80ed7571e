"""nbgrader's Validate (the student's button) fails on the stubs and passes on the solutions.

Demonstration cells are left out to keep CI short: nbval runs them (on the instructor
notebooks), and tests/test_notebooks.py checks that no demonstration calls an exercise,
so with stubs they cannot fail where the exercises do not.
"""

import nbformat
import pytest
from nbgrader.validator import Validator

from autograder.build import source_notebook
from autograder.course import chapters, load_config
from autograder.preprocessors import is_demo
from autograder.submissions import fill_solutions, solution_code

pytestmark = pytest.mark.slow
CHAPTERS = chapters()


def validate(nb, tmp_path):
    nb.cells = [c for c in nb.cells if not is_demo(c)]
    path = tmp_path / "entrega.ipynb"
    nbformat.write(nb, path)
    return Validator(config=load_config()).validate(str(path))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_stubs_fail_validation_on_every_exercise(chapter, tmp_path):
    release = nbformat.read(chapter.student_notebook, as_version=4)
    graded = [c for c in source_notebook(chapter).cells
              if c.metadata.get("nbgrader", {}).get("grade") is True]
    assert graded
    results = validate(release, tmp_path)
    assert len(results.get("failed", [])) == len(graded)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_reference_solutions_pass_validation(chapter, tmp_path):
    release = nbformat.read(chapter.student_notebook, as_version=4)
    filled = fill_solutions(release, solution_code(source_notebook(chapter)))
    assert validate(filled, tmp_path) == {}
