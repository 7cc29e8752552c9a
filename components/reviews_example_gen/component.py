"""ReviewsExampleGen: a FileBasedExampleGen that finds the review layout when it runs (see
components/dataset_example_gen.py), so the pipeline compiles without reading the data."""
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec
from tfx.proto import example_gen_pb2

from components.dataset_example_gen import data_input, pack_options
from components.reviews_example_gen import executor
from components.seeded_split import hash_split_config


class ReviewsExampleGen(FileBasedExampleGen):
    """Reads movie reviews from the aclImdb folder layout or from `text,label` CSV files.

    Args:
        data_dir: a folder holding `aclImdb/` (or its `train/`, `test/` directly), or CSV
            files; a string (a `{SPAN}` in it reads the latest span:
            components/dataset_example_gen.py) or a runtime parameter; not read until the
            component runs.
        eval_percent: share of reviews held out for `eval` when the data has no test split.
        split_seed: seed of that hash split.
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, data_dir, eval_percent: int = 20, split_seed: int = 42):
        hash_split_config(eval_percent)  # checks the share now, not when the run starts
        input_base, input_config = data_input(data_dir)
        super().__init__(input_base=input_base, input_config=input_config,
                         output_config=example_gen_pb2.Output(),
                         custom_config=pack_options({"split_seed": split_seed,
                                                     "eval_percent": eval_percent}))
