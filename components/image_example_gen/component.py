"""ImageExampleGen: a FileBasedExampleGen that finds the image layout and the class list when
it runs (see components/dataset_example_gen.py), so the pipeline compiles without reading the
data."""

from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec

from components.dataset_example_gen import example_gen_arguments
from components.image_example_gen import executor
from components.seeded_split import EVAL_PERCENT


class ImageExampleGen(FileBasedExampleGen):
    """Reads the CIFAR-10 binary release, folders of images, `path,label` CSV files or
    TFRecords of tf.Example (see layout.detect_layout); images of any size.

    Args:
        data_dir: the dataset directory; a string (a `{SPAN}` in it reads the latest span:
            components/dataset_example_gen.py) or a runtime parameter; not read until the
            component runs.
        eval_percent: share of images held out for `eval` when the data has no eval split.
        split_seed: seed of that hash split.
        spans: with a `{SPAN}`: read the newest span and the spans before it, this many in
            all (a rolling window; components/dataset_example_gen.py).
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(
        self,
        data_dir,
        eval_percent: int = EVAL_PERCENT,
        split_seed: int = 42,
        spans: int = 1,
    ):
        super().__init__(**example_gen_arguments(data_dir, eval_percent, split_seed, spans))
