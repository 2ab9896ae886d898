"""Small display helpers every lesson notebook shares: tables, figures for widgets, and the CSS
classes the browser test looks for."""

from __future__ import annotations

import html
import io

from IPython.display import HTML
from matplotlib.figure import Figure

# The browser test clicks the widget with MAIN_CONTROL_CLASS and checks that the text of the one
# with RESULT_CLASS changes.
MAIN_CONTROL_CLASS = "s09-main-control"
RESULT_CLASS = "s09-result"


def html_table(headers, rows) -> HTML:
    """An HTML table of the rows (sequences of cells); every cell is shown as escaped text."""
    head = "".join(f"<th style='text-align:left'>{html.escape(str(name))}</th>" for name in headers)
    body = "".join(
        "<tr>" + "".join(f"<td style='text-align:left'>{html.escape(str(cell))}</td>" for cell in row) + "</tr>"
        for row in rows
    )
    return HTML(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def figure_png(fig: Figure) -> bytes:
    """The figure as PNG bytes, for an Image widget (nothing is displayed)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return buffer.getvalue()
