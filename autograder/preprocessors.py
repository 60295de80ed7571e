"""nbgrader preprocessors that make grading fair, quick and discreet.

Each one is registered in ``autograder/nbgrader_config.py``; the order they run
in is written there.
"""

import math
import re

import nbformat
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells

from autograder.facts import Facts, classify
from autograder.feedback import cell_locator, page_titles, protection_line, status_banner
from autograder.outcome import protection_text
from autograder.sanitize import clean_notebook
from autograder.term import load_term

DEMO_TAG = "demo"
HELPER_SUFFIX = "_utilidades"
SKIPPED_DEMO_SOURCE = "# Demostración omitida al calificar (no afecta a la nota).\n"
HIDDEN_TESTS_RE = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.DOTALL)
HIDDEN_TESTS_NOTE = "# (Aquí se ejecutaron las pruebas ocultas; su código no se muestra.)\n"
HELPER_NOTE = "# Utilidades del curso (celda generada; su código no se repite aquí).\n"
STATUS_CELL_ID = "estado-de-la-entrega"
PROTECTION_CELL_ID = "protecciones-al-calificar"
LATE_CELL_ID = "entrega-con-retraso"


def is_demo(cell):
    """A demonstration cell: tagged ``demo`` and not an nbgrader cell (those always run)."""
    return (cell.cell_type == "code" and DEMO_TAG in cell.metadata.get("tags", [])
            and "nbgrader" not in cell.metadata)


def is_test_cell(cell):
    return utils.is_grade(cell) and not utils.is_solution(cell)


def is_helper_cell(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith(HELPER_SUFFIX)


class OverwriteCellsWithIds(OverwriteCells):
    """nbgrader's OverwriteCells, but the cells it restores get an id (nbformat 4.5 needs one)."""

    def missing_cell_transform(self, source_cell, max_score, is_solution=False, is_task=False):
        cell = super().missing_cell_transform(source_cell, max_score, is_solution, is_task)
        cell["id"] = ("restaurada-" + source_cell.name.replace("_", "-"))[:64]
        return cell


class RestoreHelperCell(NbGraderPreprocessor):
    """Put back the generated helper cell when a student deleted it.

    nbgrader restores deleted *graded* cells only (``add_missing_cells``); the
    public checks in those cells need the read-only helper cell too. Its source
    comes from the gradebook, so it is the released version, never the student's.
    """

    def preprocess(self, nb, resources):
        present = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}
        with Gradebook(resources["nbgrader"]["db_url"]) as gradebook:
            try:
                notebook = gradebook.find_notebook(resources["nbgrader"]["notebook"],
                                                   resources["nbgrader"]["assignment"])
            except MissingEntry:
                return nb, resources
            for cell in notebook.source_cells:
                if cell.name.endswith(HELPER_SUFFIX) and cell.name not in present:
                    self.log.warning("Helper cell %s was missing: restored", cell.name)
                    restored = nbformat.v4.new_code_cell(cell.source)
                    restored.metadata["nbgrader"] = {
                        "grade": False, "solution": False, "locked": True, "task": False,
                        "grade_id": cell.name, "schema_version": 3,
                    }
                    nb.cells.insert(min(1, len(nb.cells)), restored)
        return nb, resources


class SkipDemoCells(NbGraderPreprocessor):
    """Replace demonstration cells by a comment before execution: they carry no grade."""

    def preprocess_cell(self, cell, resources, index):
        if is_demo(cell):
            cell.source = SKIPPED_DEMO_SOURCE
            cell.outputs = []
        return cell, resources


class SanitizeStudentContent(NbGraderPreprocessor):
    """Make the graded notebook inert before it is written: what the feedback page and the
    formgrader render can run no script (``autograder.sanitize``)."""

    def preprocess(self, nb, resources):
        return clean_notebook(nb), resources


class DropStderrFromTests(NbGraderPreprocessor):
    """Remove stderr from graded test cells before scoring.

    nbgrader scores a test cell 0 if it wrote anything to stderr, so a correct
    answer that triggers a library warning would lose its points. Failures are
    exceptions (error outputs), which stay.
    """

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and is_test_cell(cell):
            cell.outputs = [o for o in cell.outputs
                            if not (o.output_type == "stream" and o.name == "stderr")]
        return cell, resources


class HideHiddenTests(NbGraderPreprocessor):
    """In feedback, show neither hidden-test source nor tracebacks into it.

    The visible part of a test cell (the public check) stays; each error becomes
    its one-line message (our checks put the diagnosis there). The long generated
    helper cell shrinks to a one-line note.
    """

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and is_helper_cell(cell):
            cell.source = HELPER_NOTE
        if cell.cell_type != "code" or not is_test_cell(cell):
            return cell, resources
        cell.source = HIDDEN_TESTS_RE.sub(HIDDEN_TESTS_NOTE, cell.source)
        for output in cell.outputs:
            if output.output_type == "error":
                output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


class StatusBanner(NbGraderPreprocessor):
    """In feedback, a first cell with the submission's status and the repairs made on intake,
    and a last one with the protections it was graded under, from the facts grading stored
    in the notebook (``autograder.facts``), in Spanish."""

    def preprocess(self, nb, resources):
        facts = Facts.read(nb)
        where = cell_locator(nb, resources.get("nbgrader", {}).get("assignment", ""))
        banner = status_banner(*classify(facts, where), facts.notes)
        if banner:
            cell = nbformat.v4.new_markdown_cell(banner)
            cell["id"] = STATUS_CELL_ID
            nb.cells.insert(0, cell)
        footer = nbformat.v4.new_markdown_cell(protection_line(protection_text(
            facts.protection)))
        footer["id"] = PROTECTION_CELL_ID
        nb.cells.append(footer)
        return nb, resources


def late_line(seconds_late, penalty):
    """The lateness and what it cost, in Spanish: hours, rounded up (minutes under one)."""
    delay = (f"{math.ceil(seconds_late / 60)} min" if seconds_late < 3600
             else f"{math.ceil(seconds_late / 3600)} h")
    return f"Entregado con {delay} de retraso: −{penalty:g} puntos."


class LatePenaltyLine(NbGraderPreprocessor):
    """In feedback, after the status banner: how late the submission was (the gradebook's
    timestamp against the due date, as nbgrader counts it) and the late penalty it cost
    (``autograder.term``; ``GetGrades`` has read it). Nothing for one on time."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gradebook:
            try:
                seconds = gradebook.find_submission(info["assignment"],
                                                    info["student"]).total_seconds_late
            except MissingEntry:
                return nb, resources
        if load_term().late.is_late(seconds):
            cell = nbformat.v4.new_markdown_cell(
                "<div class='alert alert-warning' lang='es'><p>"
                f"{late_line(seconds, info.get('late_penalty') or 0.0)}</p></div>")
            cell["id"] = LATE_CELL_ID
            after_status = bool(nb.cells) and nb.cells[0].get("id") == STATUS_CELL_ID
            nb.cells.insert(1 if after_status else 0, cell)
        return nb, resources


class ExerciseTitles(NbGraderPreprocessor):
    """In feedback, the names the page template (``templates/feedback_es``) shows: the
    chapter's title and each exercise's, as the notebook heads them, never grade ids."""

    def preprocess(self, nb, resources):
        assignment = resources.get("nbgrader", {}).get("assignment", "")
        resources["titulos"] = page_titles(assignment, nb)
        return nb, resources
