"""MkDocs hooks (mkdocs.yml `hooks:`): the figures drawn when the site is built, added to it:
the plots of the results files (benchmarks/plots.py) as plots/NAME.png, and the IMDB pipeline
as create_pipeline builds it (pipeline/drawing.py) as figures/pipeline.svg. The pages'
placeholders are mkdocs-macros' (scripts/docs_macros.py)."""


def pipeline_figure() -> str:
    from pipeline.drawing import svg
    from pipeline.factory import Deployment, create_pipeline
    from pipeline.options import PipelineOptions

    run = PipelineOptions(task="imdb").resolve()
    where = Deployment(
        pipeline_root="pipeline_root",
        data_dir="data/imdb",
        serving_model_dir="serving_model",
        registry_config='{"backend": "mlflow"}',
        estimate_cost=True,  # as `tfx-transformers run` builds it
    )
    return svg(create_pipeline(run, where), "tfx-transformers run --task imdb")


def on_files(files, config):
    from mkdocs.structure.files import File

    from benchmarks.plots import PLOTS

    for name, draw in PLOTS.items():
        files.append(File.generated(config, f"plots/{name}.png", content=draw()))
    files.append(File.generated(config, "figures/pipeline.svg", content=pipeline_figure()))
    return files
