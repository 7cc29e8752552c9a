"""ParallelCorpusExampleGen: a FileBasedExampleGen whose driver fingerprints the corpus files,
so a changed corpus is never served from cache."""
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec

from components.example_gen_options import pack_options
from components.parallel_corpus_example_gen import executor
from components.parallel_corpus_example_gen.layout import detect_layout


class ParallelCorpusExampleGen(FileBasedExampleGen):
    """Reads sentence pairs from parallel files or tab-separated files.

    Args:
        data_dir: a folder of `<split>.<source_lang>` / `<split>.<target_lang>` files (plain or
            .gz) or of `source<TAB>target` .tsv/.txt files.
        source_lang, target_lang: the language suffixes (for example "de", "en").
        eval_percent: share of pairs held out for `eval` when the corpus has no split.
        split_seed: seed of that hash split.
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, data_dir: str, source_lang: str, target_lang: str,
                 eval_percent: int = 20, split_seed: int = 42):
        layout = detect_layout(data_dir, source_lang, target_lang, eval_percent)
        custom_config = pack_options({"format": layout.format, "split_seed": split_seed,
                                      "source_lang": source_lang, "target_lang": target_lang})
        super().__init__(input_base=layout.root, input_config=layout.input_config,
                         output_config=layout.output_config, custom_config=custom_config)
