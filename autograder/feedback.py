"""What a student reads about how their submission was graded, in Spanish: the status
banner at the top of nbgrader's feedback page (``preprocessors.StatusBanner``), the names
the page gives exercises and cells (``templates/feedback_es``), and the plain page of a
submission with no graded notebook to show."""

import html

from autograder.outcome import Status
from autograder.titles import chapter_titles

FIRST_LINE_CHARS = 60


def page_titles(assignment, nb):
    """What the feedback template names things by: the chapter, and each graded or solution
    cell's exercise by grade id (``resources["titulos"]``)."""
    titles = chapter_titles(assignment)
    by_grade_id = {}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if titles.of_grade_id(grade_id):
            by_grade_id[grade_id] = titles.of_grade_id(grade_id)
    return {"capitulo": titles.chapter, "ejercicios": by_grade_id}


def first_line(source):
    line = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return line if len(line) <= FIRST_LINE_CHARS else line[:FIRST_LINE_CHARS - 1] + "…"


def cell_locator(nb, assignment):
    """``where(index)`` for ``facts.classify``: a cell as a student finds it in the page,
    by its exercise or its first line (indices are invisible to them)."""
    titles = chapter_titles(assignment)

    def where(index):
        if not 0 <= index < len(nb.cells):
            return "una celda que ya no está en el cuaderno"
        cell = nb.cells[index]
        nbgrader = cell.metadata.get("nbgrader", {})
        exercise = titles.of_grade_id(nbgrader.get("grade_id"))
        if exercise:
            kind = "tu respuesta" if nbgrader.get("solution") else "la celda de pruebas"
            return f"{kind} del {exercise}"
        return f"la celda que empieza por «{first_line(cell.source)}»"

    return where


def notes_html(notes):
    """The repairs made on intake, as a list (nothing when there were none)."""
    if not notes:
        return ""
    items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    return f"<p>Al recibir tu entrega:</p><ul>{items}</ul>"


def reason(status, detail):
    return status.text + (f": {detail}" if detail else "")


def status_banner(status, detail, notes):
    """The status and the intake notes, as one HTML block (no blank line: a markdown cell
    shows it as is); empty for a submission graded as handed in."""
    if not notes and status == Status.GRADED:
        return ""
    return (f"<div class='alert alert-info' lang='es'><p>Estado: "
            f"{html.escape(reason(status, detail))}.</p>{notes_html(notes)}</div>")


def protection_line(text):
    """Which protections graded the submission (``outcome.protection_text``), one line."""
    return f"<p lang='es'><small>Calificado con: {html.escape(text)}.</small></p>"


def plain_page(outcome):
    """A short page when there is no graded notebook to show."""
    chapter = html.escape(chapter_titles(outcome.assignment).chapter)
    return ("<!DOCTYPE html><html lang='es'><meta charset='utf-8'>"
            f"<title>{chapter} · calificación</title><body>"
            f"<h1>{chapter} · {html.escape(outcome.student)}</h1>"
            f"<p>{html.escape(reason(outcome.status, outcome.detail))}.</p>"
            f"{notes_html(outcome.notes)}"
            f"<p>Puntos: {outcome.score:g} / {outcome.max_score:g}</p>"
            f"{protection_line(outcome.protection)}</body></html>\n")
