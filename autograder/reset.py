"""``python -m autograder reset-course``: a clean course for a new class. What the last
class left (submissions, the older ones a later LMS download replaced, graded notebooks,
feedback, LMS downloads, the gradebook, nbgrader's own export and the grades folder) is moved
into ``build/archive/<time>/``, never deleted; the course secret stays, so the course's
hidden inputs do not change."""

import shutil
import time

from autograder.course import COURSE_DIR, GRADES_DIR
from autograder.hidden.seeds import SECRET_FILE

# What one class leaves in a course folder (nbgrader's names, collect-lms's replaced/ and
# the grades.csv of `nbgrader export`); source/ and release/ are the course itself, rebuilt
# from solutions/.
CLASS_ENTRIES = ("submitted", "replaced", "autograded", "feedback", "downloaded",
                 "gradebook.db", "grades.csv")


def archive_dir(course_dir, stamp):
    return course_dir.parent / "archive" / stamp


def reset_course(course_dir=COURSE_DIR, grades_dir=GRADES_DIR, stamp=None):
    """Move the last class out of ``course_dir`` and ``grades_dir`` into the archive;
    the lines returned say what went where and what was kept."""
    stamp = stamp or time.strftime("%Y%m%d-%H%M%S")
    archive = archive_dir(course_dir, stamp)
    moved = [(course_dir / name, archive / "course" / name) for name in CLASS_ENTRIES]
    moved.append((grades_dir, archive / "grades"))
    said = []
    for old, new in moved:
        if old.exists():
            new.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(old), str(new))
            said.append(f"moved {old} to {new}")
    secret = course_dir / SECRET_FILE
    if secret.exists():
        said.append(f"kept {secret}: the course secret, so every hidden input stays the same "
                    "(move it away yourself before the next build for new ones)")
    return said
