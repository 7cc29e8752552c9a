"""ReviewsExampleGen: a FileBasedExampleGen that finds the review layout when it runs (see
components/dataset_example_gen.py), so the pipeline compiles without reading the data."""

from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec

from components.dataset_example_gen import example_gen_arguments
from components.reviews_example_gen import executor


class ReviewsExampleGen(FileBasedExampleGen):
    """Reads movie reviews from the aclImdb folder layout or from `text,label` CSV files.

    Args:
        data_dir: a folder holding `aclImdb/` (or its `train/`, `test/` directly), or CSV
            files; a string (a `{SPAN}` in it reads the latest span:
            components/dataset_example_gen.py) or a runtime parameter; not read until the
            component runs.
        eval_percent: share of reviews held out for `eval` when the data has no test split.
        split_seed: seed of that hash split.
        spans: with a `{SPAN}`: read the newest span and the spans before it, this many in
            all (a rolling window; components/dataset_example_gen.py).
        unlabeled: also read the layout's texts without labels (aclImdb's `train/unsup/`, an
            `unlabeled/` folder beside CSV files) into a third split, `unlabeled`, whose
            label is -1 (an empty split when there is no such folder): pretraining's extra
            text (layout.with_unlabeled).
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(
        self,
        data_dir,
        eval_percent: int = 20,
        split_seed: int = 42,
        spans: int = 1,
        unlabeled: bool = False,
    ):
        options = {"unlabeled": True} if unlabeled else {}
        super().__init__(
            **example_gen_arguments(data_dir, eval_percent, split_seed, spans, **options)
        )
