"""LMS downloads ("download all submissions") into the course's submitted/ folder, batch
after batch, losing nothing: ``python -m autograder collect-lms ASSIGNMENT ZIP [ZIP...]``.

Each file name is read with the course's pattern (``c.FileNameCollectorPlugin`` in
``autograder/nbgrader_config.py``, through nbgrader's own plugin): the student, the file,
and where the pattern has them a submission time (``timestamp``, parsed as nbgrader's
``zip_collect`` does), a late marker (``late``) and a submission id (``submission_id``).
A submission lands in ``submitted/<student>/<assignment>/`` with ``submission.json`` (what
was read) and ``timestamp.txt`` (nbgrader's: the submission time, for late penalties).

Which of two submissions is newer: the first of these that both have and that differ, in
this order: the submission time, the archive entry's date, the submission id (Canvas's
increases), the download (a later collect-lms run, or a later archive on its command line,
is newer; so is anything over a folder collected some other way). A newer one replaces what
is there, which is moved to ``replaced/<student>/<assignment>/<UTC time of the
replacement>/``, never deleted; an older one is skipped; an identical notebook is left.

A late marker without a time becomes the time ``term.toml`` says it stands for (the due
date plus ``marker_hours``), written into ``timestamp.txt`` here and again at every grading
(``marker_timestamp``), so a changed due date or policy applies.
"""

import hashlib
import json
import os
import shutil
import stat
import zipfile
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from nbgrader.plugins import FileNameCollectorPlugin
from nbgrader.utils import parse_utc

from autograder.course import COURSE_DIR, load_config
from autograder.safe_files import Refused, kind_refusal, read_regular
from autograder.term import load_term

SIDECAR = "submission.json"
TIMESTAMP = "timestamp.txt"
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # as nbgrader's exchange writes it
ORDER = ("submitted_at", "zip_time", "submission_id", "download")


@dataclass
class Received:
    """One submitted notebook found in a download, and what its name and entry said."""

    student: str
    file_name: str
    origin: str  # archive or folder, and the name inside it
    sha256: str
    submitted_at: str | None = None  # ISO, UTC: the LMS's submission time
    zip_time: str | None = None  # ISO, the archive entry's date (the zipping machine's clock)
    submission_id: int | None = None
    late_marker: bool = False
    download: list | None = None  # [ISO UTC time of the collect-lms run, archive index]


@dataclass
class Action:
    """What collecting one received notebook did: added, replaced, unchanged or skipped."""

    student: str
    action: str
    detail: str = ""
    kept_at: Path | None = None  # where the replaced submission now is

    def line(self):
        return f"{self.student}: {self.action}" + (f" ({self.detail})" if self.detail else "")


def _iso(moment):
    return None if moment is None else moment.isoformat()


def _received(name, data, origin, collector, zip_time, download):
    """A ``Received`` for a file named ``name``, or None when the pattern does not match."""
    info = collector.collect(name)
    if not info or info["student_id"] in (".", ".."):
        return None
    stamp, submission = info.get("timestamp"), info.get("submission_id")
    return Received(
        student=info["student_id"], file_name=Path(info["file_id"]).name,
        origin=f"{origin}: {name}", sha256=hashlib.sha256(data).hexdigest(),
        submitted_at=_iso(parse_utc(stamp)) if stamp else None,
        zip_time=_iso(zip_time), submission_id=int(submission) if submission else None,
        late_marker=bool(info.get("late")), download=download)


def _folder_files(folder):
    """(name inside ``folder``, bytes or ``Refused``) for every entry that is not a folder:
    links (to files or folders) and special files are refused, never followed."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(files + [d for d in dirs if os.path.islink(Path(root) / d)]):
            path = Path(root) / name
            try:
                data = read_regular(path)
            except Refused as refused:
                data = refused
            yield path.relative_to(folder).as_posix(), data


def _zip_refusal(entry):
    """Why a zip entry is not read: a link, a special file, or a name that climbs out."""
    name = entry.filename
    kind = stat.S_IFMT(entry.external_attr >> 16) or stat.S_IFREG  # 0: no Unix type
    if name.startswith("/") or ".." in Path(name).parts:
        return f"entrega rechazada: «{name}» apunta fuera de la carpeta de la descarga"
    return kind_refusal(name, kind, 1)


def read_downloads(paths, collector=None, now=None):
    """(Received, notebook bytes) for every file of the given zips or folders that the
    pattern matches, in the order given; where that file is a link, a special file or a
    name outside the download, ``Refused`` (its Spanish reason) instead of the bytes."""
    collector = collector or FileNameCollectorPlugin(config=load_config())
    now = (now or datetime.now(timezone.utc)).replace(tzinfo=None).isoformat()
    found = []
    for index, path in enumerate(Path(p) for p in paths):
        download = [now, index]
        if path.is_dir():
            for name, data in _folder_files(path):
                content = b"" if isinstance(data, Refused) else data
                found.append((_received(name, content, path.name, collector, None,
                                        download), data))
            continue
        with zipfile.ZipFile(path) as archive:
            for entry in archive.infolist():
                if entry.is_dir():
                    continue
                reason = _zip_refusal(entry)
                data = Refused(reason) if reason else archive.read(entry)
                content = b"" if reason else data
                found.append((_received(entry.filename, content, path.name, collector,
                                        datetime(*entry.date_time), download), data))
    return [(r, data) for r, data in found if r is not None]


def on_record(folder):
    """What is known of the submission in ``folder``: its sidecar, or for one collected some
    other way (nbgrader collect, zip_collect, by hand) its timestamp.txt and notebooks."""
    sidecar = folder / SIDECAR
    if sidecar.is_file():
        return Received(**json.loads(read_regular(sidecar)))
    stamp = folder / TIMESTAMP
    submitted_at = (_iso(parse_utc(read_regular(stamp).decode().strip())) if stamp.is_file()
                    else None)
    digests = [hashlib.sha256(read_regular(p)).hexdigest()
               for p in sorted(folder.glob("*.ipynb"))]
    return Received(student=folder.parent.name, file_name="", origin=str(folder),
                    sha256=",".join(digests), submitted_at=submitted_at)


def newer(incoming, present):
    """Whether ``incoming`` is newer than ``present`` (see the module's docstring), and the
    criterion that decided, as (bool, name)."""
    for key in ORDER:
        a, b = getattr(incoming, key), getattr(present, key)
        if a is not None and b is not None and a != b:
            return a > b, key
    return True, "download"


def marker_timestamp(folder, assignment, term=None):
    """For a submission whose LMS marked it late without a time: write the timestamp the
    term gives that marker (or remove it: no due date, nothing is late). Returns the intake
    note for the student (Spanish), or None when there is no bare marker."""
    sidecar = folder / SIDECAR
    if not sidecar.is_file():
        return None
    received = Received(**json.loads(read_regular(sidecar)))
    if received.submitted_at or not received.late_marker:
        return None
    term = term or load_term()
    moment = term.marker_time(assignment)
    stamp = folder / TIMESTAMP
    if moment is None:
        stamp.unlink(missing_ok=True)
        return None
    stamp.write_text(moment.strftime(TIMESTAMP_FORMAT))
    return (f"la plataforma marcó la entrega como tardía sin indicar la hora: cuenta como "
            f"{term.late.marker_hours:g} h de retraso")


def _write(folder, received, data, assignment, term):
    folder.mkdir(parents=True)
    (folder / received.file_name).write_bytes(data)
    (folder / SIDECAR).write_text(json.dumps(asdict(received), indent=1) + "\n")
    if received.submitted_at:
        moment = datetime.fromisoformat(received.submitted_at)
        (folder / TIMESTAMP).write_text(moment.strftime(TIMESTAMP_FORMAT))
    else:
        marker_timestamp(folder, assignment, term)


def _keep(folder, kept_root):
    """Move a replaced submission under ``kept_root``, in a folder named by the time."""
    moment = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    target = kept_root / moment
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(folder), str(target))
    return target


def collect_one(received, data, assignment, course_dir, term):
    """One received notebook into submitted/: the Action it took (``refused``, with its
    Spanish reason, when ``data`` is a ``Refused``: nothing is written)."""
    if isinstance(data, Refused):
        return Action(received.student, "refused", str(data))
    folder = course_dir / "submitted" / received.student / assignment
    if not folder.exists():
        _write(folder, received, data, assignment, term)
        return Action(received.student, "added", received.origin)
    try:
        present = on_record(folder)
    except Refused as refused:  # what is there holds a link: the download replaces it
        kept = _keep(folder, course_dir / "replaced" / received.student / assignment)
        _write(folder, received, data, assignment, term)
        return Action(received.student, "replaced", f"{refused}; kept at {kept}", kept_at=kept)
    if received.sha256 in present.sha256.split(","):
        return Action(received.student, "unchanged", "identical")
    is_newer, criterion = newer(received, present)
    if not is_newer:
        return Action(received.student, "skipped",
                      f"older than what is there, by {criterion}: {received.origin}")
    kept = _keep(folder, course_dir / "replaced" / received.student / assignment)
    _write(folder, received, data, assignment, term)
    return Action(received.student, "replaced",
                  f"by {criterion}; older one kept at {kept}", kept_at=kept)


def collect_lms(assignment, paths, course_dir=COURSE_DIR, now=None):
    """Every matching notebook of the downloads ``paths`` (zips or folders, oldest download
    first) into ``course_dir``'s submitted/; one Action per notebook, in order."""
    term = load_term()
    return [collect_one(received, data, assignment, Path(course_dir), term)
            for received, data in read_downloads(paths, now=now)]
