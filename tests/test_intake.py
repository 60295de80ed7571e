"""Reading submissions: broken files are explained, repairable ones are repaired and noted."""

import json

import nbformat
import pytest

from autograder.adversarial import CASES, submission_bytes
from autograder.build import source_notebook
from autograder.course import chapter_named
from autograder.intake import read_submission

CHAPTER = chapter_named("ch01")


@pytest.fixture(scope="module")
def notebooks():
    return source_notebook(CHAPTER), nbformat.read(CHAPTER.student_notebook, as_version=4)


def case(name):
    return next(c for c in CASES if c.student_id == name)


def submit(tmp_path, name, notebooks):
    source, release = notebooks
    chosen = case(name)
    folder = tmp_path / name
    folder.mkdir()
    (folder / chosen.filename).write_bytes(submission_bytes(chosen, source, release))
    original = (folder / chosen.filename).read_bytes()
    result = read_submission(folder, CHAPTER.name, release)
    assert (folder / chosen.filename).read_bytes() == original, "the submission was modified"
    return result


@pytest.mark.parametrize("name,reason", [("json_invalido", "JSON"), ("vacio", "vacío")])
def test_unreadable_files_say_why(tmp_path, notebooks, name, reason):
    result = submit(tmp_path, name, notebooks)
    assert result.nb is None and reason in result.problem


def test_a_folder_without_notebook(tmp_path, notebooks):
    (tmp_path / "nada").mkdir()
    result = read_submission(tmp_path / "nada", CHAPTER.name, notebooks[1])
    assert result.nb is None and "ningún cuaderno" in result.problem


def grade_ids(nb):
    return [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells
            if "nbgrader" in c.metadata]


@pytest.mark.parametrize("name", ["sin_metadatos", "nbformat_3", "nombre_equivocado",
                                  "celdas_duplicadas", "celdas_reordenadas", "puntos_editados"])
def test_repairable_submissions_get_the_release_structure_back(tmp_path, notebooks, name):
    result = submit(tmp_path, name, notebooks)
    assert result.nb is not None and result.notes, result.problem
    assert case(name).reason in "; ".join(result.notes)
    assert grade_ids(result.nb) == grade_ids(notebooks[1])
    nbformat.validate(result.nb)


def test_deleted_protected_cells_are_noted(tmp_path, notebooks):
    result = submit(tmp_path, "celdas_borradas", notebooks)
    assert "faltaban 4 celdas protegidas" in "; ".join(result.notes)


def test_an_honest_notebook_needs_no_repair(tmp_path, notebooks):
    folder = tmp_path / "honesta"
    folder.mkdir()
    (folder / f"{CHAPTER.name}.ipynb").write_text(json.dumps(notebooks[1]))
    result = read_submission(folder, CHAPTER.name, notebooks[1])
    assert result.nb is not None and result.notes == []
