"""Public hints guide; only the feedback after grading says how to fix (issue 18).

The rule a public hint (``pista``, shown by the notebook's checks) follows:

1. **A code span only names something.** Text between backticks is a name, dotted or not,
   maybe with empty parentheses or a trailing dot (`clip_grad_norm_`, `model.eval()`,
   `.clone()`, `head.`), a keyword argument set to a literal (`retain_graph=True`,
   `dim=1`), a literal (`None`, `1e-6`) or a placeholder (`{nombre}`). A call with
   arguments, a chain of calls, an operator, an assignment, a `with`/`if`/`for` header or a
   dict display is code to paste: it belongs in the fix (``autograder/hidden/fixes.py``,
   ``chapters/chNN/fixes.py``), which only the graded feedback shows.
2. **No line of a solution is quoted.** No hint contains, backticks or not, a line of 12
   characters or more (whitespace collapsed) between ``### BEGIN SOLUTION`` and
   ``### END SOLUTION`` in its chapter's source, unless that line only names a call as
   rule 1 allows (`optimizer.step()`).

Chapters whose hints follow the rule are listed in ``DONE``; a chapter joins it when its
hints are rewritten (all seven are).
"""

import contextlib
import io
import re

import pytest

from autograder.corpus import all_variants
from autograder.course import chapters
from autograder.hidden.fixes import ARREGLOS, fixes_for
from autograder.hidden.runner import grade_hidden
from autograder.inject import helper_source
from autograder.student.compare import ComprobacionFallida
from autograder.student.messages import CATALOGO, texto

DONE = ("ch01", "ch02", "ch03", "ch04", "ch05", "ch06", "ch07")
SELECTED = [c for c in chapters() if c.key in DONE]

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
LITERAL = r"(?:True|False|None|-?\d+(?:\.\d+)?(?:e-?\d+)?|'[^']*'|\"[^\"]*\")"
ALLOWED_SPAN = re.compile(
    rf"\.?{NAME}(?:\.{NAME})*(?:\(\)|\.)?"  # a name: `model.eval()`, `.clone()`, `head.`
    rf"|{NAME}={LITERAL}"  # a keyword argument set to a literal: `retain_graph=True`
    rf"|{LITERAL}"  # a literal: `None`, `1e-6`
    r"|\{[a-z_]+\}")  # a placeholder filled from the diagnosis facts
MIN_LINE = 12


def code_spans(text):
    return re.findall(r"`([^`]+)`", text)


def solution_lines(chapter):
    lines, inside = set(), False
    for line in chapter.source.read_text().splitlines():
        stripped = " ".join(line.split())
        if stripped.startswith("### BEGIN SOLUTION"):
            inside = True
        elif stripped.startswith("### END SOLUTION"):
            inside = False
        elif (inside and len(stripped) >= MIN_LINE and not stripped.startswith("#")
              and not ALLOWED_SPAN.fullmatch(stripped)):  # `model.eval()` only names a call
            lines.add(stripped)
    return lines


def hint_problems(hints, lines):
    problems = []
    for key, hint in hints.items():
        flat = " ".join(hint.split())
        problems += [f"{key}: code to paste `{span}`" for span in code_spans(hint)
                     if not ALLOWED_SPAN.fullmatch(span.strip())]
        problems += [f"{key}: quotes the solution line {line!r}" for line in lines
                     if line in flat]
    return problems


def test_the_rule_catches_the_fixes_it_is_meant_to_catch():
    lines = {"if (i + 1) % accum == 0 or i + 1 == len(loader):"}
    bad = {"a": "Da un paso también al final: `if (i + 1) % accum == 0 or i + 1 == len(loader):`",
           "b": "Guarda `{m: m.training for m in model.modules()}`.",
           "c": "Usa `LinearLR(optimizer, start_factor=1/(W+1))`.",
           "d": "Orden: `scaler.scale(loss).backward()`, `scaler.unscale_(optimizer)`.",
           "e": "if (i + 1) % accum == 0 or i + 1 == len(loader): da el paso",
           "f": "Envuelve el pase en `with torch.no_grad():`."}
    assert {p.split(":")[0] for p in hint_problems(bad, lines)} == set(bad)
    good = {"a": "¿Qué llama a `scaler.unscale_` antes de `clip_grad_norm_`? Mira `model.eval()`, "
                 "`.clone()`, `retain_graph=True`, `None`, `{nombre}` y los nombres `head.`."}
    assert hint_problems(good, lines) == []


def test_common_hints_hand_over_no_fix():
    own = set()
    for chapter in chapters():
        own |= set(chapter.module("student").MENSAJES)
    lines = set().union(*(solution_lines(c) for c in SELECTED)) if SELECTED else set()
    hints = {key: entry[2] for key, entry in CATALOGO.items() if key not in own}
    assert hint_problems(hints, lines) == []


@pytest.mark.parametrize("chapter", SELECTED, ids=lambda c: c.key)
def test_chapter_hints_hand_over_no_fix(chapter):
    hints = {key: entry[2] for key, entry in chapter.module("student").MENSAJES.items()}
    assert hint_problems(hints, solution_lines(chapter)) == []


@pytest.mark.parametrize("chapter", SELECTED, ids=lambda c: c.key)
def test_fixes_name_known_diagnoses_and_never_reach_the_notebook(chapter):
    fixes = fixes_for(chapter.key)
    assert set(fixes) <= set(CATALOGO), set(fixes) - set(CATALOGO)
    injected = helper_source(chapter.key)
    assert "Cómo corregirlo" in texto("sin_step", {}, arreglo=ARREGLOS["sin_step"])
    assert [key for key, fix in fixes.items() if fix in injected] == []


@pytest.mark.parametrize("chapter", SELECTED, ids=lambda c: c.key)
def test_graded_feedback_shows_the_fix_and_the_public_check_does_not(chapter):
    fixes = fixes_for(chapter.key)
    student = chapter.module("student")
    table = chapter.module("hidden").HIDDEN
    shown = 0
    for variant in all_variants([chapter.key]):
        if variant.correct or variant.expected not in fixes:
            continue
        result = grade_hidden(variant.exercise, table, variant.function)
        if result.diagnostico != variant.expected:
            continue
        report = result.informe("Pruebas ocultas")
        assert "Cómo corregirlo: " + fixes[variant.expected] in report, variant.name
        quiet = contextlib.redirect_stdout(io.StringIO())
        with quiet, pytest.raises(ComprobacionFallida) as failure:
            getattr(student, "comprobar_" + variant.exercise)(variant.function)
        assert "Cómo corregirlo" not in str(failure.value), variant.name
        shown += 1
        if shown == 2:
            break
    assert shown, f"no wrong variant of {chapter.key} is diagnosed with a fix"
