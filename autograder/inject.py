"""The code the build injects into student notebooks, assembled from ``autograder/student``.

Student notebooks must run on a stock Colab image, where ``autograder`` is not
installed. The modules in ``autograder/student`` are written to run there (stdlib
and torch only); this module concatenates them into one cell, dropping their
intra-package imports, so the notebook defines the same functions the package does.
"""

from pathlib import Path

PACKAGE_DIR = Path(__file__).parent
STUDENT_DIR = PACKAGE_DIR / "student"
COMMON_MODULES = ("notebook", "messages", "diagnosis", "compare")
HEADER = (
    "#@title Utilidades del curso (celda generada: ejecútala y sigue; no hace falta leerla)\n"
    "# Generada por `python -m autograder build` desde {modules}.\n"
    "# No la edites: al calificar se restaura su versión original.\n"
)
# Everything runs inside one function so that the helpers see each other through its
# scope, not through the notebook's globals: a student (or a demo) who defines a
# function with the same name as an internal helper cannot break the checks.
WRAPPER = ("def _utilidades_del_curso():\n{body}\n"
           "    return {{n: v for n, v in locals().items() if n in {exports!r}}}\n")
FOOTER = ("globals().update(_utilidades_del_curso())\ndel _utilidades_del_curso\n"
          "info_entorno({options})\n")
# A chapter's student module may set INFO_ENTORNO = {...}: keyword arguments of the
# runtime report its helper cell ends with (e.g. chapter 6 asks for GPU advice).
RUNTIME_OPTIONS = "INFO_ENTORNO"


def _strip_package_imports(source):
    """Drop ``from autograder... import (...)`` statements, single or multi-line."""
    kept, skipping = [], False
    for line in source.splitlines():
        if line.startswith("from autograder"):
            skipping = line.rstrip().endswith("(")
            continue
        if skipping:
            skipping = not line.strip().startswith(")")
            continue
        kept.append(line)
    return "\n".join(kept)


def helper_modules(chapter):
    """The files injected into chapter ``chapter`` (e.g. "ch01"), in dependency order: the
    common notebook side, then the chapter's own (``chapters/chNN/student.py``)."""
    modules = [STUDENT_DIR / f"{name}.py" for name in COMMON_MODULES]
    own = PACKAGE_DIR / "chapters" / chapter / "student.py"
    if own.is_file():
        modules.append(own)
    return modules


def _module_constant(module_source, name, default):
    """The literal value a module assigns to ``name`` at top level (``default`` if none)."""
    import ast

    for node in ast.parse(module_source).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    return default


def exported_names(module_source):
    """The names a student module offers the notebook: its ``__all__`` (none if absent)."""
    return list(_module_constant(module_source, "__all__", []))


def runtime_options(chapter):
    """Keyword arguments of ``info_entorno`` in chapter ``chapter``'s helper cell."""
    path = PACKAGE_DIR / "chapters" / chapter / "student.py"
    return _module_constant(path.read_text(), RUNTIME_OPTIONS, {}) if path.is_file() else {}


def top_level_names(module_source):
    """Names a module binds at top level (functions, classes, assignments), by line; dunder
    names and imports left out: every module has its ``__all__`` and imports torch."""
    import ast

    names = {}
    for node in ast.parse(module_source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            targets = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            nodes = node.targets if isinstance(node, ast.Assign) else [node.target]
            targets = [n.id for t in nodes for n in ast.walk(t) if isinstance(n, ast.Name)]
        else:
            continue
        for name in targets:
            if not name.startswith("__"):
                names.setdefault(name, node.lineno)
    return names


def shadowed_names(named_sources):
    """(name, later module, earlier module) for each top-level name two of the
    ``(module name, source)`` pairs define. In the helper cell all modules share one scope,
    so a later definition silently replaces the earlier one for every helper that calls
    it, while in the package each module keeps its own: the notebook and the grader would
    then run different checks."""
    first, found = {}, []
    for module, source in named_sources:
        for name in top_level_names(source):
            if name in first and first[name] != module:
                found.append((name, module, first[name]))
            first.setdefault(name, module)
    return found


def helper_source(chapter):
    """Source of the injected helper cell for ``chapter``; a ``ValueError`` if two of its
    modules define the same name (see ``shadowed_names``)."""
    modules = helper_modules(chapter)
    names = [(m.relative_to(PACKAGE_DIR.parent).as_posix(), m.read_text()) for m in modules]
    clashes = shadowed_names(names)
    if clashes:
        raise ValueError("the helper cell of {} would shadow shared helpers: {}; rename "
                         "the chapter's own".format(chapter, "; ".join(
                             f"{later} redefines `{name}` of {earlier}"
                             for name, later, earlier in clashes)))
    bodies, exports = [], []
    for module in modules:
        source = module.read_text()
        exports += exported_names(source)
        name = module.relative_to(PACKAGE_DIR.parent).as_posix()
        body = f"# ---- {name} ----\n{_strip_package_imports(source).strip()}\n"
        bodies.append("\n".join(("    " + line) if line.strip() else "" for line in
                                 body.splitlines()))
    header = HEADER.format(modules=", ".join(
        m.relative_to(PACKAGE_DIR.parent).as_posix() for m in modules))
    options = ", ".join(f"{k}={v!r}" for k, v in sorted(runtime_options(chapter).items()))
    return (header + WRAPPER.format(body="\n\n".join(bodies), exports=sorted(exports))
            + FOOTER.format(options=options))
