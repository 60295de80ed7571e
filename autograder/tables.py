"""Plain-text tables for the command line (summary, catalogue, fairness report)."""


def format_table(rows):
    """Rows of strings (the first is the header) as aligned columns with a rule under it."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines
