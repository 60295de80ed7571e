"""The package's modules import each other as a DAG: no cycle, even through an import
written inside a function (those cycles only show up when that function runs)."""

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"
LOADED_AS_CONFIG = {"autograder.nbgrader_config"}  # read by traitlets, not imported


def _modules():
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _imports(name, path, modules):
    """The package's modules that ``name`` imports, anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {m for m in found if m in modules and m != name}


def _cycle(graph):
    """One cycle of ``graph`` as a list of modules, or None."""
    state, stack = {}, []

    def visit(module):
        state[module] = "open"
        stack.append(module)
        for other in sorted(graph[module]):
            if state.get(other) == "open":
                return stack[stack.index(other):] + [other]
            if other not in state and (found := visit(other)):
                return found
        stack.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_the_package_imports_form_a_dag():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert "autograder.parallel" in graph["autograder.pipeline"]  # the parser sees imports
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_a_cycle_would_be_found():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("name", sorted(set(_modules()) - LOADED_AS_CONFIG))
def test_every_module_imports(name):
    importlib.import_module(name)
