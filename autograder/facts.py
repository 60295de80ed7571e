"""What grading found in one submission, as plain data in its notebook's metadata.

``collect`` writes the intake notes into the submitted notebook; ``GradingExecute`` adds
what happened while it ran (tampering records, skipped and interrupted cells, timings,
each hidden test's points part by part), so the autograded notebook carries them.
``classify`` turns them into a status and its detail: the grader, the summary and the
feedback banner all read the same facts.
"""

from dataclasses import asdict, dataclass, field, fields

from autograder.outcome import Status

METADATA_KEY = "autograder"  # nb.metadata[METADATA_KEY]

# The guard's records (``autograder.kernel.Guard``) in words, for students and the detail.
TAMPERING_WORDS = {"read": "intento de leer {}", "import": "intento de importar {}",
                   "signal": "intento de enviar una señal al proceso {}",
                   "replaced": "{} reemplazado", "added": "{} añadido",
                   "forged report": "informe del guardián alterado",
                   "syscall": "llamada al sistema {} bloqueada por Linux"}
FORGED_REPORT = {"kind": "forged report", "target": ""}  # records that are not records


@dataclass
class Facts:
    notes: list = field(default_factory=list)  # repairs made on intake, in Spanish
    tampering: dict = field(default_factory=dict)  # exercise id -> records counted against it
    killed_cells: list = field(default_factory=list)  # skipped: they killed the kernel
    timed_out_cells: list = field(default_factory=list)  # interrupted at the time limit
    # The kernel died for good: {"cell": index or None (at start), "error": exception type}.
    kernel_death: dict | None = None
    timings: dict = field(default_factory=dict)  # seconds by phase (execute.TIMING_KEYS)
    # exercise id -> {"points": earned, "max_points", "parts": runner.part_results(...),
    # "zeroed": None, "tampering" or "no observations" (then "points" is 0 whatever the parts)}
    hidden_tests: dict = field(default_factory=dict)
    # What the (last) kernel ran under, as the grader found it: "bubblewrap", "seccomp",
    # "guard" (``outcome.PROTECTION_WORDS``).
    protection: list = field(default_factory=list)

    @classmethod
    def read(cls, nb):
        stored = nb.metadata.get(METADATA_KEY)
        stored = stored if isinstance(stored, dict) else {}
        return cls(**{f.name: stored[f.name] for f in fields(cls) if f.name in stored})

    def write(self, nb):
        nb.metadata[METADATA_KEY] = asdict(self)
        return nb


def describe_tampering(records):
    """One exercise's tampering records in words, in the order they were counted."""
    return "; ".join(TAMPERING_WORDS[r["kind"]].format(r["target"]) for r in records)


def cell_index(index):
    return f"celda {index}"


def classify(facts, where=cell_index):
    """(status, detail) of a submission whose notebook ran; the detail in Spanish.
    ``where(index)`` names a cell: its index for instructors, what a student can find in
    their feedback (``feedback.cell_locator``)."""
    if facts.kernel_death is not None:
        cell = facts.kernel_death.get("cell")
        return Status.KERNEL_DIED, "al iniciar el kernel" if cell is None else where(cell)
    if facts.tampering:
        return Status.TAMPERING, "; ".join(sorted({describe_tampering(records)
                                                  for records in facts.tampering.values()}))
    if facts.killed_cells:
        return Status.CRASHED, where(min(facts.killed_cells))
    if facts.timed_out_cells:
        return Status.TIMED_OUT, where(min(facts.timed_out_cells))
    return Status.GRADED, ""
