"""The documentation's placeholders (mkdocs-macros-plugin, mkdocs.yml `plugins: macros`): what
the pages say about the code and about measurements is filled in from them when the site is
built, so that it cannot drift. A placeholder the code cannot fill fails the build.

In any page:
- `{{ tasks.cifar10.default_epochs }}`, `{{ presets.vit.cct.mixup_alpha }}`,
  `{{ configs.TUNER_TRIALS }}`, `{{ contract.MAX_ROWS }}`: a value read from the code (roots:
  `tasks`, `families`, `presets`, `configs`, `contract`, `runtimes`, `mlflow_registry`; then keys or
  attributes), printed as the docs print numbers (20,000);
- `{{ cli_reference() }}`: every command of the CLI with its options, from its own parsers,
  and every pipeline option with its environment variable, from `PipelineOptions`;
- `{{ config_table("vit") }}`: a model family's config fields, each with its comment, its
  default and its value in every preset that changes it;
- `{{ results("BENCHMARK", "FIELD=VALUE", ...) }}`, `{{ result("BENCHMARK/NAME", "key.path") }}`,
  `{{ headline("BENCHMARK") }}`, `{{ defaults_table() }}`, `{{ test_suite_table() }}`,
  `{{ test_suite_projection() }}`, `{{ cost_table() }}`: the results files
  (benchmarks/pages.py);
- `{{ plot("NAME") }}`: a plot drawn from the results files (benchmarks/plots.py; the files
  are added by scripts/docs_hooks.py).

`render(markdown)` fills a page's placeholders as the build does, for the tests.
"""

import argparse
import dataclasses
import inspect
import re
from typing import Any, Dict

from benchmarks import headline, pages
from benchmarks.pages import show, table


class Shown:
    """A value from the code: its keys and attributes are Shown too, and it prints as the
    docs print values (pages.show); a missing one fails the build, naming it."""

    def __init__(self, value: Any, path: str):
        self._value, self._path = value, path

    def _child(self, part: str) -> "Shown":
        try:
            return Shown(pages.lookup(self._value, [part]), f"{self._path}.{part}")
        except KeyError as error:
            raise KeyError(f"{{{{ {self._path}.{part} }}}}: {error}") from None

    def __getattr__(self, part: str) -> "Shown":
        if part.startswith("_"):
            raise AttributeError(part)
        return self._child(part)

    __getitem__ = _child

    def __str__(self) -> str:
        return show(self._value)


def code_roots() -> Dict[str, Any]:
    from components.model_registry import mlflow_registry
    from pipeline import configs
    from pipeline.tasks import TASKS
    from trainer_module.families import FAMILIES
    from trainer_module.serving import contract, runtimes

    return {
        "tasks": TASKS,
        "families": FAMILIES,
        "configs": configs,
        "contract": contract,
        "runtimes": runtimes,
        "mlflow_registry": mlflow_registry,
        "presets": {name: family.presets for name, family in FAMILIES.items()},
    }


def field_comments(config_class) -> Dict[str, str]:
    """Each dataclass field's comment: the comment lines just above it and the one after it, in
    the class that declares it (a config's own, or a mixin's such as WidePathConfig)."""
    comments = {}
    for field in dataclasses.fields(config_class):
        owner = next(
            c for c in config_class.__mro__ if field.name in getattr(c, "__annotations__", {})
        )
        lines = inspect.getsource(owner).splitlines()
        index = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{field.name}:"))
        above = []
        for line in reversed(lines[:index]):
            if not line.strip().startswith("#"):
                break
            above.insert(0, line.strip().lstrip("#").strip())
        after = lines[index].split("#", 1)[1].strip() if "#" in lines[index] else ""
        comments[field.name] = " ".join(above + ([after] if after else []))
    return comments


def config_table(family_name: str) -> str:
    from trainer_module.families import FAMILIES

    family = FAMILIES[family_name]
    config_class = type(family.config())
    default = config_class()
    presets = family.presets
    comments = field_comments(config_class)
    rows = []
    for field in dataclasses.fields(config_class):
        values = [getattr(p, field.name) for p in presets.values()]
        rows.append(
            [f"`{field.name}`", comments[field.name], getattr(default, field.name)]
            + [v if v != getattr(default, field.name) else "" for v in values]
        )
    columns = ["field", "what it is, and why", "default"] + [
        f"`{name}`" + (" (the family's default)" if name == family.default_preset else "")
        for name in presets
    ]
    return table(columns, rows)


def cli_default(default: Any, help_text: str) -> str:
    """A CLI option's default as the user would type it (5000, not 5,000; nothing for an empty
    list), or the default its help text states when it has no value of its own."""
    if default in (None, False, argparse.SUPPRESS) or default in ([], ()):
        stated = re.findall(r"\(default: ([^()]*(?:\([^()]*\)[^()]*)*)\)", help_text)
        return stated[-1] if stated else ""
    if isinstance(default, (list, tuple)):
        default = " ".join(str(d) for d in default)
    return f"`{default}`"


def cli_reference() -> str:
    from pipeline.cli import build_parser
    from pipeline.options import ENV_PREFIX, PipelineOptions, _declared_fields

    declared = {f.name: f.default for f in _declared_fields()}

    def subcommands(parser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: a.help for a in action._choices_actions}
                for name, sub in action.choices.items():
                    yield name, sub, helps.get(name)

    def section(title: str, sub, help_text) -> list:
        rows = []
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            flags = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
            default = action.default
            if default is None and declared.get(action.dest) is not None and not action.required:
                default = declared[action.dest]  # resolved from PipelineOptions' declaration
            # argparse's own expansion (%(default)s, %(default)g, %(choices)s ...)
            text = sub._get_formatter()._expand_help(action) if action.help else ""
            value = "required" if action.required else cli_default(default, text) or "none"
            rows.append([flags, text or "(no help)", value])
        lines = [
            f"### `tfx-transformers {title}`",
            "",
            sub.description or help_text or "",
            "",
            "```text",
            sub.format_usage().strip(),
            "```",
            "",
        ]
        if rows:
            lines += [table(["option", "what it does", "default"], rows), ""]
        for name, nested, nested_help in subcommands(sub):
            lines += section(f"{title} {name}", nested, nested_help)
        return lines

    out = []
    for name, sub, help_text in subcommands(build_parser()):
        out += section(name, sub, help_text)
    fields = list(_declared_fields())
    rows = [
        [f"`--{f.name.replace('_', '-')}`", f"`{ENV_PREFIX}{f.name.upper()}`", f.metadata["help"]]
        for f in fields
    ]
    rows.append(
        [
            "`--set KEY=VALUE`",
            f"`{ENV_PREFIX}SET`",
            PipelineOptions.__dataclass_fields__["overrides"].metadata["help"],
        ]
    )
    out += [
        "### Pipeline options and their environment variables",
        "",
        "`run` and `compile` take these as flags; the TFX CLI's DSL file "
        "(`pipeline/local_runner.py`) and the Kubeflow runners read the variables. A task's "
        "or a family's own options follow the same rule (`--bert-preset` is "
        f"`{ENV_PREFIX}BERT_PRESET`).",
        "",
        table(["flag", "variable", "what it sets"], rows),
        "",
    ]
    return "\n".join(out)


def results(benchmark: str, *filters: str, page_uri: str = "") -> str:
    """A benchmark's results files: on a benchmarks page, the defaults and the newest in full
    and the others a row each, in full on its lab notes page (benchmarks/lab/ of the same
    name), which shows every one."""
    summary = page_uri.startswith("benchmarks/") and not page_uri.startswith("benchmarks/lab/")
    lab_notes = "lab/" + page_uri.rsplit("/", 1)[-1] if summary else ""
    return pages.render_results(benchmark, filters, lab_notes)


MACROS = {
    "cli_reference": cli_reference,
    "config_table": config_table,
    "result": lambda name, path: pages.result_value(f"{name} {path}"),
    "headline": pages.headline_table,
    "defaults_table": headline.table,
    "test_suite_table": pages.test_suite_table,
    "test_suite_projection": pages.test_suite_projection,
    "cost_table": pages.cost_table,
    "kfp_releases_table": lambda: kfp_releases_table(),
}


def kfp_releases_table() -> str:
    """What each range of Kubeflow Pipelines releases hands a step (launch's KfpBackend)."""
    from pipeline.launch.shapes import releases_table

    return releases_table()


def plot(name: str, page_uri: str = "") -> str:
    """The plot's image, from the page at `page_uri` (docs/benchmarks/imdb.md: benchmarks/...)."""
    from benchmarks.plots import PLOTS

    if name not in PLOTS:
        raise KeyError(f"no plot {name!r}; known: {sorted(PLOTS)}")
    return f"![{name}]({'../' * page_uri.count('/')}plots/{name}.png)"


def variables() -> Dict[str, Any]:
    return {name: Shown(value, name) for name, value in code_roots().items()}


def page_macros(page_uri) -> Dict[str, Any]:
    """The macros that depend on the page (`page_uri()`: its path under docs/)."""
    return {
        "results": lambda benchmark, *filters: results(benchmark, *filters, page_uri=page_uri()),
        "plot": lambda name: plot(name, page_uri()),
    }


def define_env(env) -> None:
    """mkdocs-macros' entry point."""
    env.variables.update(variables())
    macros = {**MACROS, **page_macros(lambda: env.page.file.src_uri)}
    for name, macro in macros.items():
        env.macro(macro, name)


def render(markdown: str, page_uri: str = "") -> str:
    """`markdown` with its placeholders filled as the build fills them (StrictUndefined, as
    mkdocs.yml's on_undefined: strict)."""
    import jinja2

    environment = jinja2.Environment(undefined=jinja2.StrictUndefined)
    context = {**variables(), **MACROS, **page_macros(lambda: page_uri)}
    return environment.from_string(markdown).render(**context)
