"""ImageExampleGen: a FileBasedExampleGen whose driver fingerprints the image files, so changed
data is never served from cache."""
from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec

from components.example_gen_options import pack_options
from components.image_example_gen import executor
from components.image_example_gen.layout import detect_layout


class ImageExampleGen(FileBasedExampleGen):
    """Reads the CIFAR-10 binary release or folders of images (see layout.detect_layout).

    Args:
        data_dir: the dataset directory.
        image_size: the side every image must have (CIFAR-10: 32).
        eval_percent: share of images held out for `eval` when the data has no eval split.
        split_seed: seed of that hash split.
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, data_dir: str, image_size: int = 32, eval_percent: int = 10,
                 split_seed: int = 42):
        layout = detect_layout(data_dir, eval_percent)
        custom_config = pack_options({"format": layout.format, "split_seed": split_seed,
                                      "class_names": layout.class_names,
                                      "image_size": image_size})
        super().__init__(input_base=layout.root, input_config=layout.input_config,
                         output_config=layout.output_config, custom_config=custom_config)
