"""The feedback page a student reads, rendered for real: chapter 1's sample submissions (and
one whose parts pass without earning) through the pipeline, then read as a student would.
Everything in Spanish, exercises by the names the notebook gives them, nothing loaded from
the network, formulas as MathML."""

import html
import re
from pathlib import Path

import nbformat
import nbgrader
import pytest

from autograder.pipeline import grade, prepare_course
from autograder.sample_class import SAMPLE_CLASS, submission
from autograder.submissions import SampleStudent
from autograder.titles import chapter_titles

pytestmark = pytest.mark.slow
ASSIGNMENT = "01_grafo_dinamico"
NBGRADER_TEMPLATE = (Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
                     / "templates" / "feedback" / "index.html.j2")
# Right shapes, wrong values, inputs left alone: "entradas intactas" passes and earns nothing.
ZERO_GRADIENTS = '''def manual_backward(x, y, W1, b1, W2, b2):
    return {"W1": torch.zeros_like(W1), "b1": torch.zeros_like(b1),
            "W2": torch.zeros_like(W2), "b2": torch.zeros_like(b2)}
'''
IRIS = SampleStudent("iris", "ceros: requisito cumplido sin puntos",
                     {"manual_backward": ZERO_GRADIENTS}, lost=("manual_backward_test",))
# The stubs, one wrong exercise, a cell that never ends, one that kills the kernel.
CHOSEN = ("bruno", "carla", "elena", "fede")


def english_labels():
    """The words nbgrader's feedback template shows (and nbconvert's prompts): its text
    outside tags, Jinja and styles."""
    template = NBGRADER_TEMPLATE.read_text()
    template = re.sub(r"<style.*?</style>|\{\{.*?\}\}|\{%.*?%\}|<[^>]+>", "\n", template,
                      flags=re.DOTALL)
    labels = {m.strip(" :(") for m in re.findall(r"[A-Z][A-Za-z' -]+", template)}
    # nbconvert's prompts, IPython's traceback header, and the labels the issue quotes.
    return sorted(labels - {""}) + ["In [", "Out[", "Cell", "Points", "most recent call"]


def visible_text(page):
    body = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", " ", body)).replace("\xa0", " ")


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("feedback")
    course = root / "course"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AUTOGRADER_CHAPTERS", "01")
        prepare_course(course)
        source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
        release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
        students = [s for s in SAMPLE_CLASS[ASSIGNMENT] if s.student_id in CHOSEN] + [IRIS]
        for student in students:
            path = root / "submissions" / student.student_id / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(submission(student, source, release), path)
        grade(root / "submissions", root / "out", course_dir=course, timeout=10,
              progress=lambda line: None, workers=2)
    return {s.student_id: (root / "out" / "feedback" / s.student_id / f"{ASSIGNMENT}.html")
            .read_text() for s in students}


def test_the_english_labels_are_nbgraders():
    labels = english_labels()
    for label in ("Student's answer", "Grade cell", "Test cell", "Comments", "Score", "Top"):
        assert label in labels


def english_labels_in(page):
    """The English labels a student reads on ``page``."""
    text = visible_text(page)
    return [label for label in english_labels()
            if re.search(rf"(?<![\w.]){re.escape(label)}(?!\w)", text)]


def test_no_english_label(pages):
    for student, page in pages.items():
        assert english_labels_in(page) == [], student


def test_nothing_comes_from_the_network(pages):
    for student, page in pages.items():
        assert not re.search(r"<script[^>]*\bsrc=", page), student
        assert not re.search(r"<link[^>]*\bhref=[\"']?(https?:)?//", page), student
        assert "mathjax" not in page.lower() and "cdn" not in page.lower(), student


def test_exercises_are_named_as_the_notebook_names_them(pages):
    titles = chapter_titles(ASSIGNMENT)
    for student, page in pages.items():
        text = visible_text(page)
        assert f"{titles.chapter} · Nota:" in text
        for function, title in titles.exercises.items():
            assert f"Pruebas · {title}" in text and f"Tu respuesta · {title}" in text
            assert f"Pruebas ocultas · {title}:" in text
            assert function + "_test" not in text, f"{student}: a grade id as a header"
        assert "Pruebas ocultas de" not in text and not re.search(r"\bch01_\w+", text)


def test_formulas_are_mathml(pages):
    page = pages["bruno"]
    assert page.count("<math") > 20 and 'display="block"' in page
    assert "\\frac" not in visible_text(page) and "$$" not in visible_text(page)


def test_a_stopped_cell_is_located_by_what_the_student_sees(pages):
    titles = chapter_titles(ASSIGNMENT).exercises
    for student, function in (("fede", "manual_backward"), ("elena", "gradient_penalty")):
        text = visible_text(pages[student])
        assert re.search(rf"Estado: [^\n]*: tu respuesta del {titles[function]}\.", text), student
        assert not re.search(r"celda \d", text), student
    text = visible_text(pages["elena"])
    assert "superó el tiempo límite y se interrumpió aquí:" in text
    assert "No reply from kernel" not in text


def test_a_requirement_met_without_points_says_why(pages):
    text = visible_text(pages["iris"])
    assert re.search(r"✓ entradas intactas[^\n]*\(0/0\.5\)", text)
    assert "Los requisitos cumplidos no puntúan: solo cuentan si alguna parte del resultado " \
           "es correcta." in text
    assert "No response" not in text and "Sin responder" in visible_text(pages["bruno"])
