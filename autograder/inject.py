"""The code the build injects into student notebooks, assembled from ``autograder/student``.

Student notebooks must run on a stock Colab image, where ``autograder`` is not
installed. The modules in ``autograder/student`` are written to run there (stdlib
and torch only); this module concatenates them into one cell, dropping their
intra-package imports, so the notebook defines the same functions the package does.
"""

from pathlib import Path

STUDENT_DIR = Path(__file__).parent / "student"
COMMON_MODULES = ("notebook", "mensajes", "diagnostico", "compare")
HEADER = (
    "#@title Utilidades del curso (celda generada: ejecútala y sigue; no hace falta leerla)\n"
    "# Generada por `python -m autograder build` desde autograder/student/{modules}.\n"
    "# No la edites: al calificar se restaura su versión original.\n"
)


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
    """Module names injected into chapter ``chapter`` (e.g. "ch01"), in dependency order."""
    modules = list(COMMON_MODULES)
    if (STUDENT_DIR / f"{chapter}.py").is_file():
        modules.append(chapter)
    return modules


def helper_source(chapter):
    """Source of the injected helper cell for ``chapter``."""
    modules = helper_modules(chapter)
    parts = [HEADER.format(modules=", ".join(f"{m}.py" for m in modules))]
    for module in modules:
        body = _strip_package_imports((STUDENT_DIR / f"{module}.py").read_text())
        parts.append(f"# ---- {module}.py ----\n{body.strip()}\n")
    parts.append("info_entorno()\n")
    return "\n".join(parts)
