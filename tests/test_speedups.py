"""The per-process caches of autograder.speedups change how fast, never what comes out."""

import nbformat
import pytest
from nbconvert import HTMLExporter

from autograder import speedups


def _notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Título"),
                nbformat.v4.new_code_cell("1 + 1", execution_count=1,
                                          outputs=[nbformat.v4.new_output(
                                              "execute_result", {"text/plain": "2"},
                                              execution_count=1)])]
    return nb


def test_feedback_html_and_validation_are_unchanged_by_the_caches():
    nb = _notebook()
    before = HTMLExporter().from_notebook_node(nb)[0]
    speedups.install()
    speedups.install()  # idempotent: no double wrapping
    first, second = (HTMLExporter().from_notebook_node(nb)[0] for _ in range(2))
    assert before == first == second
    cache = next(iter(HTMLExporter._create_environment.bytecode_caches.values()))
    assert cache.store, "the second exporter should have reused compiled templates"

    extra = _notebook()
    extra.cells[1].metadata["nuevo"] = 1
    extra.cells[1]["campo_extra"] = 1  # allowed only by the relaxed validator
    nbformat.validate(extra, relax_add_props=True)
    nbformat.validate(extra, relax_add_props=True)  # from the cache
    broken = _notebook()
    broken.cells[1].outputs[0].output_type = "no_existe"
    with pytest.raises(nbformat.ValidationError):
        nbformat.validate(broken, relax_add_props=True)
