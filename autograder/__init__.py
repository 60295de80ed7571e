"""Autograder for the course "Autograd y el loop de optimización".

Subpackages: ``student`` (code injected into student notebooks: comparison,
diagnosis, public checks), ``reference`` (reference solutions), ``checks``
(hidden tests). Modules: ``build`` (solutions/ -> notebooks/), ``pipeline``
(grade a class with nbgrader), ``catalogue`` (list of exercises).
"""
