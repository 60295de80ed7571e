"""The few lines ``python -m autograder grade`` prints at its end: the mean per chapter,
the most frequent misconceptions, and who needs a person to look (``ClassStats``)."""

from autograder.report.names import chapter_name, diagnosis_title

TOP = 5  # misconceptions listed


def percent(share):
    return "—" if share is None else f"{100 * share:.0f} %"


def summary_lines(stats, top=TOP):
    lines = ["Resumen de la clase (class report: python -m autograder report):"]
    for c in stats.chapters:
        mean = "—" if c.mean is None else f"{c.mean:.2f} / {c.max_score:g}"
        lines.append(f"  {chapter_name(c.assignment)}: media {mean}, "
                     f"{len(c.scores)} entregas, {c.not_submitted} sin entregar")
    ranked = stats.ranked()[:top]
    if ranked:
        lines.append("  Errores más frecuentes (misconceptions):")
        lines += [f"    {diagnosis_title(d.id)} ({d.id}): {len(d.students)} "
                  f"({percent(stats.share_of_class(d))} de la clase)" for d in ranked]
    if stats.needs_human:
        lines.append("  Para revisar a mano: " + "; ".join(
            f"{o.student}/{o.assignment} ({o.status}" + (", reparada al recibirla"
                                                          if o.notes else "") + ")"
            for o in stats.needs_human))
    else:
        lines.append("  Nada que revisar a mano.")
    return lines
