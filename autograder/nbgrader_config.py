"""nbgrader configuration of the course: the one place it is set.

``python -m autograder build`` copies this file to the course root
(build/course/nbgrader_config.py) so the nbgrader CLI and JupyterLab's formgrader
read it too. Loaded in process by ``autograder.course.load_config``.
"""

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearOutput,
    DeduplicateIds,
    GetGrades,
    IgnorePattern,
    LimitOutput,
    OverwriteKernelspec,
    SaveAutoGrades,
)

from autograder.course import TEMPLATES_DIR
from autograder.execute import GradingExecute
from autograder.facts import METADATA_KEY
from autograder.feedback_exporter import FeedbackPageExporter
from autograder.preprocessors import (
    DropStderrFromTests,
    ExerciseTitles,
    HideHiddenTests,
    LatePenaltyLine,
    OverwriteCellsWithIds,
    RestoreHelperCell,
    SanitizeStudentContent,
    SkipDemoCells,
    StatusBanner,
)
from autograder.term import TermLatePenalty

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

c.CourseDirectory.course_id = "autograd-loop"

# Student stubs, in Spanish.
c.ClearSolutions.code_stub = {"python": "# TU CÓDIGO AQUÍ\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "TU RESPUESTA AQUÍ"

# Submissions are graded even for students not yet in the gradebook.
c.Autograde.create_student = True

# Deleted graded cells come back from the gradebook (nbgrader restores only those).
c.OverwriteCells.add_missing_cells = True
c.OverwriteCells.missing_cell_notification = (
    "# Esta celda faltaba en la entrega y se restauró al calificar.\n"
)

# Per-cell limit; an interrupted cell fails and execution goes on with the next one.
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True
# And for the whole notebook (hidden tests and restarted kernels included): past it the
# running cell is interrupted and no other runs (autograder/execute.py).
c.GradingExecute.notebook_timeout = 300

# Submissions run in the hardened kernel (autograder/kernel.py: resource limits, audit
# guard); `python -m autograder build` registers it in this environment.
c.GradingExecute.kernel_name = "autograder-hardened"
# The kernel is thrown away after grading: no graceful shutdown to wait for.
c.GradingExecute.shutdown_kernel = "immediate"

# Order matters:
# - RestoreHelperCell runs after OverwriteCells(WithIds), which fixes the metadata it reads.
c.Autograde.sanitize_preprocessors = [
    ClearOutput,
    DeduplicateIds,
    OverwriteKernelspec,
    OverwriteCellsWithIds,
    RestoreHelperCell,
    CheckCellMetadata,
]
# - SkipDemoCells must run before GradingExecute (nbgrader's Execute, scoring hidden
#   tests in this process); DropStderrFromTests after it and before SaveAutoGrades,
#   which reads stderr as a failure.
# - SanitizeStudentContent last: the notebook it leaves is what the feedback and the
#   formgrader render (it rewrites markdown cells, so it runs after SaveAutoGrades has
#   compared answer cells with the released ones).
c.Autograde.autograde_preprocessors = [
    SkipDemoCells,
    GradingExecute,
    DropStderrFromTests,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
    SanitizeStudentContent,
]

# nbconvert validates the whole notebook after each preprocessor (16 of them here, 6 in
# feedback: ~0.2 s per notebook); validating once after the last one is enough, and
# changes nothing for a valid notebook (an invalid one still fails, naming no preprocessor).
c.Autograde.NotebookExporter.optimistic_validation = True
c.GenerateFeedback.HTMLExporter.optimistic_validation = True

# Late penalties: the due dates and the policy are in term.toml (autograder/term.py); the
# build writes the due dates into the gradebook, nbgrader reads the submission time from
# each submission's timestamp.txt, and this plugin says what the lateness costs.
c.AssignLatePenalties.plugin_class = TermLatePenalty

# GradingExecute writes what it found into the notebook's metadata (autograder.facts), which
# grading and the feedback read. ClearMetadataPreprocessor is off (nbconvert's default);
# whoever turns it on keeps those facts.
c.ClearMetadataPreprocessor.preserve_nb_metadata_mask = {("language_info", "name"),
                                                         (METADATA_KEY,)}

# Feedback: HideHiddenTests after GetGrades (which reads the scores of the cells);
# StatusBanner puts the status and the intake notes first, LatePenaltyLine the lateness
# and its cost after them (GetGrades reads the penalty); ExerciseTitles gives the
# template the chapter's and exercises' names.
c.GenerateFeedback.preprocessors = [GetGrades, HideHiddenTests, StatusBanner, LatePenaltyLine,
                                    ExerciseTitles,
                                    CSSHTMLHeaderPreprocessor]
# The page in Spanish, without MathJax or any other network load
# (autograder/templates/feedback_es). Set for feedback's exporter only (a section nested in
# GenerateFeedback): the formgrader keeps nbgrader's own template.
c.GenerateFeedback.HTMLExporter.template_name = "feedback_es"
c.GenerateFeedback.HTMLExporter.extra_template_basedirs = [str(TEMPLATES_DIR)]
# Without HTMLExporter's last pass over the whole page (autograder/feedback_exporter.py).
c.GenerateFeedback.exporter_class = FeedbackPageExporter

# LMS downloads ("download all submissions"): `python -m autograder collect-lms` (autograder/
# lms.py) and nbgrader's own `zip_collect` match each file name against this pattern (the
# whole extracted path). These are Canvas's names: <login>_[late_]<user id>_<submission
# id>_<file>.ipynb. Besides nbgrader's student_id and file_id (and timestamp, when an LMS
# names the submission time), collect-lms reads two optional groups: `late` (a late marker
# with no time) and `submission_id` (increasing: orders resubmissions). For another LMS,
# set the pattern here (the course's copy is regenerated by every build).
c.FileNameCollectorPlugin.named_regexp = (
    r"^(?:.*/)?(?P<student_id>[^_/]+)_(?:(?P<late>late|LATE)_)?\d+_(?P<submission_id>\d+)_"
    r"(?P<file_id>[^/]+\.ipynb)$"
)
c.FileNameCollectorPlugin.valid_ext = [".ipynb"]
