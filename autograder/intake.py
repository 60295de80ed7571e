"""Read a submission the way a patient instructor would, before nbgrader sees it.

Students rename files, editors strip metadata, old tools write nbformat 3, cells get
moved or duplicated. Each repair is noted (in Spanish, for the feedback); what cannot
be read is reported with the reason. The original file is never modified.
"""

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader import utils

from autograder.safe_files import Refused, read_regular
from autograder.static_review import review_note

HELPER_TITLE = "#@title Utilidades del curso"


@dataclass
class Intake:
    nb: object = None  # the notebook to grade, or None when unreadable
    problem: str = ""  # why it could not be read
    notes: list = field(default_factory=list)  # repairs made, in Spanish


def _find_notebook(folder, assignment, intake):
    expected = folder / f"{assignment}.ipynb"
    if expected.exists() or expected.is_symlink():  # a link is refused when read
        return expected
    others = sorted(p for p in folder.glob("*.ipynb") if not p.name.startswith("."))
    if not others:
        intake.problem = "la entrega no contiene ningún cuaderno .ipynb"
        return None
    chosen = max(others, key=lambda p: p.lstat().st_mtime)
    intake.notes.append(f"se calificó «{chosen.name}» (se esperaba «{expected.name}»)")
    return chosen


def _read(path, intake):
    try:
        raw = read_regular(path)
    except Refused as refused:
        intake.problem = str(refused)
        return None
    if not raw.strip():
        intake.problem = "el archivo está vacío"
        return None
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as error:
        intake.problem = (f"el archivo no es JSON válido (línea {error.lineno}, "
                          f"columna {error.colno})")
        return None
    if not isinstance(data, dict) or "cells" not in data and "worksheets" not in data:
        intake.problem = "el archivo no es un cuaderno de Jupyter"
        return None
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
    except Exception as error:  # noqa: BLE001 - any unreadable notebook is reported, not raised
        intake.problem = f"el cuaderno no es válido ({type(error).__name__})"
        return None
    if data.get("nbformat") != 4:
        intake.notes.append(f"convertido desde nbformat {data.get('nbformat')}")
    nb.nbformat, nb.nbformat_minor = 4, 5
    for index, cell in enumerate(nb.cells):
        if not cell.get("id"):
            cell["id"] = f"celda-{index}"
    return nb


def _defined_function(source):
    match = re.search(r"^def\s+([A-Za-z_]\w*)\s*\(", source, re.MULTILINE)
    return match.group(1) if match else None


def _restore_metadata(nb, release, intake):
    """Give nbgrader metadata back to cells an editor stripped it from."""
    present = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}
    restored = 0
    for ref in release.cells:
        grade_id = ref.metadata.get("nbgrader", {}).get("grade_id")
        if not grade_id or grade_id in present:
            continue
        function = _defined_function(ref.source) if utils.is_solution(ref) else None
        for cell in nb.cells:
            if cell.cell_type != ref.cell_type or "nbgrader" in cell.metadata:
                continue
            same = (cell.source.strip() == ref.source.strip()
                    or (function and _defined_function(cell.source) == function)
                    or (grade_id.endswith("_utilidades") and cell.source.startswith(HELPER_TITLE)))
            if same:
                cell.metadata["nbgrader"] = copy.deepcopy(ref.metadata["nbgrader"])
                restored += 1
                break
    if restored:
        intake.notes.append(f"se restauraron los metadatos de nbgrader de {restored} celdas")


def _reorder_tests(nb, intake):
    """Put each test cell after its exercise's solution cell (a moved test would run first)."""
    def index_of(grade_id):
        return next((i for i, c in enumerate(nb.cells)
                     if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id), None)

    moved = 0
    for cell in list(nb.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if not grade_id.endswith("_test"):
            continue
        test, solution = nb.cells.index(cell), index_of(grade_id.removesuffix("_test"))
        if solution is not None and test < solution:
            nb.cells.insert(solution, nb.cells.pop(test))
            moved += 1
    if moved:
        intake.notes.append(f"se movieron {moved} celdas de prueba detrás de su ejercicio")


def _deduplicate(nb, intake):
    """Keep the first cell of each grade id. Later copies of locked cells (tests, helpers)
    go; later copies of a solution keep their code as an ordinary cell.

    (nbgrader's own DeduplicateIds leaves a metadata dict without a grade id, on which
    its add_missing_cells then crashes.)
    """
    seen, kept, duplicated = set(), [], 0
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None and grade_id in seen:
            duplicated += 1
            if cell.metadata["nbgrader"].get("locked"):
                continue
            cell.metadata.pop("nbgrader")
        seen.add(grade_id)
        kept.append(cell)
    nb.cells = kept
    if duplicated:
        intake.notes.append(f"{duplicated} celdas duplicadas: cuenta solo la primera")


def _note_missing(nb, release, intake):
    """Locked cells (tests, helpers) the student deleted: nbgrader and RestoreHelperCell
    put them back from the gradebook; the student should know."""
    present = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}
    missing = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("locked")
               and c.metadata["nbgrader"].get("grade_id") not in present]
    if missing:
        intake.notes.append(f"faltaban {len(missing)} celdas protegidas: se restauraron")


def _note_edits(nb, release, intake):
    points = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"].get("points")
              for c in release.cells if utils.is_grade(c)}
    edited = sum(1 for cell in nb.cells
                 if cell.metadata.get("nbgrader", {}).get("grade_id") in points
                 and cell.metadata["nbgrader"].get("points")
                 != points[cell.metadata["nbgrader"]["grade_id"]])
    if edited:
        intake.notes.append("se restauraron los puntos originales de las celdas editadas")


def read_submission(folder, assignment, release):
    """The submission in ``folder`` ready for nbgrader, with notes; never modifies it."""
    intake = Intake()
    path = _find_notebook(Path(folder), assignment, intake)
    nb = _read(path, intake) if path else None
    if nb is None:
        return intake
    _restore_metadata(nb, release, intake)
    _deduplicate(nb, intake)
    _reorder_tests(nb, intake)
    _note_missing(nb, release, intake)
    _note_edits(nb, release, intake)
    review = review_note(nb, release)
    if review:
        intake.notes.append(review)
    intake.nb = nb
    return intake
