"""Student content made inert before anyone's browser shows it.

A graded notebook is shown in two places: the feedback page (to the student, maybe in an
LMS) and nbgrader's formgrader (to the instructor, on the Jupyter server's origin, where a
script could use the instructor's session). Both render the autograded notebook, so it is
cleaned once, as data, before it is written:

- markdown cells are rendered to HTML here and cleaned with nh3 (ammonia's allowlist:
  no scripts, no event handlers, no ``javascript:`` links, no styles); the cell keeps that
  HTML as one block that markdown renderers pass through unchanged;
- raw cells are escaped (nbconvert copies raw cells into HTML verbatim);
- outputs keep only inert types: text, PNG/JPEG/GIF images whose data is base64, and
  cleaned HTML; JavaScript, SVG, widgets, LaTeX and markdown outputs become a short note
  (or their plain-text form) and image metadata keeps only numeric sizes;
- formulas (``$...$``, ``$$...$$``) become MathML here (latex2mathml), which browsers
  render natively: the pages need no MathJax, no CDN, no network; only MathML's
  presentation tags and layout attributes pass the cleaner (no links, no styles);
- TeX commands that make links, styles or load code (``\\href``, ``\\style``, ...) are
  broken up wherever MathJax could still read them (formulas latex2mathml cannot convert);
- notebook-level widget state is dropped.

The course's own markdown (no raw HTML) survives with its headings, tables, code and math.
"""

import functools
import html
import re

import nbformat
import nh3
from latex2mathml.converter import convert as latex_to_mathml
from nbconvert.filters.markdown import markdown2html

SAFE_URL_SCHEMES = {"http", "https", "mailto"}
EXTRA_ATTRIBUTES = {"*": {"class"}}  # pandas tables and highlighted code keep their classes
# No images from student HTML: even a plain <img> makes the viewer's browser send a request
# (to the Jupyter server with the instructor's cookies, or to a tracker). Plots are outputs.
REMOVED_TAGS = {"img", "map", "area"}
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")
BASE64_RE = re.compile(r"^[A-Za-z0-9+/=\s]*$")
# MathJax commands that create links, CSS, ids or load extensions: written "\ href" instead.
TEX_DANGEROUS_RE = re.compile(r"\\(?=(href|url|class|cssId|style|require|unicode|html|data|"
                              r"mmlToken|bbox|enclose)\b)")
BLANK_LINE_RE = re.compile(r"\n\s*\n")
# Display math first, then inline math on one paragraph; never inside code.
MATH_RE = re.compile(r"\$\$(.+?)\$\$|\$((?:[^$\n]|\n(?!\s*\n))+?)\$", re.DOTALL)
CODE_RE = re.compile(r"(<(pre|code)\b.*?</\2>)", re.DOTALL)
# MathML's presentation markup as latex2mathml writes it: layout only. Not allowed:
# <annotation-xml> (embeds HTML), <maction>, href/style/event attributes.
MATHML_TAGS = {"math", "mi", "mn", "mo", "ms", "mtext", "mspace", "mrow", "mfrac", "msqrt",
               "mroot", "mstyle", "merror", "mpadded", "mphantom", "msub", "msup", "msubsup",
               "munder", "mover", "munderover", "mtable", "mtr", "mtd", "menclose"}
MATHML_ATTRIBUTES = {"display", "xmlns", "mathvariant", "stretchy", "fence", "separator",
                     "accent", "accentunder", "width", "height", "depth", "lspace", "rspace",
                     "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines",
                     "rowlines", "linethickness", "displaystyle", "scriptlevel", "minsize",
                     "maxsize", "movablelimits", "largeop", "symmetric", "form", "notation",
                     "align", "frame", "framespacing", "equalrows", "equalcolumns"}
OMITTED = "(salida de tipo {kinds} omitida al calificar: no se muestra contenido activo)"


def neutralize_tex(text):
    """``text`` with the dangerous TeX commands broken (``\\href`` → ``\\ href``)."""
    return TEX_DANGEROUS_RE.sub(r"\\ ", text)


def _formula(match):
    display, inline = match.groups()
    tex = html.unescape(display if display is not None else inline)
    try:
        return latex_to_mathml(tex, display="block" if display is not None else "inline")
    except Exception:  # noqa: BLE001 - TeX it cannot read stays as the text it was
        return match.group(0)


def math_to_mathml(fragment):
    """``$...$`` and ``$$...$$`` in an HTML fragment (outside code) as MathML."""
    parts = CODE_RE.split(fragment)
    # split() keeps both groups: [text, code, tag name, text, code, tag name, ..., text]
    return "".join(MATH_RE.sub(_formula, part) if i % 3 == 0 else part
                   for i, part in enumerate(parts) if i % 3 != 2)


def clean_html(fragment):
    """An HTML fragment with only inert tags, attributes and URLs left."""
    attributes = {tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items()}
    for tag, names in EXTRA_ATTRIBUTES.items():
        attributes.setdefault(tag, set()).update(names)
    for tag in MATHML_TAGS:
        attributes.setdefault(tag, set()).update(MATHML_ATTRIBUTES)
    cleaned = nh3.clean(fragment, tags=(set(nh3.ALLOWED_TAGS) | MATHML_TAGS) - REMOVED_TAGS,
                        attributes=attributes, url_schemes=SAFE_URL_SCHEMES,
                        link_rel="noopener noreferrer")
    return neutralize_tex(cleaned)


# Every submission of a chapter repeats the course's markdown cells: each is rendered and
# cleaned once per worker (~10 ms each, 40 a notebook), not once per notebook.
@functools.lru_cache(maxsize=4096)
def markdown_block(source):
    """Markdown → cleaned HTML, as one HTML block (no blank line, so a markdown renderer
    shows it as is instead of parsing its text again)."""
    cleaned = clean_html(math_to_mathml(markdown2html(source))).strip()
    cleaned = BLANK_LINE_RE.sub("\n<!-- -->\n", cleaned)
    return f'<div class="celda-saneada">\n{cleaned}\n</div>' if cleaned else ""


def _image_metadata(metadata, kind):
    sizes = metadata.get(kind) if isinstance(metadata.get(kind), dict) else {}
    kept = {k: v for k, v in sizes.items() if k in ("width", "height")
            and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {kind: kept} if kept else {}


def clean_output(output):
    """One output made inert (a new dict; errors and streams are escaped by every template
    and pass unchanged)."""
    if output.get("output_type") not in ("display_data", "execute_result"):
        return output
    data, metadata = output.get("data", {}), output.get("metadata", {})
    kept, meta, dropped = {}, {}, []
    for kind, value in data.items():
        text = "".join(value) if isinstance(value, list) else value
        if kind == "text/plain" and isinstance(text, str):
            kept[kind] = text
        elif kind in IMAGE_TYPES and isinstance(text, str) and BASE64_RE.match(text):
            kept[kind] = text
            meta.update(_image_metadata(metadata, kind))
        elif kind == "text/html" and isinstance(text, str):
            kept[kind] = clean_html(text)
        elif kind == "text/markdown" and isinstance(text, str):
            kept["text/html"] = markdown_block(text)
        elif kind == "text/latex" and isinstance(text, str) and "text/plain" not in data:
            kept["text/plain"] = text
        else:
            dropped.append(kind)
    if dropped and not kept:
        kept["text/plain"] = OMITTED.format(kinds=", ".join(sorted(dropped)))
    return nbformat.from_dict({**output, "data": kept, "metadata": meta})


def clean_notebook(nb):
    """Every cell and output of ``nb`` made inert, in place; returns ``nb``."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = markdown_block(cell.source)
            cell.pop("attachments", None)
        elif cell.cell_type == "raw":
            cell.source = html.escape(cell.source)
            cell.metadata.pop("raw_mimetype", None)
            cell.metadata.pop("format", None)
        elif cell.cell_type == "code":
            cell.outputs = [clean_output(o) for o in cell.get("outputs", [])]
    nb.metadata.pop("widgets", None)
    return nb
