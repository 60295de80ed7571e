"""Read the code a student wrote, before it runs, for ways into the interpreter's machinery.

The guard in the kernel watches from inside the student's own interpreter, which their code
owns: code that reaches into the garbage collector, ``sys.modules``, torch's C layer, native
calls or low-level process creation can get around any in-process check. Such code is not
needed by any exercise of the course, so it is flagged for an instructor to look at: a note
on that submission (grades.csv, its feedback page, the class report's "needs a human" list),
never a silent grade. Decided here, in the grader, on the notebook's text; cells identical to
the released notebook's are the course's own and are not read.
"""

import ast

# Modules whose import alone is a way in (or out).
MODULES = frozenset({"ctypes", "gc", "_posixsubprocess", "cffi", "_ctypes", "posix", "_thread",
                     "autograder", "_testcapi", "mmap", "pty", "resource", "signal",
                     "subprocess", "multiprocessing"})
# Attributes that are ways in, by the dotted name the code spells.
DOTTED = frozenset({"sys.modules", "sys.settrace", "sys.setprofile", "sys.addaudithook",
                    "sys.audit", "sys._getframe", "sys.meta_path", "sys.path_hooks",
                    "os.fork", "os.forkpty", "os.posix_spawn", "os.posix_spawnp",
                    "os.system", "os.popen", "os.execv", "os.execve", "os.execvp", "os.kill",
                    "os._exit", "builtins.__import__", "torch._C"})
# Names whose call can import anything by a string.
IMPORTERS = frozenset({"__import__", "import_module"})
# IPython's ``!command`` and ``%system``, as its transformer writes them.
SHELL = frozenset({"system", "getoutput"})
FRAME_ATTRIBUTES = frozenset({"f_globals", "f_locals", "f_back", "f_builtins", "gi_frame",
                              "tb_frame", "__globals__", "__builtins__", "__subclasses__"})


def _parse(source):
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)  # magics, !commands
    except Exception:  # noqa: BLE001 - without IPython the plain source is parsed
        pass
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None  # it fails when it runs, visibly


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def findings(source):
    """What in ``source`` reaches into the interpreter (sorted, each once)."""
    tree = _parse(source)
    if tree is None:
        return []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {f"import {a.name}" for a in node.names
                      if a.name.split(".")[0] in MODULES or a.name.startswith("torch._C")}
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in MODULES or node.module.startswith("torch._C"):
                found.add(f"from {node.module} import …")
            elif node.module in ("sys", "os", "torch"):
                found |= {f"{node.module}.{a.name}" for a in node.names
                          if f"{node.module}.{a.name}" in DOTTED}
        elif isinstance(node, ast.Attribute):
            name = _dotted(node)
            if name is not None and any(name == d or name.startswith(d + ".") for d in DOTTED):
                found.add(next(d for d in DOTTED if name == d or name.startswith(d + ".")))
            if node.attr in FRAME_ATTRIBUTES:
                found.add(f".{node.attr}")
        elif isinstance(node, ast.Call):
            called = _dotted(node.func) or ""
            if called.split(".")[-1] in IMPORTERS:
                found.add(f"{called}(…)")
            if isinstance(node.func, ast.Attribute) and node.func.attr in SHELL:
                found.add("!orden (una orden del sistema)")
        elif isinstance(node, ast.Name) and node.id in FRAME_ATTRIBUTES:
            found.add(node.id)
    return sorted(found)


def review_note(nb, release):
    """The note for an instructor when the student's own cells of ``nb`` reach into the
    interpreter (``release``: the released notebook, whose cells are not read), or None."""
    ours = {cell.source for cell in release.cells if cell.cell_type == "code"}
    found = sorted({f for cell in nb.cells if cell.cell_type == "code"
                    and cell.source not in ours for f in findings(cell.source)})
    if not found:
        return None
    shown = ", ".join(found[:6]) + (", …" if len(found) > 6 else "")
    return (f"revisar a mano: el código de la entrega usa {shown}, que ningún ejercicio "
            "necesita y que puede saltarse las comprobaciones dentro del kernel")
