"""What the dataset ExampleGens (reviews, images, parallel corpora) share.

They find their data's layout when they run, not when the pipeline is built: the component
holds only the data folder (`input_base`) and its own options, so a pipeline compiles without
reading the data, and the data folder can be a runtime parameter. At run time the executor
lists the folder, works out the layout (the files of each split, or one set to split by seeded
hash) and then reads the files inside Beam.

Before the executor runs, TFX's driver fingerprints `input_base` with the component's
input_config to decide whether a cached run still holds; since the layout is not known yet,
that config lists every file up to FINGERPRINT_DEPTH folders deep (the deepest layout read,
`aclImdb/train/pos/ID_RATING.txt`, is 4). A changed, added or removed data file changes the
fingerprint.
"""
import abc
from typing import Any, Dict, List, Tuple

from google.protobuf import json_format, struct_pb2
from tfx.components.example_gen.base_example_gen_executor import BaseExampleGenExecutor
from tfx.proto import example_gen_pb2
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

FINGERPRINT_DEPTH = 4
LAYOUT_PROPERTY = "data_layout"  # on the output Examples artifact: the layout the run found


def fingerprint_input_config() -> example_gen_pb2.Input:
    """The component's input_config: every file 1 to FINGERPRINT_DEPTH folders below
    input_base, for the driver's fingerprint (the executor replaces it with the layout's)."""
    return example_gen_pb2.Input(splits=[
        example_gen_pb2.Input.Split(name=f"depth-{depth}", pattern="/".join(["*"] * depth))
        for depth in range(1, FINGERPRINT_DEPTH + 1)])


def pack_options(options: Dict[str, Any]) -> example_gen_pb2.CustomConfig:
    """A CustomConfig holding `options` (a JSON-like dict) as a Struct."""
    struct = struct_pb2.Struct()
    struct.update(options)
    config = example_gen_pb2.CustomConfig()
    config.custom_config.Pack(struct)
    return config


def read_options(exec_properties: Dict[str, Any]) -> dict:
    """The options `pack_options` put into the component's custom_config."""
    config = example_gen_pb2.CustomConfig()
    proto_utils.json_to_proto(exec_properties[standard_component_specs.CUSTOM_CONFIG_KEY], config)
    struct = struct_pb2.Struct()
    config.custom_config.Unpack(struct)
    return json_format.MessageToDict(struct)


def read_split_configs(
        exec_properties: Dict[str, Any]) -> Tuple[example_gen_pb2.Input, example_gen_pb2.Output]:
    """The input (split patterns) and output (hash split) configs of the resolved layout."""
    input_config, output_config = example_gen_pb2.Input(), example_gen_pb2.Output()
    proto_utils.json_to_proto(exec_properties[standard_component_specs.INPUT_CONFIG_KEY],
                              input_config)
    proto_utils.json_to_proto(exec_properties[standard_component_specs.OUTPUT_CONFIG_KEY],
                              output_config)
    return input_config, output_config


def as_exec_properties(component) -> Dict[str, Any]:
    """A component's exec properties as its executor receives them (protos as JSON)."""
    return {key: proto_utils.proto_to_json(value) if hasattr(value, "DESCRIPTOR") else value
            for key, value in component.exec_properties.items()}


class LayoutExecutor(BaseExampleGenExecutor, abc.ABC):
    """An ExampleGen executor that first finds the layout under input_base (detect_layout),
    then generates examples from it (GenerateExamplesByBeam sees the resolved properties)."""

    @abc.abstractmethod
    def detect_layout(self, data_dir: str, options: dict):
        """The layout under `data_dir`: an object with root, format, input_config and
        output_config; raises an error naming the folder when there is none."""

    def layout_options(self, layout) -> dict:
        """What the layout adds to the options the Beam graph reads."""
        return {"format": layout.format}

    def resolve_layout(self, exec_properties: Dict[str, Any]) -> Dict[str, Any]:
        """The exec properties with the layout's root, split configs and options."""
        options = read_options(exec_properties)
        layout = self.detect_layout(exec_properties[standard_component_specs.INPUT_BASE_KEY],
                                    options)
        return {**exec_properties,
                standard_component_specs.INPUT_BASE_KEY: layout.root,
                standard_component_specs.INPUT_CONFIG_KEY:
                    proto_utils.proto_to_json(layout.input_config),
                standard_component_specs.OUTPUT_CONFIG_KEY:
                    proto_utils.proto_to_json(layout.output_config),
                standard_component_specs.CUSTOM_CONFIG_KEY: proto_utils.proto_to_json(
                    pack_options({**options, **self.layout_options(layout)}))}

    def Do(self, input_dict, output_dict, exec_properties) -> None:
        resolved = self.resolve_layout(exec_properties)
        layout = read_options(resolved)["format"]
        for examples in output_dict[standard_component_specs.EXAMPLES_KEY]:
            examples.set_string_custom_property(LAYOUT_PROPERTY, layout)
        super().Do(input_dict, output_dict, resolved)


def split_names(exec_properties: Dict[str, Any]) -> List[str]:
    """The output split names of resolved exec properties."""
    from tfx.components.example_gen import utils
    return utils.generate_output_split_names(*read_split_configs(exec_properties))
