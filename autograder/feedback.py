"""What a student reads about how their submission was graded, in Spanish: the status
banner at the top of nbgrader's feedback page (``preprocessors.StatusBanner``), and the
plain page of a submission with no graded notebook to show."""

import html

from autograder.outcome import Status


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


def plain_page(outcome):
    """A short page when there is no graded notebook to show."""
    return ("<!DOCTYPE html><html lang='es'><meta charset='utf-8'>"
            f"<title>{html.escape(outcome.assignment)}</title><body>"
            f"<h1>{html.escape(outcome.assignment)} · {html.escape(outcome.student)}</h1>"
            f"<p>{html.escape(reason(outcome.status, outcome.detail))}.</p>"
            f"{notes_html(outcome.notes)}"
            f"<p>Puntos: {outcome.score:g} / {outcome.max_score:g}</p></body></html>\n")
