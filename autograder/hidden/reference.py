"""The reference implementations: the solution cells of each chapter's source, loaded here.

There is no second copy: what the hidden tests compare against is exactly what the
instructor notebook shows as the solution. Only the grader loads it (the kernel's sandbox
does not mount ``solutions/``, and its guard refuses to import this module).
"""

import ast
import builtins
import functools
import types

import jupytext

from autograder.course import chapter_named
from autograder.markers import solution_cell_of, solution_code


def _imports(cells):
    """Every top-level import statement of the source's code cells, by the name it binds."""
    found = {}
    for cell in cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # magics and shell lines live only in demonstration cells
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    found[(alias.asname or alias.name).split(".")[0]] = ast.unparse(node)
    return found


def _free_names(tree):
    bound, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else used).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return used - bound - set(dir(builtins))


@functools.cache
def load_reference(chapter_key):
    """The chapter's solution cells run in a namespace of their own, as a module-like
    object: ``load_reference("ch03").<function>``."""
    cells = jupytext.read(chapter_named(chapter_key).source).cells
    imports = _imports(cells)
    namespace = {"__name__": f"autograder.hidden.reference.{chapter_key}"}
    for cell in cells:
        if solution_cell_of(cell) is None:
            continue
        code = solution_code(cell.source)
        needed = sorted(_free_names(ast.parse(code)) & set(imports))
        exec("\n".join(imports[name] for name in needed), namespace)  # noqa: S102
        exec(compile(code, f"<solución {chapter_key}:{solution_cell_of(cell)}>", "exec"), namespace)
    return types.SimpleNamespace(**{k: v for k, v in namespace.items()
                                    if not k.startswith("__")})
