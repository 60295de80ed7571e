"""Student notebooks: generated, output-free, self-contained, and gradeable as nbgrader expects."""

import ast
import json
import re

import pytest
from nbgrader import utils

from autograder.course import chapters

CHAPTERS = chapters()
# What a stock Colab image offers (no nbgrader, no autograder, no jupytext).
COLAB_MODULES = {"torch", "numpy", "matplotlib", "ipywidgets", "IPython", "graphviz", "tqdm"}
STDLIB = set(__import__("sys").stdlib_module_names)


def student_cells(chapter):
    return json.loads(chapter.student_notebook.read_text())["cells"]


def source_cells(chapter):
    """The instructor notebook's cells, as the build makes them from the source."""
    from autograder.build import source_notebook

    return source_notebook(chapter).cells


def code(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def imported_modules(source):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module.split(".")[0]


def test_there_is_a_chapter():
    assert CHAPTERS, "no chapter sources in solutions/"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_student_notebook_has_no_outputs_solutions_or_hidden_tests(chapter):
    text = chapter.student_notebook.read_text()
    assert '"output_type"' not in text
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert all(c.get("execution_count") is None for c in student_cells(chapter)
               if c["cell_type"] == "code")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_student_notebook_says_it_is_generated_and_opens_in_colab(chapter):
    nb = json.loads(chapter.student_notebook.read_text())
    assert "GENERATED" in nb["metadata"]["course"]["generated"]
    assert chapter.colab_url in code(nb["cells"][0])


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_student_notebook_imports_only_what_colab_has(chapter):
    for cell in student_cells(chapter):
        if cell["cell_type"] == "code":
            for module in imported_modules(code(cell)):
                assert module in COLAB_MODULES | STDLIB, f"{module} is not on Colab"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_exercises_follow_the_grading_conventions(chapter):
    grade_ids = []
    for cell in source_cells(chapter):
        meta = cell.metadata.get("nbgrader")
        if cell.cell_type != "code" or not meta:
            assert "demo" not in cell.metadata.get("tags", []) or not meta
            continue
        assert "demo" not in cell.metadata.get("tags", []), "an nbgrader cell cannot be a demo"
        grade_ids.append(meta["grade_id"])
        assert re.fullmatch(r"[a-z0-9_]+", meta["grade_id"]), meta["grade_id"]
        if utils.is_solution(cell):
            assert "### BEGIN SOLUTION" in cell.source
            function = ast.parse(cell.source).body[0]
            assert isinstance(function, ast.FunctionDef), "a solution cell defines its function"
            assert ast.get_docstring(function), f"{function.name} needs a docstring contract"
        elif utils.is_grade(cell):
            assert meta["grade_id"].removesuffix("_test") in grade_ids, "test before solution"
            assert "### BEGIN HIDDEN TESTS" in cell.source
            last = ast.parse(cell.source).body[-1]
            # A trailing expression is a partial score for nbgrader: only calls to checks,
            # which return None, may end a test cell.
            assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
            assert last.value.func.id in ("check", "comprobar_" + meta["grade_id"][:-5])
    assert len({g for g in grade_ids if g.endswith("_test")}) >= 3
    assert len(grade_ids) == len(set(grade_ids)), "duplicate grade ids"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_only_hidden_tests_import_the_autograder(chapter):
    for cell in source_cells(chapter)[2:]:  # after the title and the generated helper cell
        source = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", cell.source,
                        flags=re.DOTALL)
        assert "autograder" not in source or cell.cell_type == "markdown"


def _exercise_functions(cells):
    return {node.name for c in cells if c.cell_type == "code" and utils.is_solution(c)
            for node in ast.parse(c.source).body if isinstance(node, ast.FunctionDef)}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_only_graded_cells_call_the_exercises(chapter):
    # A demonstration (or any other cell) that calls a student's function fails on the
    # untouched stubs: the student would see errors that are not about an exercise.
    cells = source_cells(chapter)
    exercises = _exercise_functions(cells)
    for cell in cells:
        if cell.cell_type != "code" or "nbgrader" in cell.metadata:
            continue
        python = "\n".join(line for line in cell.source.splitlines()
                            if not line.lstrip().startswith(("%", "!")))  # IPython magics
        names = {n.id for n in ast.walk(ast.parse(python)) if isinstance(n, ast.Name)}
        assert not names & exercises, f"cell uses {names & exercises}:\n{cell.source[:200]}"


def _defined_at_top_level(source):
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def _python(cell):
    return "\n".join(line for line in cell.source.splitlines()
                     if not line.lstrip().startswith(("%", "!")))  # IPython magics


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_no_cell_redefines_a_helper_of_the_generated_cell(chapter):
    # The helper cell puts its names into the notebook's one namespace: a demo that
    # defines one of them again silently replaces the helper for every later cell.
    from autograder.inject import exported_names, helper_modules

    helpers = {name for module in helper_modules(chapter.key)
               for name in exported_names(module.read_text())}
    for cell in source_cells(chapter)[2:]:
        if cell.cell_type == "code":
            shadowed = _defined_at_top_level(_python(cell)) & helpers
            assert not shadowed, f"cell redefines {shadowed}:\n{cell.source[:200]}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.name)
def test_no_cell_reads_what_autograd_nodes_keep_privately(chapter):
    # `_saved_self`, `_raw_saved_other`...: undocumented, renamed between releases;
    # saved_tensors_hooks shows what a node saves through the public API.
    for cell in source_cells(chapter):
        if cell.cell_type == "code":
            private = {n.attr for n in ast.walk(ast.parse(_python(cell)))
                       if isinstance(n, ast.Attribute)
                       and n.attr.startswith(("_saved_", "_raw_saved_"))}
            assert not private, f"cell reads {private}:\n{cell.source[:200]}"
