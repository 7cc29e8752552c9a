"""The documentation cannot drift: its figures come from results files, its values from the code
(scripts/docs_macros.py fills both in when the site is built)."""

import json
import re

import pytest

from benchmarks.pages import show
from tests.docs.macros import ROOT, docs_macros

# A figure: digits not inside a word or a name (CIFAR-10, bf16, x86_64).
NUMBER = re.compile(r"(?<![\w.\-])\d[\d,]*(?:\.\d+)?(?![\w\-])")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def numbers(text: str) -> set:
    return {n.replace(",", "").rstrip(".") for n in NUMBER.findall(text)}


def prose(markdown: str) -> str:
    """The text outside code blocks, code spans and links' targets."""
    return re.sub(r"\]\([^)]*\)", "]", CODE.sub(" ", markdown))


def figures_in_results() -> set:
    found = set()

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                found.update(numbers(str(key)))
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found.update({str(value), show(value).replace(",", "")})
        elif isinstance(value, str):
            found.update(numbers(value))

    for path in (ROOT / "benchmarks" / "results").rglob("*.json"):
        walk(json.loads(path.read_text()))
    return found


BENCHMARK_PAGES = ["benchmarks.md"] + sorted(
    p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs" / "benchmarks").rglob("*.md")
)


@pytest.mark.parametrize("name", BENCHMARK_PAGES)
def test_every_figure_on_the_benchmarks_pages_comes_from_a_results_file(name):
    from benchmarks.headline import table

    template = (ROOT / "docs" / name).read_text()
    # The page's own words quote no figure: only commands (in code) have numbers.
    assert not numbers(prose(re.sub(r"\{\{.*?\}\}", " ", template))), numbers(prose(template))
    page = docs_macros.render(template)
    known = figures_in_results() | numbers(table())  # the headline table rounds the files
    # Ratios are computed from two figures of one file, and the headline tables' minutes from
    # its seconds: they come from the files too.
    for path in (ROOT / "benchmarks" / "results").rglob("*.json"):
        record = json.loads(path.read_text())
        seconds = (record.get("measured") or {}).get("wall_seconds")
        if isinstance(seconds, (int, float)):
            known.add(show(round(seconds / 60, 1)).replace(",", ""))
        for _, key, reference, _ in record.get("references") or []:
            value = (record.get("measured") or {}).get(key)
            if isinstance(value, (int, float)) and reference:
                known.add(show(round(value / reference, 3)).replace(",", ""))
    unknown = numbers(prose(page)) - known
    assert not unknown, sorted(unknown)


def test_the_checks_catch_a_figure_typed_into_the_page(monkeypatch):
    assert numbers(prose("Accuracy rose to 0.7771 in `--epochs 3` runs")) == {"0.7771"}
    assert "0.7771" not in figures_in_results()  # a figure no results file holds


@pytest.mark.parametrize(
    "page", sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
)
def test_every_placeholder_is_filled_from_the_code_or_the_results(page):
    expanded = docs_macros.render((ROOT / "docs" / page).read_text(), page)  # raises on a bad one
    assert not re.search(r"\{\{\s*[a-z_]", expanded)


def test_values_quoted_from_the_code_follow_the_code():
    from pipeline.tasks import get_task

    assert docs_macros.render("{{ tasks.cifar10.default_epochs }}") == show(
        get_task("cifar10").default_epochs
    )
    table = docs_macros.config_table("vit")
    assert "`cct`" in table and "`mixup_alpha`" in table
    with pytest.raises(KeyError):
        docs_macros.render("{{ tasks.cifar10.no_such_field }}")


def test_the_cli_reference_lists_every_command_and_option():
    reference = docs_macros.cli_reference()
    for command in ("run", "compile", "submit", "infer", "predict", "report", "registry", "serve"):
        assert f"### `tfx-transformers {command}`" in reference
    for option in ("`--bert-preset`", "`TFXT_BERT_PRESET`", "`--drift-thresholds`", "`TFXT_SET`"):
        assert option in reference
    # Every parser's every option, nested subcommands included (registry list/show/promote).
    import argparse

    from pipeline.cli import build_parser

    def parsers(parser, title):
        yield title, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from parsers(sub, f"{title} {name}".strip())

    for title, parser in parsers(build_parser(), ""):
        if not title:
            continue
        section = reference.split(f"### `tfx-transformers {title}`")[1].split("\n### ")[0]
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}`" in section, (title, flag)
    assert "%(" not in reference  # argparse's placeholders are expanded
    tables = [line for line in reference.splitlines() if line.startswith("| ")]
    for line in tables:
        outside_code = line.split("`")[::2]
        assert not any("<" in part for part in outside_code), line  # not read as HTML


def test_the_readme_is_a_short_front_door():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).exists(), link


@pytest.mark.parametrize(
    "page", sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
)
def test_every_list_starts_after_a_blank_line(page):
    """Python-Markdown reads a list that follows a paragraph line as more of the paragraph,
    with a literal "- "."""
    code, previous = False, ""
    for number, line in enumerate((ROOT / "docs" / page).read_text().splitlines(), start=1):
        if line.startswith("```"):
            code = not code
        starts_list = re.match(r"^(- |\d+\. )", line)
        continues = re.match(r"^(\s*- |\s*\d+\. |\s+\S|\|)", previous)
        assert code or not starts_list or not previous.strip() or continues, f"{page}:{number}"
        previous = line


def test_the_run_report_page_shows_a_screenshot_the_project_takes_of_a_real_run():
    """docs/figures/run-report.png is what scripts/report_screenshot.py writes (`make
    report-screenshot`): a PNG of the report's first screen at the browser's width."""
    import struct

    from scripts import report_screenshot

    page = (ROOT / "docs" / "report.md").read_text()
    assert "](figures/run-report.png)" in page and "make browser report-screenshot" in page
    assert "report-screenshot:" in (ROOT / "Makefile").read_text()
    head = (ROOT / "docs" / "figures" / "run-report.png").read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width == report_screenshot.VIEWPORT["width"]
    assert 0 < height <= report_screenshot.SHOWN_HEIGHT
