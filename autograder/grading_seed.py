"""The seed of the local grading pool: what every grading worker needs, imported once.

``LocalPool`` starts its workers through multiprocessing's fork server with this module
preloaded: the server (one per grading process, started as ``pipeline.grade`` begins, so
that it imports while the course is prepared and the submissions collected) starts the
machine's warm-kernel template, imports nbgrader, torch and the grading side of this
package, and warms what grading the first notebook would otherwise pay for (templates,
validators, exporters). Each worker is then a fork of it: it starts in milliseconds, and
exits without tearing any of it down. Workers of later runs in the same process (the
benchmark's chapters, a test session) are forked from the same seed.

The seed stays single-threaded, so forking it is safe: numpy's BLAS is loaded with one
thread (the graders' arithmetic is small), torch runs no parallel region before the fork
(``start_worker`` gives a worker the thread count a fresh process would have had), and
nothing here starts a ZMQ context, a kernel or an event loop. It never reads the course
secret or a submission: a worker does, after the fork. Anything that fails here costs
speed only: the worker imports or starts what it needs itself.
"""

import logging
import os
from pathlib import Path

PRELOAD = "autograder.plant_seed"  # the fork server imports it: it calls ``plant``
BLAS_THREADS = "OPENBLAS_NUM_THREADS"
log = logging.getLogger(__name__)
_seed = {}


def plant():
    """In the fork server, once: the template, then the imports and the warm caches."""
    from autograder.sandbox import prestart_warm_kernels
    from autograder.warm_kernel import thread_count

    # numpy's OpenBLAS starts its threads as it loads (torch and matplotlib load numpy).
    before = os.environ.get(BLAS_THREADS)
    os.environ[BLAS_THREADS] = "1"
    try:
        prestart_warm_kernels()  # first: the template imports while this does too
        import torch
        import torch._dynamo  # noqa: F401 - what an optimizer's first step imports: 1 s

        _seed["torch"] = torch
        import nbgrader.apps.api  # noqa: F401
        import nbgrader.preprocessors  # noqa: F401

        # What ``autograder.parallel`` (the workers' module, small) imports.
        from autograder import course, execute, feedback, grading, outcome  # noqa: F401

        warm_caches()
    finally:
        if before is None:
            os.environ.pop(BLAS_THREADS, None)
        else:
            os.environ[BLAS_THREADS] = before
    if thread_count() != 1:
        log.warning("La semilla de los trabajadores tiene %d hilos", thread_count())


def warm_caches():
    """What a worker's first notebook would pay once: every chapter's hidden tests imported,
    nbformat's validators compiled, the gradebook's SQLAlchemy mappers configured, the
    feedback page's templates compiled (into ``autograder.speedups``' caches, which the
    workers inherit)."""
    import nbformat
    import nbgrader
    import sqlalchemy.orm

    from autograder import speedups
    from autograder.course import TEMPLATES_DIR, chapter_modules
    from autograder.feedback_exporter import FeedbackPageExporter

    chapter_modules("hidden")
    speedups.install()
    for minor in (4, 5):
        notebook = nbformat.v4.new_notebook()
        notebook.nbformat_minor = minor
        nbformat.validate(notebook, relax_add_props=True)
        nbformat.validate(notebook)
    sqlalchemy.orm.configure_mappers()
    # As nbgrader's GenerateFeedback configures it (nbgrader_config.py names the template).
    formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    exporter = FeedbackPageExporter(
        template_name="feedback_es", extra_template_basedirs=[str(TEMPLATES_DIR)],
        extra_template_paths=[str(formgrader / "static" / "node_modules" / "bootstrap"
                                  / "dist" / "css")])
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("")])
    exporter.from_notebook_node(notebook, resources={"nbgrader": {
        "score": 0, "max_score": 0, "late_penalty": 0, "notebook": ""}, "titulos": {}})


def start_worker(threads=None):
    """In a worker, first thing: torch's thread count as a fresh process would have it, and
    this worker's channel to the machine's kernel template (or a template of its own).
    ``threads``: this worker's share of the cores (``sandbox.shared_kernel_threads``), set
    as OMP_NUM_THREADS for it and the kernels it starts."""
    from autograder.sandbox import kernel_threads, prestart_warm_kernels

    if threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    torch = _seed.get("torch")
    if torch is not None:
        torch.set_num_threads(int(kernel_threads()))
    prestart_warm_kernels()

