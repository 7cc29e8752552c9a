"""What the dataset ExampleGens (reviews, images, parallel corpora) share.

They find their data's layout when they run, not when the pipeline is built: the component
holds only the data folder (`input_base`) and its own options, so a pipeline compiles without
reading the data, and the data folder can be a runtime parameter. At run time the executor
lists the folder, works out the layout (the files of each split, or one set to split by seeded
hash) and then reads the files inside Beam.

Before the executor runs, TFX's driver fingerprints `input_base` with the component's
input_config to decide whether a cached run still holds (and resolves the latest span when the
data folder has a `{SPAN}`); since the layout is not known yet, that config lists every file up
to FINGERPRINT_DEPTH folders deep (the deepest layout read, `aclImdb/train/pos/ID_RATING.txt`,
is 4). A changed, added or removed data file changes the fingerprint.

With `spans` above 1 and a `{SPAN}` folder pattern, the run also reads the spans before the
newest one (a rolling window, as TFX's RollingRange: the spans that exist among the last
`spans` numbers, each at its latest version) into the same Examples: each span's folder has its
own layout, read as a span alone would be. The driver fingerprints the newest span, so a new
span starts a new run; spans are new data, never edited in place.
"""

import abc
import os
import re
from typing import Any, Dict, List, Tuple

import apache_beam as beam
from google.protobuf import json_format, struct_pb2
from tfx.components.example_gen.base_example_gen_executor import BaseExampleGenExecutor
from tfx.dsl.io import fileio
from tfx.proto import example_gen_pb2
from tfx.types import standard_component_specs
from tfx.utils import proto_utils

from components import file_io
from components.seeded_split import hash_split_config

FINGERPRINT_DEPTH = 4
LAYOUT_PROPERTY = "data_layout"  # on the output Examples artifact: the layout the run found
SOURCE_PROPERTY = "data_source"  # and the data folder it was given (the spans' parent)
SPANS_PROPERTY = "spans"  # ... and with a window, the spans it read ("1,2,3")
WINDOW = "Window"  # the node id of a pipeline's training window: its ExampleGen's id + this
SPAN, VERSION = "{SPAN}", "{VERSION}"


def data_input(data_dir) -> Tuple[Any, example_gen_pb2.Input]:
    """The component's (input_base, input_config) for `data_dir`, for the driver.

    A plain folder: every file 1 to FINGERPRINT_DEPTH folders below it is fingerprinted.
    A folder pattern with a `{SPAN}` (and optionally a `{VERSION}`) in it, such as
    `data/span-{SPAN}`: TFX's driver picks the latest span (and its latest version) and
    fingerprints that folder's entries, and the run reads that folder alone; a span is new
    data, so change data by adding a span (or a version), not by editing one.
    The executor replaces the config with the layout's when it runs (LayoutExecutor).
    """
    if not isinstance(data_dir, str) or SPAN not in data_dir:
        if isinstance(data_dir, str) and VERSION in data_dir:
            raise ValueError(f"{data_dir}: a {VERSION} needs a {SPAN} before it")
        return data_dir, example_gen_pb2.Input(
            splits=[
                example_gen_pb2.Input.Split(name=f"depth-{depth}", pattern="/".join(["*"] * depth))
                for depth in range(1, FINGERPRINT_DEPTH + 1)
            ]
        )
    parts = data_dir.rstrip("/").split("/")
    first = next(i for i, part in enumerate(parts) if SPAN in part)
    if any(VERSION in part for part in parts[:first]):
        raise ValueError(f"{data_dir}: the {VERSION} must come after the {SPAN}")
    base, spans = "/".join(parts[:first]) or ".", "/".join(parts[first:])
    return base, example_gen_pb2.Input(
        splits=[example_gen_pb2.Input.Split(name="span", pattern=f"{spans}/*")]
    )


def example_gen_arguments(
    data_dir, eval_percent: int, split_seed: int, spans: int = 1, **options
) -> dict:
    """FileBasedExampleGen's arguments for a dataset ExampleGen: the data folder (data_input),
    no split configs yet (the executor puts in its layout's) and the options, with the eval
    share and the window (`spans`, which needs a `{SPAN}`) checked now rather than when the
    run starts."""
    hash_split_config(eval_percent)
    input_base, input_config = data_input(data_dir)
    if spans != 1:
        if not isinstance(data_dir, str) or SPAN not in data_dir:
            raise ValueError(
                f"spans={spans} needs a data folder pattern with a {SPAN}, such "
                f"as data/span-{SPAN}; {data_dir} has none"
            )
        if spans < 1:
            raise ValueError(f"spans must be 1 or more, not {spans}")
        options = {
            **options,
            "spans": spans,
            "span_pattern": input_config.splits[0].pattern[: -len("/*")],
        }
    return {
        "input_base": input_base,
        "input_config": input_config,
        "output_config": example_gen_pb2.Output(),
        "custom_config": pack_options(
            {"split_seed": split_seed, "eval_percent": eval_percent, **options}
        ),
    }


def span_window(exec_properties: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The exec properties of each span the run reads, newest first: the driver's (the newest
    span) and, with a window, those of the spans before it that exist."""
    options = read_options(exec_properties)
    count = int(options.get("spans", 1))
    if count == 1:
        return [exec_properties]
    newest = int(exec_properties["span"])
    base = exec_properties[standard_component_specs.INPUT_BASE_KEY].rstrip("/")
    pattern = options["span_pattern"]
    # The pattern's folders, with their span and version numbers.
    matcher = re.compile(
        re.escape(pattern)
        .replace(re.escape(SPAN), r"(?P<span>\d+)")
        .replace(re.escape(VERSION), r"(?P<version>\d+)")
        + "$"
    )
    found: Dict[int, Tuple[int, str]] = {}
    for path in file_io.glob(f"{base}/{pattern.replace(SPAN, '*').replace(VERSION, '*')}"):
        relative = os.path.relpath(path, base)
        match = matcher.match(relative)
        if not match or not fileio.isdir(path):
            continue
        span, version = int(match["span"]), int(match.groupdict().get("version") or 0)
        if newest - count < span < newest and version >= found.get(span, (-1, ""))[0]:
            found[span] = (version, relative)
    window = [exec_properties]
    for span in sorted(found, reverse=True):
        version, relative = found[span]
        input_config = example_gen_pb2.Input(
            splits=[example_gen_pb2.Input.Split(name="span", pattern=f"{relative}/*")]
        )
        window.append(
            {
                **exec_properties,
                "span": span,
                "version": version if VERSION in pattern else None,
                standard_component_specs.INPUT_CONFIG_KEY: proto_utils.proto_to_json(input_config),
            }
        )
    return window


def resolved_without_driver(exec_properties: Dict[str, Any], examples) -> Dict[str, Any]:
    """The exec properties as TFX's ExampleGen driver leaves them (the latest span and
    version, the input fingerprint, the span's patterns), with the `examples` artifacts
    stamped as the driver stamps them. Every orchestrator TFX supports runs the driver first,
    and then this returns `exec_properties` unchanged; a Kubeflow Pipelines 2 backend runs no
    driver (no pre-cache checks: `compile --target kubeflow`), and then the executor resolves
    the span itself."""
    from tfx.components.example_gen import driver

    if exec_properties.get("span") is not None:
        return exec_properties
    # The driver's span resolution reads neither the metadata store nor these two arguments.
    resolved = driver.FileBasedDriver(
        metadata_handle=None  # type: ignore[arg-type]
    ).resolve_exec_properties(dict(exec_properties), None, None)  # type: ignore[arg-type]
    for artifact in examples:
        driver.update_output_artifact(resolved, artifact.mlmd_artifact)
    return resolved


def data_folder(exec_properties: Dict[str, Any]) -> str:
    """The folder the run reads: input_base, or the span folder the driver resolved (the
    input_config's pattern up to its first wildcard)."""
    input_config, _ = read_split_configs(exec_properties)
    base = exec_properties[standard_component_specs.INPUT_BASE_KEY]
    relative = input_config.splits[0].pattern.split("*")[0].rstrip("/")
    return f"{base.rstrip('/')}/{relative}" if relative else base


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
    exec_properties: Dict[str, Any],
) -> Tuple[example_gen_pb2.Input, example_gen_pb2.Output]:
    """The input (split patterns) and output (hash split) configs of the resolved layout."""
    input_config, output_config = example_gen_pb2.Input(), example_gen_pb2.Output()
    proto_utils.json_to_proto(
        exec_properties[standard_component_specs.INPUT_CONFIG_KEY], input_config
    )
    proto_utils.json_to_proto(
        exec_properties[standard_component_specs.OUTPUT_CONFIG_KEY], output_config
    )
    return input_config, output_config


def as_exec_properties(component) -> Dict[str, Any]:
    """A component's exec properties as its executor receives them (protos as JSON)."""
    return {
        key: proto_utils.proto_to_json(value) if hasattr(value, "DESCRIPTOR") else value
        for key, value in component.exec_properties.items()
    }


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
        layout = self.detect_layout(data_folder(exec_properties), options)
        return {
            **exec_properties,
            standard_component_specs.INPUT_BASE_KEY: layout.root,
            standard_component_specs.INPUT_CONFIG_KEY: proto_utils.proto_to_json(
                layout.input_config
            ),
            standard_component_specs.OUTPUT_CONFIG_KEY: proto_utils.proto_to_json(
                layout.output_config
            ),
            standard_component_specs.CUSTOM_CONFIG_KEY: proto_utils.proto_to_json(
                pack_options({**options, **self.layout_options(layout)})
            ),
        }

    @abc.abstractmethod
    def read_splits(self, pipeline, exec_properties: Dict[str, Any]) -> Dict[str, Any]:
        """Split name -> PCollection of tf.Examples, read from one span's layout (the resolved
        exec properties); `pipeline` is a Pipeline or a PBegin."""

    def Do(self, input_dict, output_dict, exec_properties) -> None:
        exec_properties = resolved_without_driver(
            exec_properties, output_dict[standard_component_specs.EXAMPLES_KEY]
        )
        self._window = [self.resolve_layout(p) for p in span_window(exec_properties)]
        layouts = sorted({read_options(p)["format"] for p in self._window})
        for examples in output_dict[standard_component_specs.EXAMPLES_KEY]:
            examples.set_string_custom_property(LAYOUT_PROPERTY, ",".join(layouts))
            examples.set_string_custom_property(
                SOURCE_PROPERTY, exec_properties[standard_component_specs.INPUT_BASE_KEY]
            )
            if len(self._window) > 1 or "spans" in read_options(exec_properties):
                examples.set_string_custom_property(
                    SPANS_PROPERTY, ",".join(str(p["span"]) for p in reversed(self._window))
                )
        super().Do(input_dict, output_dict, self._window[0])

    def GenerateExamplesByBeam(self, pipeline, exec_properties: Dict[str, Any]) -> Dict[str, Any]:
        """The newest span's splits, or each split of every span in the window, flattened."""
        window = getattr(self, "_window", None) or [exec_properties]
        if len(window) == 1:
            return self.read_splits(pipeline, window[0])
        read = [pipeline | f"Span{p['span']}" >> _ReadSpan(self, p) for p in window]
        names = set(read[0])
        for properties, splits in zip(window, read):
            if set(splits) != names:
                raise ValueError(
                    f"{data_folder(properties)}: splits {sorted(splits)} differ "
                    f"from the newest span's {sorted(names)}"
                )
        return {
            name: [splits[name] for splits in read] | f"Window{name}" >> beam.Flatten()
            for name in sorted(names)
        }


class _ReadSpan(beam.PTransform):
    """One span's splits, under a label of its own."""

    def __init__(self, executor: LayoutExecutor, exec_properties: Dict[str, Any]):
        super().__init__()
        self.executor, self.exec_properties = executor, exec_properties

    def expand(self, pbegin):
        return self.executor.read_splits(pbegin, self.exec_properties)
