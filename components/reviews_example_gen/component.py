"""ReviewsExampleGen: a FileBasedExampleGen whose driver fingerprints the review files, so a
changed corpus is never served from cache."""
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec

from components.example_gen_options import pack_options
from components.reviews_example_gen import executor
from components.reviews_example_gen.layout import detect_layout


class ReviewsExampleGen(FileBasedExampleGen):
    """Reads movie reviews from the aclImdb folder layout or from `text,label` CSV files.

    Args:
        data_dir: a folder holding `aclImdb/` (or its `train/`, `test/` directly), or CSV files.
        eval_percent: share of reviews held out for `eval` when the data has no test split.
        split_seed: seed of that hash split.
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, data_dir: str, eval_percent: int = 20, split_seed: int = 42):
        layout = detect_layout(data_dir, eval_percent)
        custom_config = pack_options({"format": layout.format, "split_seed": split_seed})
        super().__init__(input_base=layout.root, input_config=layout.input_config,
                         output_config=layout.output_config, custom_config=custom_config)
