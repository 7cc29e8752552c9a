"""ParallelCorpusExampleGen: a FileBasedExampleGen that finds the corpus layout when it runs
(see components/dataset_example_gen.py), so the pipeline compiles without reading the data."""

from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec

from components.dataset_example_gen import example_gen_arguments
from components.parallel_corpus_example_gen import executor
from components.seeded_split import EVAL_PERCENT


class ParallelCorpusExampleGen(FileBasedExampleGen):
    """Reads sentence pairs from parallel files or tab-separated files.

    Args:
        data_dir: a folder of `<split>.<source_lang>` / `<split>.<target_lang>` files (plain or
            .gz) or of `source<TAB>target` .tsv/.txt files; a string (a `{SPAN}` in it
            reads the latest span: components/dataset_example_gen.py) or a runtime
            parameter; not read until the component runs.
        source_lang, target_lang: the language suffixes (for example "de", "en").
        eval_percent: share of pairs held out for `eval` when the corpus has no split.
        split_seed: seed of that hash split.
        spans: with a `{SPAN}`: read the newest span and the spans before it, this many in
            all (a rolling window; components/dataset_example_gen.py).
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(
        self,
        data_dir,
        source_lang: str,
        target_lang: str,
        eval_percent: int = EVAL_PERCENT,
        split_seed: int = 42,
        spans: int = 1,
    ):
        if source_lang == target_lang:
            raise ValueError(f"source and target language are both {source_lang!r}")
        super().__init__(
            **example_gen_arguments(
                data_dir,
                eval_percent,
                split_seed,
                spans,
                source_lang=source_lang,
                target_lang=target_lang,
            )
        )
