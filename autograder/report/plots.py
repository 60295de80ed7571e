"""Score histograms as PNG data URIs (matplotlib, Agg backend): the page opens offline."""

import base64
import io

BINS = 10


def histogram(scores, max_score, title=""):
    """A small histogram of ``scores`` over [0, max_score], as ``data:image/png;base64``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(3.2, 1.7), dpi=72)
    axes = figure.add_axes((0.17, 0.27, 0.79, 0.63 if title else 0.68))
    top = max_score if max_score > 0 else 1.0
    width = top / BINS
    counts = [0] * BINS
    for score in scores:
        counts[min(BINS - 1, max(0, int(score / width)))] += 1
    axes.bar([width * (i + 0.5) for i in range(BINS)], counts, width=width * 0.9,
             color="#4c72b0")
    axes.set_xlim(0, top)
    axes.set_xlabel("puntos", fontsize=8)
    axes.set_ylabel("estudiantes", fontsize=8)
    axes.tick_params(labelsize=7)
    if title:
        axes.set_title(title, fontsize=8)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
