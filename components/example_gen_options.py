"""What the dataset ExampleGens pass from component to executor: their own options (packed into
TFX's CustomConfig) and the split configs."""
from typing import Any, Dict, Tuple

from google.protobuf import json_format, struct_pb2
from tfx.proto import example_gen_pb2
from tfx.types import standard_component_specs
from tfx.utils import proto_utils


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
    """The component's input (split patterns) and output (hash split) configs."""
    input_config, output_config = example_gen_pb2.Input(), example_gen_pb2.Output()
    proto_utils.json_to_proto(exec_properties[standard_component_specs.INPUT_CONFIG_KEY],
                              input_config)
    proto_utils.json_to_proto(exec_properties[standard_component_specs.OUTPUT_CONFIG_KEY],
                              output_config)
    return input_config, output_config
