"""ReviewsExampleGen: a FileBasedExampleGen that finds the review layout when it runs (see
components/dataset_example_gen.py), so the pipeline compiles without reading the data."""

from typing import Any, Dict, Sequence

from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec

from components.dataset_example_gen import example_gen_arguments
from components.reviews_example_gen import executor
from components.reviews_example_gen.classes import format_classes
from components.seeded_split import EVAL_PERCENT


class ReviewsExampleGen(FileBasedExampleGen):
    """Reads labelled texts from a folder layout (aclImdb's, or `train/<class>/*.txt` of any
    classes) or from `text,label` CSV files; the classes as `classes` names them, else read
    from the data when it runs (classes.py).

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
        classes: the class names in label order (classes.detect_classes, when the pipeline
            is built); a row with another label stops the run, naming its file. Empty: the
            ExampleGen reads them from the data.
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(
        self,
        data_dir,
        eval_percent: int = EVAL_PERCENT,
        split_seed: int = 42,
        spans: int = 1,
        unlabeled: bool = False,
        classes: Sequence[str] = (),
    ):
        options: Dict[str, Any] = {"unlabeled": True} if unlabeled else {}
        if classes:
            options["classes"] = format_classes(classes)
        super().__init__(
            **example_gen_arguments(data_dir, eval_percent, split_seed, spans, **options)
        )
