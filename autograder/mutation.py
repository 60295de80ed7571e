"""Mutation testing of the hidden tests: how many small, deliberate bugs in each reference
solution they catch.

Each mutant is the solution cell of one exercise (``solutions/NN_*.py``) with one change:
an operator swapped (``+``/``-``, ``*``/``/``, ``<``/``<=``...), a constant nudged (off by
one, doubled, ``True``/``False``, ``"mean"``/``"sum"``), a call swapped for its usual
confusion (``mean``/``sum``, ``max``/``min``, ``train``/``eval``, ``no_grad``/``enable_grad``),
a ``detach()``/``clone()`` dropped, a keyword argument dropped, or a statement removed. A
mutant is *killed* when the hidden tests take points from it for every student drawn; one
that no test can tell from the reference (it computes the same thing) is *equivalent*, and
each chapter lists those by id, with the reason, in ``EQUIVALENT_MUTANTS`` of its
``hidden.py``. Everything else *survives*: a hole in the hidden tests.
"""

import ast
import contextlib
import copy
import io
import signal
import warnings
from dataclasses import dataclass

import jupytext

from autograder.course import chapters
from autograder.hidden.reference import load_reference
from autograder.hidden.runner import grade_hidden
from autograder.markers import solution_cell_of, solution_code

STUDENTS = ("ana", "bruno", "carla")
SECRET = "pruebas-de-mutacion"
MUTANT_SECONDS = 20
MIN_SCORE = 0.95

BINARY_SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
                ast.Pow: ast.Mult, ast.FloorDiv: ast.Div, ast.MatMult: ast.Mult}
COMPARE_SWAPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                 ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
                 ast.In: ast.NotIn, ast.NotIn: ast.In}
NAME_SWAPS = {"mean": "sum", "sum": "mean", "max": "min", "min": "max", "amax": "amin",
              "amin": "amax", "train": "eval", "eval": "train", "no_grad": "enable_grad",
              "enable_grad": "no_grad", "log1p": "log", "exp": "expm1", "softmax": "log_softmax",
              "log_softmax": "softmax", "zeros_like": "ones_like", "ones_like": "zeros_like",
              "argmax": "argmin", "all": "any", "any": "all", "float32": "float16",
              "bfloat16": "float16", "float16": "bfloat16"}
STRING_SWAPS = {"mean": "sum", "sum": "mean", "none": "mean", "cuda": "cpu", "cpu": "cuda"}
DROPPED_CALLS = ("detach", "clone", "item", "abs", "float", "double", "contiguous")


@dataclass(frozen=True)
class Mutant:
    chapter: str
    exercise: str
    id: str  # stable within the exercise: what changed, and where in its function
    source: str  # the mutated solution cell


@dataclass(frozen=True)
class Verdict:
    mutant: Mutant
    outcome: str  # "killed", "survived", "equivalent", "stillborn"
    points: tuple = ()  # per student
    maximum: float = 0.0
    why: str = ""  # the equivalence reason, or why the mutant could not run


# ------------------------------------------------------------------ making mutants
def _children(node):
    """(field, index or None, child) for every child node, in source order."""
    for field, value in ast.iter_fields(node):
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield field, index, item
        elif isinstance(value, ast.AST):
            yield field, None, value


def _walk(node, path=()):
    yield path, node
    for field, index, child in _children(node):
        yield from _walk(child, (*path, (field, index)))


def _at(tree, path):
    node = tree
    for field, index in path:
        node = getattr(node, field) if index is None else getattr(node, field)[index]
    return node


def _replace(tree, path, new):
    parent = _at(tree, path[:-1])
    field, index = path[-1]
    if index is None:
        setattr(parent, field, new)
    else:
        getattr(parent, field)[index] = new


def _changes(node):
    """Every mutation of ``node`` alone: (label, function(copy of node) -> new node)."""
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY_SWAPS:
        new = BINARY_SWAPS[type(node.op)]
        yield (f"{type(node.op).__name__}→{new.__name__}",
               lambda n: ast.BinOp(n.left, new(), n.right))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE_SWAPS:
        new = COMPARE_SWAPS[type(node.ops[0])]
        yield (f"{type(node.ops[0]).__name__}→{new.__name__}",
               lambda n: ast.Compare(n.left, [new()], n.comparators))
    if isinstance(node, ast.BoolOp):
        new = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield f"{type(node.op).__name__}→{new.__name__}", lambda n: ast.BoolOp(new(), n.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        yield f"sin {type(node.op).__name__}", lambda n: n.operand
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            yield f"{value}→{not value}", lambda n: ast.Constant(not n.value)
        elif isinstance(value, int):
            for new in sorted({value + 1, value - 1, 0 if value else 1} - {value}):
                yield f"{value}→{new}", lambda n, new=new: ast.Constant(new)
        elif isinstance(value, float):
            for new in (value * 2, value / 2) if value else (1.0,):
                yield f"{value!r}→{new!r}", lambda n, new=new: ast.Constant(new)
        elif isinstance(value, str) and value in STRING_SWAPS:
            new = STRING_SWAPS[value]
            yield f"{value!r}→{new!r}", lambda n, new=new: ast.Constant(new)
    if isinstance(node, ast.Attribute) and node.attr in NAME_SWAPS:
        new = NAME_SWAPS[node.attr]
        yield f".{node.attr}→.{new}", lambda n, new=new: ast.Attribute(n.value, new, n.ctx)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in DROPPED_CALLS and not node.args:
            yield f"sin .{func.attr}()", lambda n: n.func.value
        for i, keyword in enumerate(node.keywords):
            if keyword.arg is not None:
                yield (f"sin {keyword.arg}=",
                       lambda n, i=i: ast.Call(n.func, n.args, n.keywords[:i] + n.keywords[i + 1:]))
    if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and (
            len(node.value.elts) == 2):
        yield "devuelve el par al revés", lambda n: ast.Return(
            ast.Tuple(n.value.elts[::-1], ast.Load()))


def _deletable(node, parent_body):
    """A statement whose removal is a plausible bug (not the last of its block, not a
    definition, a docstring or a ``return``)."""
    if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Return, ast.Pass)):
        return False
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return False  # a docstring
    return len(parent_body) > 1


def _function_path(tree, name):
    for path, node in _walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return path, node
    raise ValueError(f"the solution cell does not define {name}")


def mutants(chapter_key, exercise, cell_source):
    """Every mutant of ``exercise``'s function in its solution cell, with a stable id."""
    tree = ast.parse(solution_code(cell_source))
    root, function = _function_path(tree, exercise)
    first_line = function.lineno
    found, seen = [], set()
    for path, node in _walk(function):
        if node is function:
            continue
        full = (*root, *path)
        where = f"L{getattr(node, 'lineno', first_line) - first_line}"
        where += f":{getattr(node, 'col_offset', 0)}"
        for label, change in _changes(node):
            mutated = copy.deepcopy(tree)
            _replace(mutated, full, change(copy.deepcopy(_at(mutated, full))))
            found.append((f"{where} {label}", mutated))
        field, index = full[-1]
        if index is not None and isinstance(node, ast.stmt):
            body = getattr(_at(tree, full[:-1]), field)
            if _deletable(node, body):
                mutated = copy.deepcopy(tree)
                getattr(_at(mutated, full[:-1]), field)[index] = ast.Pass()
                found.append((f"{where} sin la instrucción «{ast.unparse(node)[:40]}»", mutated))
    result = []
    for ident, mutated in found:
        source = ast.unparse(ast.fix_missing_locations(mutated))
        if source in seen:
            continue
        seen.add(source)
        result.append(Mutant(chapter_key, exercise, ident, source))
    return result


def chapter_mutants(chapter):
    """Every mutant of every exercise of ``chapter``."""
    found = []
    for cell in jupytext.read(chapter.source).cells:
        name = solution_cell_of(cell)
        if name is not None:
            found += mutants(chapter.key, name, cell.source)
    return found


# ------------------------------------------------------------------ running them
class _TooSlow(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds):
    def expire(signum, frame):
        raise _TooSlow()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _compile(mutant):
    """The mutant's function, defined beside the chapter's imports and other solutions."""
    namespace = dict(vars(load_reference(mutant.chapter)))
    exec(compile(mutant.source, f"<mutante {mutant.id}>", "exec"), namespace)  # noqa: S102
    return namespace[mutant.exercise]


def judge(mutant, hidden, equivalent):
    """Run the hidden tests of ``mutant.exercise`` on it, for every student in STUDENTS."""
    if mutant.id in equivalent:
        return Verdict(mutant, "equivalent", why=equivalent[mutant.id])
    try:
        function = _compile(mutant)
    except Exception as error:  # noqa: BLE001 - a mutant that cannot be defined never runs
        return Verdict(mutant, "stillborn", why=f"{type(error).__name__}: {error}")
    points = []
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        for student in STUDENTS:
            try:
                with _time_limit(MUTANT_SECONDS):
                    result = grade_hidden(mutant.exercise, hidden, function, student, SECRET)
            except _TooSlow:
                return Verdict(mutant, "killed", why="no termina")
            points.append(result.puntos)
            maximum = result.maximo
    killed = all(p < maximum for p in points)
    return Verdict(mutant, "killed" if killed else "survived", tuple(points), maximum)


def mutation_verdicts(keys=None):
    """The verdict on every mutant of the given chapters (default: all)."""
    verdicts = []
    for chapter in chapters():
        if keys and chapter.key not in keys:
            continue
        hidden_module = chapter.module("hidden")
        equivalent = getattr(hidden_module, "EQUIVALENT_MUTANTS", {})
        for mutant in chapter_mutants(chapter):
            verdicts.append(judge(mutant, hidden_module.HIDDEN,
                                  equivalent.get(mutant.exercise, {})))
    return verdicts


@dataclass(frozen=True)
class Score:
    chapter: str
    exercise: str
    killed: int
    survived: int
    equivalent: int
    stillborn: int

    @property
    def share(self):
        live = self.killed + self.survived
        return self.killed / live if live else 1.0


def scores(verdicts):
    """Per exercise: killed, survived, equivalent, stillborn, in order of appearance."""
    counts = {}
    for v in verdicts:
        key = (v.mutant.chapter, v.mutant.exercise)
        counts.setdefault(key, {"killed": 0, "survived": 0, "equivalent": 0, "stillborn": 0})
        counts[key][v.outcome] += 1
    return [Score(chapter, exercise, **c) for (chapter, exercise), c in counts.items()]


def stale_equivalences(verdicts, keys=None):
    """Ids listed as equivalent that no current mutant has (the solution changed)."""
    present = {(v.mutant.chapter, v.mutant.exercise, v.mutant.id) for v in verdicts}
    stale = []
    for chapter in chapters():
        if keys and chapter.key not in keys:
            continue
        listed = getattr(chapter.module("hidden"), "EQUIVALENT_MUTANTS", {})
        stale += [(chapter.key, exercise, ident) for exercise, ids in listed.items()
                  for ident in ids if (chapter.key, exercise, ident) not in present]
    return stale
