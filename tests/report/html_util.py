"""Reads a report page back: its tables by id (rows of cell texts) and its images."""

import html.parser


class _Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.images, self.ids = {}, [], set()
        self._table = self._row = self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "table":
            self._table = self.tables.setdefault(attrs.get("id", f"table-{len(self.tables)}"), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "img":
            self.images.append(attrs)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    return page


def check_report(path: str, heatmaps: bool = True) -> _Page:
    """The run's report page exists and holds the metrics, curves, lineage and, with
    `heatmaps`, attention heatmaps; returns it parsed."""
    with open(path, encoding="utf-8") as f:
        page = parse(f.read())
    assert len(page.tables["metrics-overall"]) > 1
    assert any(i["alt"] == "training and validation curves" for i in page.images)
    assert len(page.tables["lineage-artifacts"]) > 8
    found = [i for i in page.images if "attention-heatmap" in i.get("class", "")]
    assert bool(found) == heatmaps
    return page
