"""Reading what students hand in without following what it points to.

A submission is only what its own files hold. A symbolic link (to the course's solution
notebook, to another student's folder), a hard link to a file elsewhere, a FIFO or a device
is refused, never read: followed, a link to the solution was graded as the student's work
and shown in their feedback. Each refusal is a Spanish reason for that student's feedback;
everyone else is graded as usual.

Files are opened with ``O_NOFOLLOW`` and checked on the open descriptor (``fstat``), so a
link swapped in between the check and the read is refused too; folders are checked with
``lstat`` on the way down (``walk_refusal``).
"""

import os
import stat
from pathlib import Path

# Far above any notebook (the biggest with outputs are a few MB), far below what would
# fill the grader's memory.
MAX_BYTES = 64 * 1024 * 1024


class Refused(Exception):
    """Why a file or folder of a submission is not read (Spanish, for the feedback)."""


def kind_refusal(name, mode, links):
    """The reason to refuse an entry of this type and link count (None: a plain one)."""
    if stat.S_ISLNK(mode):
        return f"entrega rechazada: «{name}» es un enlace simbólico"
    if stat.S_ISDIR(mode):
        return None
    if not stat.S_ISREG(mode):
        return f"entrega rechazada: «{name}» no es un archivo normal"
    if links > 1:
        return f"entrega rechazada: «{name}» es un enlace (duro) a otro archivo"
    return None


def refusal(path):
    """The reason ``path`` (not followed) is refused, or None for a plain file or folder."""
    info = os.lstat(path)
    return kind_refusal(Path(path).name, info.st_mode, info.st_nlink)


def walk_refusal(folder):
    """The first reason to refuse anything in ``folder`` or below it (links are not
    followed), or None when it holds only plain files and folders."""
    reason = refusal(folder)
    if reason:
        return reason
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted(dirs + files):  # a link to a folder is listed in dirs
            reason = refusal(Path(root) / name)
            if reason:
                return reason
    return None


def read_regular(path, limit=MAX_BYTES):
    """The bytes of ``path`` when it is a plain file of its own; ``Refused`` otherwise."""
    name = Path(path).name
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        if os.path.islink(path):
            raise Refused(kind_refusal(name, stat.S_IFLNK, 1)) from None
        raise Refused(f"entrega rechazada: «{name}» no se pudo abrir ({error.strerror})") \
            from None
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        reason = kind_refusal(name, info.st_mode, info.st_nlink)
        if reason:
            raise Refused(reason)
        data = file.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"entrega rechazada: «{name}» supera {limit // 2**20} MB")
    return data


def copy_regular(source, target):
    """Copy a plain file (refusing as ``read_regular`` does); the copy is the grader's own."""
    Path(target).write_bytes(read_regular(source))
