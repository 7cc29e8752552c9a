"""ImageExampleGen: a FileBasedExampleGen that finds the image layout and the class list when
it runs (see components/dataset_example_gen.py), so the pipeline compiles without reading the
data."""
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec
from tfx.proto import example_gen_pb2

from components.dataset_example_gen import data_input, pack_options
from components.image_example_gen import executor
from components.seeded_split import hash_split_config


class ImageExampleGen(FileBasedExampleGen):
    """Reads the CIFAR-10 binary release, folders of images or TFRecords of tf.Example (see
    layout.detect_layout).

    Args:
        data_dir: the dataset directory; a string (a `{SPAN}` in it reads the latest span:
            components/dataset_example_gen.py) or a runtime parameter; not read until the
            component runs.
        image_size: the side every image must have (CIFAR-10: 32).
        eval_percent: share of images held out for `eval` when the data has no eval split.
        split_seed: seed of that hash split.
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, data_dir, image_size: int = 32, eval_percent: int = 10,
                 split_seed: int = 42):
        hash_split_config(eval_percent)  # checks the share now, not when the run starts
        input_base, input_config = data_input(data_dir)
        super().__init__(input_base=input_base, input_config=input_config,
                         output_config=example_gen_pb2.Output(),
                         custom_config=pack_options({
                             "split_seed": split_seed, "eval_percent": eval_percent,
                             "image_size": image_size}))
