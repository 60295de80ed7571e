"""Autograder for the course "Autograd y el loop de optimización".

Subpackages: ``student`` (the common code injected into every student notebook:
comparison, diagnosis, messages), ``chapters`` (one folder per chapter: its injected
exercises and public checks, contract clauses, hidden tests and labelled variants),
``hidden`` (the grader's side of hidden tests: runner, seeds, the reference loaded from
the solution cells), ``report`` (the class report). The modules beside them build the
course, grade a class and export grades; docs/architecture.md maps each one.
"""

import sys

# jsonschema (which nbformat imports) loads rfc3987_syntax, when installed, for its optional
# "iri" format checks: it builds a Lark grammar at import, about 1.2 s in every process
# that imports nbformat (each grading run, its workers' seed, each command). Nothing here
# checks that format; a missing module makes jsonschema skip it.
sys.modules.setdefault("rfc3987_syntax", None)
