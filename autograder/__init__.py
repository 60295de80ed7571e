"""Autograder for the course "Autograd y el loop de optimización".

Subpackages: ``student`` (code injected into student notebooks: comparison,
diagnosis, public checks), ``reference`` (reference solutions), ``checks``
(hidden tests). Modules: ``build`` (solutions/ -> notebooks/), ``pipeline``
(grade a class with nbgrader), ``catalogue`` (list of exercises).
"""

import sys

# jsonschema (which nbformat imports) loads rfc3987_syntax, when installed, for its optional
# "iri" format checks: it builds a Lark grammar at import, about 1.2 s in every process
# that imports nbformat (each grading run, its workers' seed, each command). Nothing here
# checks that format; a missing module makes jsonschema skip it.
sys.modules.setdefault("rfc3987_syntax", None)
