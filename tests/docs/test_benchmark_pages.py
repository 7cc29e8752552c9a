"""The benchmarks pages a reader opens: the first fits in a few screens, none repeats a section
title, every results file renders something, the README's table is the results files', and no
command shows the measuring machine's paths."""

import glob
import html
import json
import os
import re

import markdown
import pytest

from benchmarks import pages
from tests.docs.macros import docs_macros
from tests.docs.test_docs import BENCHMARK_PAGES, ROOT


def rendered(name: str) -> str:
    return docs_macros.render((ROOT / "docs" / name).read_text(), name)


def text_of(page_markdown: str) -> str:
    """What a reader reads: the page's HTML without tags (and without the plots' data)."""
    body = markdown.markdown(page_markdown, extensions=["tables", "fenced_code"])
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def test_the_first_benchmarks_page_fits_in_about_five_screens():
    assert len(text_of(rendered("benchmarks.md"))) <= 15_000


@pytest.mark.parametrize("name", [p for p in BENCHMARK_PAGES if "/lab/" not in p])
def test_a_benchmarks_page_is_at_most_ten_screens_its_lab_notes_apart(name):
    """The defaults in full, the other runs a row each (their lab notes page has them)."""
    words = re.sub(r"\s+", " ", text_of(rendered(name)))
    assert len(words) <= 30_000, f"{name}: {len(words):,} characters of text"


@pytest.mark.parametrize("name", BENCHMARK_PAGES)
def test_no_two_sections_of_a_page_share_a_title(name):
    titles = re.findall(r"^#{1,6} (.+)$", rendered(name), re.M)
    repeated = {t for t in titles if titles.count(t) > 1}
    assert not repeated, sorted(repeated)


@pytest.mark.parametrize(
    "path", sorted(glob.glob(str(ROOT / "benchmarks" / "results" / "*" / "*.json")))
)
def test_every_results_file_has_a_title_and_renders_its_figures_and_no_machine_path(path):
    with open(path) as f:
        record = json.load(f)
    record.setdefault("name", os.path.splitext(os.path.basename(path))[0])
    assert record.get("title"), f"{path} has no title: its section would be named by the file"
    section = pages.render_record(record)
    assert "\n| " in section or record.get("notes"), f"{path} renders no figure"
    assert "CPU family" in section or isinstance(record.get("machine"), str)
    command = re.search(r"```bash\n(.*?)\n```", section, re.S)
    if command:
        assert not pages.ABSOLUTE_PATH.search(command.group(1)), command.group(1)


def test_the_readmes_results_table_is_the_results_files():
    from benchmarks import headline

    readme = (ROOT / "README.md").read_text()
    assert headline.rewrite(readme) == readme, "run python -m benchmarks.headline"
    drawn = (ROOT / headline.FIGURE).read_text()
    assert drawn == headline.figure(), "run python -m benchmarks.headline"
    assert f"]({headline.FIGURE})" in readme  # the README shows it
    for _, name in [(k, n) for k, names in headline.DEFAULT_RESULTS.items() for n in names]:
        minutes = headline.load(name)["measured"]["wall_seconds"] / 60
        assert f'cx="{headline.figure_x(minutes):.1f}"' in drawn, f"{name} is not drawn"
    rows = headline.rows()
    assert rows[0][:2] == ["IMDB sentiment", "`text_encoder` (default)"]
    assert all("CPU family" in row[4] for row in rows)
