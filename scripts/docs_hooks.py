"""MkDocs hooks (mkdocs.yml `hooks:`): the plots, drawn from the results files when the site is
built (benchmarks/plots.py), added to the site as plots/NAME.png. The pages' placeholders are
mkdocs-macros' (scripts/docs_macros.py)."""


def on_files(files, config):
    from mkdocs.structure.files import File

    from benchmarks.plots import PLOTS

    for name, draw in PLOTS.items():
        files.append(File.generated(config, f"plots/{name}.png", content=draw()))
    return files
