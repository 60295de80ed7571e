"""Adding an exercise (docs/grading-model.md): its source cells and its chapter
folder's declarations are all it takes. The slow test adds a throw-away exercise to chapter 1
in a copy of the repository, then builds, checks fairness and grades it there."""

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.course import ROOT, chapters
from autograder.submissions import fill_solutions, solution_code

CHAPTER, ASSIGNMENT = "ch01", "01_grafo_dinamico"
NAME = "square_grad"  # the throw-away exercise
# Chapter 1's exercises are also named by the hostile-submission corpus, built on them.
NAMED_ELSEWHERE = {"autograder/adversarial.py"}


def _exercises():
    found = {}
    for chapter in chapters():
        for name in chapter.module("student").EJERCICIOS:
            found.setdefault(name, []).append(chapter.key)
    return found


def test_an_exercise_is_named_only_in_its_chapter_folder():
    """``grep -rlw <grade id> autograder/`` lists only that chapter's folder."""
    checked = 0
    for name, keys in sorted(_exercises().items()):
        assert len(keys) == 1, (name, keys)  # no two exercises share a function name
        found = subprocess.run(["grep", "-rlw", "--include=*.py", name, "autograder/"],
                               cwd=ROOT, capture_output=True, text=True).stdout.split()
        folder = f"autograder/chapters/{keys[0]}/"
        outside = [p for p in found if not p.startswith(folder)
                   and not (keys[0] == CHAPTER and p in NAMED_ELSEWHERE)]
        assert found and outside == [], (name, outside)
        checked += 1
    assert checked >= 3


SOURCE_CELLS = f'''

# %% [markdown]
# ## Ejercicio de prueba: el gradiente de una suma de cuadrados

# %% exercise="{NAME}"
def {NAME}(x):
    """El gradiente de ``(x ** 2).sum()`` respecto de ``x``, con autograd.

    <contrato>
    """
    ### BEGIN SOLUTION
    leaf = x.detach().clone().requires_grad_(True)
    (gradient,) = torch.autograd.grad((leaf ** 2).sum(), leaf)
    return gradient
    ### END SOLUTION


# %% test="{NAME}"
'''

STUDENT_DECLARATIONS = f'''

# ---------------------------------------------------------------- throw-away: {NAME}
from autograder.student.compare import (  # what this exercise uses, whatever the chapter
    Ejercicio, Parte, caso_en_proceso, comparar, comprobar, ejercicios, fotografiar,
    observar_llamada, verificar_intactas)


def construir_cuadrados(generador, forma):
    return {{"x": torch.randn(*forma, generator=generador, dtype=torch.float64)}}


def observar_cuadrados({NAME}, entradas):
    observacion = observar_llamada({NAME}, *entradas.values())
    observacion["despues"] = fotografiar(entradas)
    return observacion


SQUARE_GRAD = Ejercicio(
    funcion="{NAME}",
    partes=[Parte("gradiente", 1.0, lambda caso: comparar(
                "el gradiente", caso.resultado, caso.datos["esperado"])),
            Parte("entradas intactas", 0.5, verificar_intactas, requisito=True)],
    construir=construir_cuadrados, observar=observar_cuadrados)


def comprobar_{NAME}({NAME}):
    """Public check: against 2·x, written out (not the reference)."""
    caso = caso_en_proceso(SQUARE_GRAD, {NAME}, 1, (3, 2), lambda x: 2 * x)
    comprobar(SQUARE_GRAD.partes, caso, "El gradiente es 2·x.")


EJERCICIOS = ejercicios(*EJERCICIOS.values(), SQUARE_GRAD)
'''

HIDDEN_DECLARATIONS = f'''

from autograder.chapters.{CHAPTER}.student import SQUARE_GRAD  # noqa: E402


def _square_shapes(generator):
    return [((integer(generator, 2, 6), integer(generator, 1, 4)), case_seed(generator))
            for _ in range(2)]


HIDDEN.update(hidden_table(HiddenExercise(SQUARE_GRAD, _square_shapes, reference.{NAME},
                                         difficulty=1)))
'''

CLAUSE = "Devuelve el gradiente de ``(x ** 2).sum()`` respecto de ``x`` y no cambia ``x``."
CONTRACT_DECLARATIONS = f'''

from autograder.contract import EVERY_CASE as _EVERY_CASE, Clause as _Clause  # noqa: E402

CLAUSES["{NAME}"] = (_Clause("{CLAUSE}", _EVERY_CASE, ("{NAME}_without_the_2",)),)
'''

VARIANT_DECLARATIONS = f'''

@variant("{NAME}", CORRECT)
def {NAME}_by_hand(x):
    return 2 * x


@variant("{NAME}", CORRECT)
def {NAME}_backward(x):
    leaf = x.detach().clone().requires_grad_(True)
    (leaf ** 2).sum().backward()
    return leaf.grad


@variant("{NAME}", "factor_2")
def {NAME}_without_the_2(x):
    return x.clone()


@variant("{NAME}", "sin_implementar")
def {NAME}_stub(x):
    raise NotImplementedError()
'''


def _add_exercise(repo):
    """What an author does: the source cell pair, then the chapter folder's declarations."""
    source = next((repo / "solutions").glob("01_*.py"))
    source.write_text(source.read_text() + SOURCE_CELLS)
    folder = repo / "autograder" / "chapters" / CHAPTER
    student = folder / "student.py"
    text = student.read_text()
    assert text.count("__all__ = [") == 1
    student.write_text(text.replace("__all__ = [", f'__all__ = ["comprobar_{NAME}", ', 1)
                       + STUDENT_DECLARATIONS)
    hidden = folder / "hidden.py"
    hidden.write_text(hidden.read_text() + HIDDEN_DECLARATIONS)
    variants = folder / "variants.py"
    variants.write_text(variants.read_text() + VARIANT_DECLARATIONS)
    contract = folder / "contract.py"  # the chapter's first clauses may be these
    existing = contract.read_text() if contract.exists() else "CLAUSES = {}\n"
    contract.write_text(existing + CONTRACT_DECLARATIONS)


def _copy_repository(target):
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        path = ROOT / name
        if path.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / name)
    return target


def _run(repo, *args, timeout=900):
    env = {k: v for k, v in os.environ.items()
           if k not in ("AUTOGRADER_DB_URL", "AUTOGRADER_BUILD_DIR", "COURSE_SECRET")}
    env.update(PYTHONPATH=str(repo), AUTOGRADER_CHAPTERS="01")
    done = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_an_exercise_added_to_a_chapter_is_built_checked_and_graded(tmp_path):
    repo = _copy_repository(tmp_path / "repo")
    _add_exercise(repo)

    _run(repo, "build")
    notebook = nbformat.read(repo / "notebooks" / f"{ASSIGNMENT}.ipynb", 4)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in notebook.cells]
    assert ids.count(NAME) == ids.count(f"{NAME}_test") == 1
    solution = next(c.source for c in notebook.cells
                    if c.metadata.get("nbgrader", {}).get("grade_id") == NAME)
    assert f"1. {CLAUSE}" in solution and "<contrato>" not in solution

    report = _run(repo, "fairness", "--no-mutants")
    assert f"{NAME}_by_hand" in report and f"{NAME}_stub" in report

    course = repo / "build" / "course"
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    solved = fill_solutions(release, solution_code(source))
    for student, nb in (("ana", solved), ("bruno", fill_solutions(solved, {NAME: ""}))):
        folder = tmp_path / "entregas" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")
    _run(repo, "grade", "--submissions", str(tmp_path / "entregas"),
         "--out", str(tmp_path / "notas"), "--workers", "1", "--lines")

    with (tmp_path / "notas" / "grades.csv").open(newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert float(rows["ana"][f"{NAME}_test"]) == 1.5
    assert float(rows["ana"]["score"]) == float(rows["ana"]["max_score"])
    assert float(rows["bruno"][f"{NAME}_test"]) == 0
    assert float(rows["bruno"]["score"]) == float(rows["ana"]["score"]) - 1.5
    assert Path(tmp_path / "notas" / "feedback" / "ana" / f"{ASSIGNMENT}.html").exists()
