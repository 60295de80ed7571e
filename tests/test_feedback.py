"""The pieces of the Spanish feedback page, fast: exercise titles from the source, cells
located by what a student sees, the requirement rule said in words, formulas as MathML that
the cleaner keeps inert, and the template set for feedback only. ``test_feedback_page.py``
renders real pages."""

import importlib
from pathlib import Path

import nbformat
import pytest

from autograder.course import chapters, load_config
from autograder.facts import Facts, classify
from autograder.feedback import cell_locator, page_titles, plain_page
from autograder.outcome import Outcome, Status
from autograder.preprocessors import StatusBanner
from autograder.sanitize import clean_html, markdown_block
from autograder.student.compare import ComprobacionFallida, Parte, Resultado
from autograder.student.diagnosis import Diagnostico
from autograder.titles import chapter_titles, hidden_tests_heading

ASSIGNMENT = "01_grafo_dinamico"


@pytest.mark.parametrize("chapter", chapters(), ids=lambda c: c.key)
def test_every_exercise_has_the_title_its_notebook_gives_it(chapter):
    titles = chapter_titles(chapter.name)
    exercises = importlib.import_module(f"autograder.chapters.{chapter.key}.student").EJERCICIOS
    assert titles.chapter.startswith(f"Capítulo {int(chapter.name[:2])} · ")
    assert sorted(titles.exercises) == sorted(exercises)
    numbers = [title.split(" · ")[0] for title in titles.exercises.values()]
    assert numbers == [f"Ejercicio {n}" for n in range(1, len(numbers) + 1)]
    assert not any("puntos" in title or "`" in title for title in titles.exercises.values())


def test_hidden_test_reports_name_the_exercise():
    assert hidden_tests_heading("ch01", "two_loss_grads") == \
        "Pruebas ocultas · Ejercicio 2 · Dos pérdidas, un solo pase hacia adelante"
    assert hidden_tests_heading("ch99", "f") == "Pruebas ocultas · f"


def _graded_notebook():
    answer = nbformat.v4.new_code_cell("def manual_backward(x):\n    while True: pass")
    answer.metadata["nbgrader"] = {"grade_id": "manual_backward", "solution": True,
                                   "grade": False}
    test = nbformat.v4.new_code_cell("comprobar_manual_backward(manual_backward)")
    test.metadata["nbgrader"] = {"grade_id": "manual_backward_test", "solution": False,
                                 "grade": True, "points": 3}
    plain = nbformat.v4.new_code_cell("\n  import os; os._exit(1)  " + "x" * 80)
    return nbformat.v4.new_notebook(cells=[plain, answer, test])


def test_cells_are_located_by_their_exercise_or_first_line():
    where = cell_locator(_graded_notebook(), ASSIGNMENT)
    assert where(1) == "tu respuesta del Ejercicio 1 · Retropropagación a mano"
    assert where(2) == "la celda de pruebas del Ejercicio 1 · Retropropagación a mano"
    assert where(0).startswith("la celda que empieza por «import os; os._exit(1)")
    assert where(0).endswith("…»") and len(where(0)) < 100
    assert where(7) == "una celda que ya no está en el cuaderno"
    assert classify(Facts(timed_out_cells=[1]), where) == (Status.TIMED_OUT, where(1))
    assert classify(Facts(timed_out_cells=[1])) == (Status.TIMED_OUT, "celda 1")  # instructors


def test_the_banner_names_the_cell_as_the_student_sees_it():
    nb = Facts(killed_cells=[1]).write(_graded_notebook())
    nb, _ = StatusBanner().preprocess(nb, {"nbgrader": {"assignment": ASSIGNMENT}})
    assert "tu respuesta del Ejercicio 1 · Retropropagación a mano." in nb.cells[0].source
    assert "celda 1" not in nb.cells[0].source


def test_the_page_titles_cover_solution_and_test_cells():
    titles = page_titles(ASSIGNMENT, _graded_notebook())
    assert titles == {"capitulo": "Capítulo 1 · El grafo dinámico",
                      "ejercicios": {"manual_backward": "Ejercicio 1 · Retropropagación a mano",
                                     "manual_backward_test":
                                     "Ejercicio 1 · Retropropagación a mano"}}


def _result(value_passes):
    failure = ComprobacionFallida(Diagnostico("sin_implementar", {}))
    value, requirement = Parte("valor", 2, None), Parte("entradas intactas", 1, None, True)
    points = 3 if value_passes else 0
    return Resultado(points, 3, [(value, None if value_passes else failure), (requirement, None)])


def test_a_requirement_that_passed_without_points_says_why():
    report = _result(value_passes=False).informe("Pruebas ocultas · Ejercicio 1 · X")
    assert "✓ entradas intactas (0/1)" in report
    assert report.endswith("\n  Los requisitos cumplidos no puntúan: solo cuentan si alguna "
                           "parte del resultado es correcta.")
    report = _result(value_passes=True).informe("t")
    assert "✓ entradas intactas (1/1)" in report and "no puntúan" not in report


def test_formulas_become_mathml_outside_code():
    html = markdown_block("Con $x < 2$ y `$y$`:\n\n$$\\frac{\\partial L}{\\partial w}$$\n\n"
                          "```\n$z$\n```")
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">' in html
    assert 'display="block"><mrow><mfrac>' in html and "<mo>&lt;</mo>" in html
    assert "<code>$y$</code>" in html and "$z$" in html and "\\frac" not in html


def test_mathml_is_kept_inert():
    hostile = ('<math><maction actiontype="statusline"><mtext>a</mtext></maction>'
               '<mi href="javascript:alert(1)" style="color:red" onclick="x()">b</mi>'
               '<annotation-xml encoding="text/html"><script>alert(1)</script>'
               '<img src=x onerror=alert(1)></annotation-xml></math>')
    cleaned = clean_html(hostile)
    for bad in ("maction", "href", "style", "onclick", "annotation", "script", "img", "onerror"):
        assert bad not in cleaned
    assert "<mi>b</mi>" in cleaned and "<math>" in cleaned
    linked = markdown_block("$\\href{javascript:alert(1)}{x}$")
    assert "javascript" not in linked and "<mi>x</mi>" in linked


def test_unreadable_tex_stays_text():
    assert "$\\frac{$" in markdown_block("cuesta $\\frac{$ cinco")


def test_the_spanish_template_is_set_for_feedback_only():
    config = load_config()
    assert config.GenerateFeedback.HTMLExporter.template_name == "feedback_es"
    assert "template_name" not in config.HTMLExporter  # the formgrader keeps its own
    from autograder.feedback_exporter import FeedbackPageExporter

    assert config.GenerateFeedback.exporter_class is FeedbackPageExporter


def test_the_plain_page_names_the_chapter():
    page = plain_page(Outcome("ana", ASSIGNMENT, Status.UNREADABLE, "el archivo está vacío"))
    assert "<h1>Capítulo 1 · El grafo dinámico · ana</h1>" in page
    assert ASSIGNMENT not in page


def _page(exporter_class, nb):
    import nbgrader

    from autograder.course import TEMPLATES_DIR

    formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    exporter = exporter_class(
        template_name="feedback_es", extra_template_basedirs=[str(TEMPLATES_DIR)],
        extra_template_paths=[str(formgrader / "static" / "node_modules" / "bootstrap" / "dist"
                                  / "css")])
    return exporter.from_notebook_node(nb, resources={"nbgrader": {
        "score": 1, "max_score": 2, "late_penalty": 0, "notebook": ASSIGNMENT},
        "titulos": {}})[0]


def test_the_feedback_exporter_is_nbconverts_without_its_last_pass():
    """``FeedbackPageExporter``: the same page as nbconvert's HTMLExporter (same text, same
    tags and attributes), but images without alt text get a Spanish one."""
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    from autograder.feedback_exporter import IMAGE_ALT, FeedbackPageExporter

    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJ"
           "RU5ErkJggg==")
    plot = nbformat.v4.new_code_cell("dibujar()", outputs=[
        nbformat.v4.new_output("display_data", {"image/png": png, "text/plain": "<Figure>"})])
    described = nbformat.v4.new_code_cell("dibujar()", outputs=[
        nbformat.v4.new_output("display_data", {"image/png": png},
                               metadata={"image/png": {"alt": "La pérdida baja"}})])
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Título\n\nTexto con **negrita** & <b>etiquetas</b>"),
        nbformat.v4.new_code_cell("x = 1 < 2\nprint('a & b')", outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="a & b\n")]),
        plot, described])
    ours = BeautifulSoup(_page(FeedbackPageExporter, nb), "html.parser")
    theirs = BeautifulSoup(_page(HTMLExporter, nb), "html.parser")
    assert [img["alt"] for img in ours.find_all("img")] == [IMAGE_ALT, "La pérdida baja"]
    for img in theirs.find_all("img"):
        img["alt"] = IMAGE_ALT if img["alt"].startswith("No description") else img["alt"]
    assert str(ours) == str(theirs)
    assert "Texto con" in ours.get_text() and "a &amp; b" in str(ours)
