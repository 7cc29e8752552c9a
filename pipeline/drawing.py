"""A pipeline's components drawn as an SVG: one row per step of its longest chain of
dependencies, an arrow for each dependency that no longer chain already implies (the
transitive reduction), TFX's standard components, this project's and the resolvers each in
their colour. The documentation's pipeline figure is the IMDB pipeline drawn here when the
site is built (scripts/docs_hooks.py)."""

from typing import Dict, List
from xml.sax.saxutils import escape

BOX_WIDTH, BOX_HEIGHT, COLUMN, ROW, MARGIN = 190, 30, 215, 58, 20
COLOURS = {  # kind -> (fill, what the legend says)
    "tfx": ("#dbe9f6", "TFX's standard components"),
    "project": ("#fde7c8", "this project's components (components/)"),
    "resolver": ("#e8e8e8", "resolvers (ML Metadata)"),
}


def kind(node) -> str:
    """ "resolver", "project" (a class of components/) or "tfx"."""
    name, module = type(node).__name__, type(node).__module__
    if name == "Resolver" or "resolver" in node.id:
        return "resolver"
    return "project" if module.startswith("components.") else "tfx"


def rows(components) -> Dict[str, int]:
    """Each node's row: below its longest chain of upstream nodes, then moved down to just
    above the first node that reads it (a resolver, a check, beside their reader)."""
    upstream = {c.id: [u.id for u in c.upstream_nodes] for c in components}
    row: Dict[str, int] = {}

    def depth(node: str) -> int:
        if node not in row:
            row[node] = 1 + max((depth(u) for u in upstream[node]), default=-1)
        return row[node]

    for node in upstream:
        depth(node)
    readers = {n: [m for m in upstream if n in upstream[m]] for n in upstream}
    for node in sorted(upstream, key=lambda n: -row[n]):  # readers first
        if readers[node] and node != components[0].id:
            row[node] = max(row[node], min(row[m] for m in readers[node]) - 1)
    return row


def reduced_edges(components) -> List[tuple]:
    """(upstream, downstream) pairs of ids, without those a longer path implies."""
    upstream = {c.id: {u.id for u in c.upstream_nodes} for c in components}

    def ancestors(node: str, seen=None) -> set:
        seen = set() if seen is None else seen
        for parent in upstream[node]:
            if parent not in seen:
                seen.add(parent)
                ancestors(parent, seen)
        return seen

    return [
        (parent, node)
        for node in upstream
        for parent in sorted(upstream[node])
        if not any(parent in ancestors(other) for other in upstream[node] - {parent})
    ]


def svg(pipeline, title: str = "") -> str:
    """The drawing of `pipeline` (a TFX Pipeline), top to bottom."""
    components = list(pipeline.components)
    row = rows(components)
    by_row: Dict[int, List] = {}
    for component in components:
        by_row.setdefault(row[component.id], []).append(component)
    column: Dict[str, float] = {}
    for index in sorted(by_row):  # each row in the order of its nodes' parents' places
        nodes = by_row[index]
        nodes.sort(
            key=lambda c: sum(column.get(u.id, 0) for u in c.upstream_nodes)
            / max(1, len(c.upstream_nodes))
        )
        for position, node in enumerate(nodes):
            column[node.id] = position - (len(nodes) - 1) / 2
    widest = max(len(nodes) for nodes in by_row.values())
    width = 2 * MARGIN + COLUMN * widest
    top = MARGIN + (24 if title else 0)
    place = {}
    for index, nodes in sorted(by_row.items()):
        offset = (width - COLUMN * len(nodes)) / 2 + (COLUMN - BOX_WIDTH) / 2
        for position, node in enumerate(nodes):
            place[node.id] = (offset + COLUMN * position, top + ROW * index)
    height = top + ROW * (max(by_row) + 1) + 22 * len(COLOURS)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        'font-family="sans-serif" font-size="12">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>'
        "</defs>",
    ]
    if title:
        out.append(f'<text x="{MARGIN}" y="{MARGIN + 4}" font-weight="bold">{escape(title)}</text>')
    for parent, node in reduced_edges(components):
        (x1, y1), (x2, y2) = place[parent], place[node]
        out.append(
            f'<line x1="{x1 + BOX_WIDTH / 2:.1f}" y1="{y1 + BOX_HEIGHT:.1f}" '
            f'x2="{x2 + BOX_WIDTH / 2:.1f}" y2="{y2:.1f}" stroke="#555" '
            'marker-end="url(#arrow)"/>'
        )
    for component in components:
        x, y = place[component.id]
        fill = COLOURS[kind(component)][0]
        out.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{BOX_WIDTH}" height="{BOX_HEIGHT}" rx="6" '
            f'fill="{fill}" stroke="#777"/><text x="{x + BOX_WIDTH / 2:.1f}" '
            f'y="{y + BOX_HEIGHT / 2 + 4:.1f}" text-anchor="middle">{escape(component.id)}</text>'
        )
    legend = top + ROW * (max(by_row) + 1)
    for index, (fill, what) in enumerate(COLOURS.values()):
        y = legend + 22 * index
        out.append(
            f'<rect x="{MARGIN}" y="{y}" width="16" height="14" fill="{fill}" stroke="#777"/>'
            f'<text x="{MARGIN + 24}" y="{y + 12}">{escape(what)}</text>'
        )
    return "\n".join(out + ["</svg>", ""])
