"""Student-visible contracts are in Spanish: every docstring a student reads in a notebook
(the exercise stubs and every function a chapter's source defines, and the course helpers
the notebooks export, which ``help()`` shows). Identifiers stay in English, so code spans
and names are left out before the words are counted."""

import ast
import importlib
import re

import jupytext
import pytest

from autograder.course import chapters
from autograder.inject import exported_names, helper_modules

CODE_RE = re.compile(r"``.*?``|`[^`\n]*`", re.DOTALL)
# A token with code in it (a dotted name, a call, snake_case, an operator) is not prose.
IDENTIFIER_RE = re.compile(r"\S*[_.()\[\]=@<>*/]\S*")
WORD_RE = re.compile(r"[A-Za-zÁÉÍÓÚÜÑáéíóúüñ]+")
# Function words of each language that the other never uses as a word.
ENGLISH = {"the", "returns", "return", "must", "of", "and", "with", "is", "are", "be", "that",
           "which", "each", "its", "it", "should", "unchanged", "leaves", "given", "from",
           "into", "when", "if", "or", "this", "these", "every", "only", "without", "by",
           "to", "for", "an", "has", "have", "does", "not", "where", "whose", "how", "your",
           "against", "on", "then", "after", "before", "while", "what", "than", "at", "as",
           "check", "public"}
SPANISH = {"el", "la", "los", "las", "de", "del", "que", "y", "con", "sin", "por", "para",
           "un", "una", "se", "su", "sus", "es", "son", "cada", "devuelve", "recibe", "debe",
           "deja", "cuando", "si", "o", "en", "lo", "al", "como", "no"}


def words(doc):
    prose = IDENTIFIER_RE.sub(" ", CODE_RE.sub(" ", doc))
    return [w.lower() for w in WORD_RE.findall(prose)]


def english_words(doc):
    return [w for w in words(doc) if w in ENGLISH]


def spanish_words(doc):
    return [w for w in words(doc) if w in SPANISH]


def looks_english(doc):
    """English when English function words are more than a third of the Spanish ones
    (a Spanish contract may quote an English phrase; an English one has few Spanish
    words, all of them in names)."""
    english = len(english_words(doc))
    return english > 0 and english * 3 > len(spanish_words(doc))


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node


def student_docstrings():
    """(where, docstring) of everything a student reads with ``help()`` in a notebook."""
    found = []
    for chapter in chapters():
        for index, cell in enumerate(jupytext.read(chapter.source).cells):
            if cell.cell_type != "code":
                continue
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:  # magics live only in demonstrations without functions
                continue
            for node in _functions(tree):
                doc = ast.get_docstring(node)
                if doc:
                    found.append((f"{chapter.name} cell {index}: {node.name}", doc))
        for path in helper_modules(chapter.key):
            source = path.read_text()
            module = importlib.import_module(
                "autograder." + path.relative_to(path.parents[2] if "chapters" in path.parts
                                                 else path.parents[1]).with_suffix("")
                .as_posix().replace("/", "."))
            for name in exported_names(source):
                doc = getattr(module, name).__doc__
                if doc:
                    found.append((f"{path.name}: {name}", doc))
    return sorted(set(found))


DOCSTRINGS = student_docstrings()


def test_the_heuristic_tells_the_languages_apart():
    assert looks_english("Returns the gradients of ``loss`` and leaves the inputs unchanged. "
                         "Must not use autograd.")
    assert not looks_english("Devuelve los gradientes de ``loss`` y deja las entradas intactas "
                             "(``x.grad`` is not touched). No debe usar autograd.")


@pytest.mark.parametrize("where,doc", DOCSTRINGS, ids=[w for w, _ in DOCSTRINGS])
def test_student_visible_docstrings_are_spanish(where, doc):
    assert not looks_english(doc), f"{where}: {english_words(doc)}"
