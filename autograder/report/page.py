"""The class report as one self-contained HTML page, in Spanish: no external resource (the
plots are PNG data URIs, the sorting a few lines of inline JavaScript), and every text that
a student's submission could have shaped (ids, intake notes, details, facts) escaped as
``feedback`` escapes it, so a hostile submission cannot put markup into the page."""

import html
import json

from autograder.report.names import chapter_name, diagnosis_title, exercise_name
from autograder.report.plots import histogram
from autograder.report.summary import percent
from autograder.titles import chapter_titles

# The page may load nothing from anywhere: images are data URIs, style and script inline.
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'")
STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
td.n{text-align:right}th{background:#f3f3f3}
table.sortable th{cursor:pointer}table.sortable th:after{content:" ⇅";color:#999}
code{background:#f6f6f6;padding:0 .2em}
.facts{font-size:.85em;color:#555;white-space:pre-wrap;font-family:monospace}
"""
# Click a header to sort by it (again: the other way); numbers by data-v, text otherwise.
SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  var col = th.cellIndex;  // its column in its own table (several tables sort)
  th.addEventListener("click", function () {
    var body = th.closest("table").tBodies[0], rows = Array.from(body.rows);
    var up = th.dataset.dir !== "up"; th.dataset.dir = up ? "up" : "down";
    function key(row) {
      var cell = row.cells[col], v = cell.dataset.v;
      return v !== undefined ? parseFloat(v) : cell.textContent.toLowerCase();
    }
    rows.sort(function (a, b) {
      var x = key(a), y = key(b), c = x < y ? -1 : x > y ? 1 : 0; return up ? c : -c;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
"""


def esc(value):
    return html.escape(str(value), quote=True)


def number(value, digits=2):
    return "—" if value is None else f"{value:.{digits}f}"


def cell(text, value=None):
    """A table cell; ``value``: the number it sorts by (a right-aligned numeric cell)."""
    if value is None:
        return f"<td>{esc(text)}</td>"
    return f"<td class='n' data-v='{float(value):.6g}'>{esc(text)}</td>"


def table(header, rows, sortable=False):
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join(f"<tr>{''.join(row)}</tr>" for row in rows)
    kind = " class='sortable'" if sortable else ""
    return f"<table{kind}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def share_cell(share):
    return cell(percent(share), -1 if share is None else share)


def facts_text(facts):
    """One fact a line, ``name: value`` (the page keeps the lines of a traceback)."""
    return "\n".join(f"{key}: {value if isinstance(value, str) else json.dumps(value)}"
                     for key, value in sorted((facts or {}).items()))


def image(uri, alt):
    return f"<img src='{uri}' alt='{esc(alt)}' width='230' height='122'>"


def chapters_section(stats):
    rows = [[cell(chapter_name(c.assignment)), cell(f"{c.max_score:g}", c.max_score),
             cell(len(c.scores), len(c.scores)), cell(c.not_submitted, c.not_submitted),
             cell(number(c.mean), c.mean if c.mean is not None else -1),
             share_cell(c.full_share), share_cell(c.zero_share),
             f"<td>{image(histogram(c.scores.values(), c.max_score), 'histograma')}</td>"]
            for c in stats.chapters]
    return ("<h2>Capítulos</h2>" + table(
        ("capítulo", "puntos", "entregas", "sin entregar", "media", "con todos los puntos",
         "con cero", "distribución"), rows))


def misconceptions_table(ranked, share_of, total):
    rows = [[cell(diagnosis_title(d.id)), f"<td><code>{esc(d.id)}</code></td>",
             cell(len(d.students), len(d.students)),
             share_cell(share_of(d)),
             f"<td class='facts'>{esc(facts_text(d.example))}</td>"] for d in ranked]
    if not rows:
        return "<p>Ningún diagnóstico.</p>"
    return table(("error frecuente (misconception)", "id", "estudiantes",
                  f"de {total}", "ejemplo de los hechos (anónimo)"), rows)


def exercise_block(exercise):
    name = exercise_name(exercise.assignment, exercise.cell)
    submitted = len(exercise.scores)
    summary = table(("puntos", "media", "con todos los puntos", "con cero", "sin entregar",
                     "discriminación"), [[
                         cell(f"{exercise.max_score:g}", exercise.max_score),
                         cell(number(exercise.mean), exercise.mean or 0),
                         share_cell(exercise.full_share), share_cell(exercise.zero_share),
                         cell(exercise.not_submitted, exercise.not_submitted),
                         cell(number(exercise.discrimination),
                              exercise.discrimination or 0)]])
    parts = table(("parte", "aprobada por"), [[cell(part), share_cell(rate)]
                                              for part, rate in exercise.pass_rates().items()])
    ranked = exercise.ranked()
    return (f"<h4>{esc(name)} <code>{esc(exercise.cell)}</code></h4>"
            f"{image(histogram(exercise.scores.values(), exercise.max_score), name)}"
            f"{summary}<p>Partes (entre las entregas cuya prueba oculta se ejecutó):</p>"
            f"{parts}"
            + misconceptions_table(ranked, lambda d: len(d.students) / submitted
                                   if submitted else None, f"{submitted} entregas"))


def exercises_section(stats):
    blocks = ["<h2>Ejercicios</h2><p>La discriminación (item discrimination) es la "
              "correlación entre los puntos del ejercicio y el resto del total del curso: "
              "cerca de 0 o negativa, el ejercicio no separa a quien domina el curso de "
              "quien no.</p>"]
    for c in stats.chapters:
        blocks.append(f"<h3>{esc(chapter_name(c.assignment))}</h3>")
        order = list(chapter_titles(c.assignment).exercises)  # as the notebook has them
        blocks += [exercise_block(e) for e in sorted(c.exercises, key=lambda e: (
            order.index(e.exercise_id) if e.exercise_id in order else len(order), e.cell))]
    return "".join(blocks)


def course_section(stats):
    return ("<h2>Errores frecuentes en todo el curso (misconceptions)</h2>"
            + misconceptions_table(stats.ranked(), stats.share_of_class,
                                   f"{len(stats.students)} estudiantes"))


def human_section(stats):
    if not stats.needs_human:
        return "<h2>Para revisar a mano</h2><p>Nada: todo se calificó tal como se entregó.</p>"
    rows = [[cell(o.student), cell(chapter_name(o.assignment)), cell(o.status.text),
             cell(o.detail), cell("; ".join(o.notes))] for o in stats.needs_human]
    return ("<h2>Para revisar a mano</h2><p>Tiempo agotado (timeout), cierres, "
            "manipulación (tampering), cuadernos ilegibles y reparaciones al recibirlos.</p>"
            + table(("estudiante", "capítulo", "estado", "detalle", "reparaciones"), rows,
                    sortable=True))


def protections_section(stats):
    """How many submissions each set of protections graded: any without the operating
    system's sandbox is worth a look."""
    rows = [[cell(text), cell(f"{count}", count)] for text, count in stats.protections.items()]
    return ("<h2>Protecciones al calificar</h2><p>Con qué se ejecutó cada entrega, según el "
            "calificador (no el kernel).</p>" + table(("protecciones", "entregas"), rows))


def students_section(stats, csv_name):
    header = ["estudiante", *(chapter_name(c.assignment) for c in stats.chapters), "total",
              "errores frecuentes"]
    rows = []
    for row in stats.student_rows():
        points = [cell("—", -1) if p is None else cell(f"{p:g}", p)
                  for p in row["chapters"].values()]
        rows.append([cell(row["student"]), *points, cell(f"{row['total']:g}", row["total"]),
                     cell(", ".join(row["diagnoses"]), len(row["diagnoses"]))])
    return (f"<h2>Estudiantes</h2><p>Pulsa una cabecera para ordenar. Lo mismo en "
            f"<code>{esc(csv_name)}</code>.</p>" + table(header, rows, sortable=True))


def report_page(stats, csv_name="estudiantes.csv"):
    submissions = sum(len(c.scores) for c in stats.chapters)
    return ("<!DOCTYPE html><html lang='es'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
            "<title>Informe de la clase</title>"
            f"<style>{STYLE}</style></head><body>"
            "<h1>Informe de la clase (class report)</h1>"
            f"<p>{len(stats.students)} estudiantes, {submissions} entregas, "
            f"{len(stats.chapters)} capítulos.</p>"
            + chapters_section(stats) + course_section(stats) + human_section(stats)
            + protections_section(stats)
            + exercises_section(stats) + students_section(stats, csv_name)
            + f"<script>{SCRIPT}</script></body></html>\n")
