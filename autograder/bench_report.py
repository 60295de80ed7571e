"""What ``python -m autograder bench`` prints: per chapter, seconds per notebook by phase and
pipeline; across chapters, the ratios, the projection to a whole class and the goals.

**The projection** (``projections``): a class of ``CLASS_STUDENTS`` students × every
chapter, graded on this machine with the benchmark's workers. For ours and the floor, each
chapter counts ``CLASS_STUDENTS × (its notebooks' mean work ÷ workers)`` (a notebook's work:
its phases summed) plus, once, the part of the benchmark's wall its workers did not spend
side by side on notebooks (``ChapterRun.unoverlapped``: the workers' start, and the drain at
the end, when fewer notebooks are left than workers; in the synthetic class the last one
never ends). A large class pays those once per chapter, as a small one does. Checked
against a class of 200 graded in one run (chapter 1, 2 workers, 2026-12-04): 179.5 s
measured; projected 180.5 s from 30 students and 173.4 s from 12 this way, 218 s and 274 s
by scaling the wall (``CLASS_STUDENTS × wall s / notebook``), which pays the start and the
drain 200 / n times and is printed too, as an upper bound. Stock is sequential: its wall
scaled. A chapter not benchmarked counts at the mean of those that were; what a run pays
once whatever its size (ours: preparing the course, collecting, exporting; the floor:
warming its parent) is added once. The goal is judged on the first.
"""

from dataclasses import dataclass, field

from autograder.execute import TIMING_KEYS
from autograder.tables import format_table

PHASES = (*TIMING_KEYS, "nbgrader + database", "feedback")
COLD_FLOOR = "floor, cold"  # the bare-nbclient floor (``bench.run_floor``), on request
PIPELINES = ("stock", "ours", "floor", COLD_FLOOR)
CLASS_STUDENTS, CLASS_CHAPTERS = 200, 7
# Issue 19's "done when": chapter 1, 12 students, 2 workers, one run.
GOAL_CHAPTER, GOAL_STUDENTS, GOAL_WORKERS = "01", 12, 2
GOAL_OURS_S, GOAL_STOCK_RATIO = 1.5, 4.0
GOAL_CLASS_MIN, MOONSHOT_CLASS_MIN = 30, 15


@dataclass
class ChapterRun:
    """One chapter's benchmark: wall seconds by pipeline, [(pipeline, student, kind, seconds
    by phase)], points by pipeline and student, and the once-per-run seconds around ours
    (``once_s``) and the floor (``warm_up_s``)."""

    chapter: str
    students: int
    walls: dict = field(default_factory=dict)
    rows: list = field(default_factory=list)
    points: dict = field(default_factory=dict)
    once_s: float = 0.0
    warm_up_s: float = 0.0

    def per_notebook(self, pipeline):
        return self.walls[pipeline] / self.students if pipeline in self.walls else None

    def work_per_notebook(self, pipeline, workers):
        """The mean of a notebook's phases summed, ÷ ``workers``: its share of the wall if
        the workers overlapped perfectly and cost nothing to start."""
        mine = [sum(t.values()) for p, _, _, t in self.rows if p == pipeline]
        return sum(mine) / len(mine) / workers if mine else None

    def unoverlapped(self, pipeline, workers):
        """Seconds of the wall not spent with the workers side by side on notebooks (their
        start, and the drain at the end): wall − students × work per notebook ÷ workers."""
        work = self.work_per_notebook(pipeline, workers)
        if work is None or pipeline not in self.walls:
            return None
        return max(0.0, self.walls[pipeline] - self.students * work)

    def class_seconds(self, pipeline, workers, students=None):
        """This chapter for a class of ``students`` (default ``CLASS_STUDENTS``): each
        notebook's work ÷ workers, plus what this run did not overlap, once."""
        unoverlapped = self.unoverlapped(pipeline, workers)
        if unoverlapped is None:
            return None
        students = CLASS_STUDENTS if students is None else students
        return students * self.work_per_notebook(pipeline, workers) + unoverlapped


def project(per_notebook, once_s=0.0, students=CLASS_STUDENTS, chapters=CLASS_CHAPTERS):
    """Seconds to grade ``students`` × ``chapters``: ``per_notebook`` maps each benchmarked
    chapter to its wall seconds per notebook; the chapters not benchmarked count at their
    mean. None when nothing was measured."""
    if not per_notebook:
        return None
    mean = sum(per_notebook.values()) / len(per_notebook)
    measured = sum(per_notebook.values()) + mean * max(0, chapters - len(per_notebook))
    return students * measured + once_s


def phase_table(run):
    """One chapter's table: wall seconds, seconds per notebook, and mean seconds per
    notebook by phase (stock only as a whole)."""
    lines = [("pipeline", "wall s", "s / notebook", *(f"{p} s" for p in PHASES))]
    for pipeline in PIPELINES:
        mine = [t for p, _, _, t in run.rows if p == pipeline]
        if not mine:
            continue
        means = [sum(t.get(phase, 0.0) for t in mine) / len(mine) for phase in PHASES]
        lines.append((pipeline, f"{run.walls[pipeline]:.1f}",
                      f"{run.per_notebook(pipeline):.2f}",
                      *("—" if pipeline == "stock" and not m else f"{m:.2f}" for m in means)))
    return format_table(lines)


def _ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "—"


def _seconds(value):
    return "—" if value is None else f"{value:.2f}"


def summary_table(runs):
    lines = [("chapter", "ours s / nb", "floor s / nb", "stock s / nb", "stock / ours",
              "ours / floor")]
    for run in runs:
        ours, floor, stock = (run.per_notebook(p) for p in ("ours", "floor", "stock"))
        lines.append((run.chapter, _seconds(ours), _seconds(floor), _seconds(stock),
                      _ratio(stock, ours), _ratio(ours, floor)))
    return format_table(lines)


def _class(runs, pipeline, workers, once_s):
    """A pipeline's projected seconds: each chapter's ``ChapterRun.class_seconds``."""
    return project({r.chapter: r.class_seconds(pipeline, workers) for r in runs}, once_s,
                   students=1)


def projections(runs, workers):
    """The projection lines, and ours' projected minutes (None: not measured)."""
    once, warm_up = max(r.once_s for r in runs), max(r.warm_up_s for r in runs)
    ours = _class(runs, "ours", workers, once)
    floor = _class(runs, "floor", workers, warm_up)
    scaled = project({r.chapter: r.per_notebook("ours") for r in runs}, once)
    stock = project({r.chapter: r.per_notebook("stock") for r in runs if "stock" in r.walls})
    measured = ", ".join(r.chapter[:2] for r in runs)
    students = runs[0].students
    lines = [f"Projected, {CLASS_STUDENTS} students × {CLASS_CHAPTERS} chapters on this "
             f"machine ({workers} worker(s); stock sequential):",
             f"  ours   {ours / 60:6.1f} min = Σ per chapter ({CLASS_STUDENTS} × a notebook's "
             f"work ÷ {workers} + the wall its workers did not overlap, once: their start and "
             f"the drain) + {once:.0f} s once (prepare, collect, export)",
             f"  ours   {scaled / 60:6.1f} min scaling the wall instead ({CLASS_STUDENTS} × wall "
             f"s / notebook: the start and the drain paid {CLASS_STUDENTS} / {students} times; "
             "an upper bound)",
             f"  floor  {floor / 60:6.1f} min = the same as ours' first line + {warm_up:.0f} s "
             "warming its parent"]
    if stock is not None:
        stocked = ", ".join(r.chapter[:2] for r in runs if "stock" in r.walls)
        lines.append(f"  stock  {stock / 60:6.1f} min (stock measured on {stocked})")
    lines.append(f"  measured chapters: {measured}"
                 + ("" if len(runs) >= CLASS_CHAPTERS else
                    "; each chapter not measured counts at their mean"))
    return lines, ours / 60


def goals(runs, students, workers, class_minutes):
    """Issue 19's goals against this run; a run unlike the goal's says how."""
    def verdict(met):
        return "met" if met else "NOT met"

    goal_run = next((r for r in runs if r.chapter.startswith(GOAL_CHAPTER)), None)
    lines = [f"Goals (chapter {GOAL_CHAPTER}, {GOAL_STUDENTS} students, {GOAL_WORKERS} "
             f"workers, one run):"]
    if (students, workers) != (GOAL_STUDENTS, GOAL_WORKERS):
        lines.append(f"  (this run: {students} students, {workers} worker(s): not the goal's "
                     "configuration, indicative only)")
    if goal_run is None:
        lines.append(f"  chapter {GOAL_CHAPTER} not benchmarked: no per-notebook goal here")
    else:
        ours = goal_run.per_notebook("ours")
        lines.append(f"  ours s / notebook   {ours:6.2f}   goal ≤ {GOAL_OURS_S}   "
                     f"{verdict(ours <= GOAL_OURS_S)}")
        stock = goal_run.per_notebook("stock")
        if stock is None:
            lines.append("  stock / ours        —        (stock not run on chapter "
                         f"{GOAL_CHAPTER})")
        else:
            lines.append(f"  stock / ours        {stock / ours:6.2f}   goal ≥ {GOAL_STOCK_RATIO:g}"
                         f"     {verdict(stock / ours >= GOAL_STOCK_RATIO)}")
    lines.append(f"  projected class min {class_minutes:6.1f}   goal ≤ {GOAL_CLASS_MIN} "
                 f"(moonshot ≤ {MOONSHOT_CLASS_MIN})   {verdict(class_minutes <= GOAL_CLASS_MIN)}"
                 + (", moonshot met" if class_minutes <= MOONSHOT_CLASS_MIN else ""))
    return lines


def report(runs, students, workers, timeout):
    text = [f"Benchmark: {students} submissions per chapter, {workers} worker(s) for ours and "
            f"the floor, stock nbgrader sequential; per-cell limit {timeout} s."]
    for run in runs:
        text += ["", run.chapter, *phase_table(run),
                 f"ours: plus {run.once_s:.1f} s once per run (prepare every chapter, collect, "
                 f"export); floor: plus {run.warm_up_s:.1f} s warming its parent, once."]
        if "ours" in run.points and run.points.get("floor") != run.points["ours"]:
            differ = sorted(s for s, p in run.points["ours"].items()
                            if run.points["floor"].get(s) != p)
            text.append(f"floor and ours disagree on the points of {', '.join(differ)}")
    text += ["", "wall s: the grading itself (ours: the workers' part of "
             "`pipeline.grade`); s / notebook = wall s / submissions. Phases are means per "
             "notebook, summed over a notebook's processes (workers run side by side, so "
             "s / notebook is smaller than their sum); stock is timed from outside, as a "
             "whole (its 'execution' is autograde). floor: the cheapest isolated grading (a "
             "child forked from a warm process per submission runs the exercise cells and "
             "the hidden cases; see autograder/floor.py); its 'kernel start' is the fork.",
             "", *summary_table(runs), ""]
    lines, class_minutes = projections(runs, workers)
    return "\n".join(text + lines + [""] + goals(runs, students, workers, class_minutes))
