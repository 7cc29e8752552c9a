"""matplotlib figures as PNG data URIs, so the page embeds them and needs no network. Drawn
with matplotlib's object API (a Figure on the Agg canvas): no pyplot, no process-wide backend
switched, nothing left open."""

import base64
import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def data_uri(figure: Figure) -> str:
    """The figure as a base64 PNG data URI."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
