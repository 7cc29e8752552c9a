"""matplotlib figures as PNG data URIs, so the page embeds them and needs no network."""

import base64
import io

import matplotlib

matplotlib.use("Agg")  # no display; set before pyplot is imported
from matplotlib import pyplot  # noqa: E402


def new_figure(width: float, height: float):
    return pyplot.figure(figsize=(width, height), dpi=100, layout="constrained")


def data_uri(figure) -> str:
    """The figure as a base64 PNG data URI; closes the figure."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    pyplot.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
