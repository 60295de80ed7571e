"""The per-process caches of autograder.speedups change how fast, never what comes out."""

import nbformat
import pytest
from nbconvert import HTMLExporter
from nbconvert.exporters.templateexporter import TemplateExporter
from nbformat import validator

from autograder import speedups


def _notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Título"),
                nbformat.v4.new_code_cell("1 + 1", execution_count=1,
                                          outputs=[nbformat.v4.new_output(
                                              "execute_result", {"text/plain": "2"},
                                              execution_count=1)])]
    return nb


def _with_extra_field():
    nb = _notebook()
    nb.cells[1]["campo_extra"] = 1  # allowed only by the relaxed validator
    return nb


def _broken():
    nb = _notebook()
    nb.cells[1].outputs[0].output_type = "no_existe"
    return nb


def _uncached(monkeypatch):
    """Undo the caches for this test (other tests in the session may have installed them)."""
    speedups.install()
    monkeypatch.setattr(TemplateExporter, "_create_environment",
                        TemplateExporter._create_environment.__wrapped__)
    monkeypatch.setattr(validator, "get_validator", validator.get_validator.__wrapped__)


def test_feedback_html_is_unchanged_and_templates_are_reused(monkeypatch):
    nb = _notebook()
    with monkeypatch.context() as patch:
        _uncached(patch)
        before = HTMLExporter().from_notebook_node(nb)[0]
    speedups.install()  # idempotent: the caches are back, not wrapped twice
    assert not hasattr(TemplateExporter._create_environment.__wrapped__, "bytecode_caches")
    cache = TemplateExporter._create_environment.bytecode_caches.setdefault(
        HTMLExporter, speedups.MemoryBytecodeCache())
    first = HTMLExporter().from_notebook_node(nb)[0]
    hits = cache.hits
    second = HTMLExporter().from_notebook_node(nb)[0]
    assert before == first == second
    assert cache.hits > hits, "a new exporter should load the templates already compiled"


def test_validation_results_are_unchanged(monkeypatch):
    speedups.install()
    cached = validator.get_validator
    for _ in range(2):  # the second time from the cache
        nbformat.validate(_with_extra_field(), relax_add_props=True)
        with pytest.raises(nbformat.ValidationError):
            nbformat.validate(_broken(), relax_add_props=True)
    assert cached.relaxed_cache
    with monkeypatch.context() as patch:
        _uncached(patch)
        nbformat.validate(_with_extra_field(), relax_add_props=True)
        with pytest.raises(nbformat.ValidationError):
            nbformat.validate(_broken(), relax_add_props=True)


def test_cell_metadata_checks_are_unchanged_and_the_schema_checked_once():
    import jsonschema
    from nbgrader.nbgraderformat import MetadataValidator, common

    speedups.install()
    speedups.install()  # idempotent
    good = nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "grade_id": "a", "points": 1,
        "schema_version": 3}})
    bad = nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {
        "grade": "sí", "solution": False, "grade_id": "a", "schema_version": 3}})
    MetadataValidator().validate_cell(good)
    with pytest.raises(jsonschema.ValidationError) as cached:
        MetadataValidator().validate_cell(bad)
    assert len(common.jsonschema.validators) == 1  # two validators, one schema
    with pytest.raises(jsonschema.ValidationError) as stock:
        jsonschema.validate(bad.metadata["nbgrader"], MetadataValidator().schema)
    assert str(cached.value) == str(stock.value)


def test_sanitized_markdown_is_rendered_once_and_unchanged():
    from autograder.sanitize import markdown_block

    source = "## Ejercicio 1\n\n$x^2$ y <script>alert(1)</script> **negrita**"
    uncached = markdown_block.__wrapped__(source)
    hits = markdown_block.cache_info().hits
    assert markdown_block(source) == markdown_block(source) == uncached
    assert markdown_block.cache_info().hits > hits
    assert "<script" not in uncached and "<math" in uncached


def test_gradebooks_share_one_engine_per_database_and_work_as_before(tmp_path, monkeypatch):
    """Gradebook objects on one database share an engine (its compiled queries); what they
    write and read is unchanged, also with two open at once and after either closes."""
    import os
    import sys

    from nbgrader import api
    from nbgrader.api import Gradebook

    # A new gradebook asks `alembic` (this interpreter's) for its schema version.
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    speedups.install()
    speedups.install()  # idempotent
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as outer:
        outer.add_student("ana")
        with Gradebook(url) as inner:
            assert inner.engine is outer.engine
            inner.add_student("beto")
        assert [s.id for s in outer.students] == ["ana", "beto"]  # after inner closed
        outer.add_assignment("ch01")
    with Gradebook(url) as again:
        assert [s.id for s in again.students] == ["ana", "beto"]
        assert [a.name for a in again.assignments] == ["ch01"]
    with Gradebook(f"sqlite:///{tmp_path / 'otro.db'}") as other:
        assert other.engine is not again.engine and other.students == []
    assert hasattr(api.create_engine, "engines")
