"""The report's HTML: one self-contained page (inline CSS, plots as data URIs, no scripts)."""

import html
from typing import Container, Iterable, Optional, Sequence

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;
 background:#f6f7f9;line-height:1.45}
main{max-width:1180px;margin:0 auto;padding:24px}
header{background:#1d2330;color:#fff;padding:20px 24px}
header h1{margin:0 0 6px;font-size:1.5em} header p{margin:2px 0;color:#c9d1e0}
section{background:#fff;border:1px solid #dde1e8;border-radius:8px;margin:18px 0;padding:16px 20px}
h2{margin-top:0;font-size:1.2em} h3{font-size:1em;margin:14px 0 6px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:.9em}
th,td{border:1px solid #dde1e8;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;font-size:.85em}
.ok{background:#d8f3e0;color:#14532d} .bad{background:#fde2e1;color:#7f1d1d}
.muted{color:#6b7280} code{font-size:.85em;word-break:break-all}
img.plot{max-width:100%;height:auto;border:1px solid #eef1f5}
figure{margin:12px 0} figcaption{font-size:.9em;margin-bottom:4px}
"""


def escape(value) -> str:
    return html.escape("" if value is None else str(value))


def number(value, digits: int = 4) -> str:
    """Floats to `digits` places; counts (ints, or integral floats above 1) with separators."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) > 1:
        value = int(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}" if abs(value) < 1e6 else f"{value:.4g}"
    return f"{value:,}" if isinstance(value, int) else escape(value)


def table(
    headers: Optional[Sequence[str]],
    rows: Iterable[Sequence],
    table_id: Optional[str] = None,
    numeric: Container[int] = (),
) -> str:
    """Rows of already-formatted cells; the `numeric` columns are right-aligned. Without
    headers, the first column is a row heading (a key-value table)."""
    body = []
    for row in rows:
        cells = "".join(
            f"<th>{c}</th>"
            if i == 0 and headers is None
            else f'<td class="num">{c}</td>'
            if i in numeric
            else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    head = (
        ""
        if headers is None
        else "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in headers) + "</tr></thead>"
    )
    attribute = f' id="{escape(table_id)}"' if table_id else ""
    return f"<table{attribute}>{head}<tbody>{''.join(body)}</tbody></table>"


def badge(text: str, good: bool) -> str:
    return f'<span class="badge {"ok" if good else "bad"}">{escape(text)}</span>'


def image(uri: str, alt: str, css_class: str = "plot") -> str:
    return f'<img class="{css_class}" src="{uri}" alt="{escape(alt)}">'


def section(section_id: str, title: str, *parts: str) -> str:
    return f'<section id="{escape(section_id)}"><h2>{escape(title)}</h2>{"".join(parts)}</section>'


def document(title: str, header_lines: Sequence[str], sections: Sequence[str]) -> str:
    lines = "".join(f"<p>{line}</p>" for line in header_lines)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<header><h1>{escape(title)}</h1>{lines}</header><main>{''.join(sections)}</main>"
        f"</body></html>"
    )
