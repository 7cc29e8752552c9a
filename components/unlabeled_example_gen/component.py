"""UnlabeledExampleGen: a folder of raw inputs without labels -> tf.Examples for BulkInferrer."""

from tfx.components.example_gen.component import FileBasedExampleGen
from tfx.dsl.components.base import executor_spec
from tfx.proto import example_gen_pb2

from components.dataset_example_gen import pack_options
from components.unlabeled_example_gen import executor


class UnlabeledExampleGen(FileBasedExampleGen):
    """Reads the files directly in `data_dir` into one split, `unlabeled`, of tf.Examples with
    the task's raw feature (`text`, `source` or `image`) and an `id` naming where each came
    from (executor.py lists the formats).

    Args:
        data_dir: the folder (a string or a runtime parameter); its files are fingerprinted,
            so a changed folder is read again and an unchanged one is cached.
        feature: the raw feature the served model's `serving_default` parses.
    """

    EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)

    def __init__(self, data_dir, feature: str):
        if feature not in executor.READERS:
            raise ValueError(
                f"no unlabeled reader for feature {feature!r}; known: {sorted(executor.READERS)}"
            )
        super().__init__(
            input_base=data_dir,
            input_config=example_gen_pb2.Input(
                splits=[example_gen_pb2.Input.Split(name=executor.SPLIT, pattern="*")]
            ),
            output_config=example_gen_pb2.Output(),
            custom_config=pack_options({"feature": feature}),
        )
