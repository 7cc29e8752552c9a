"""Data highlights for the report: per-split example counts, per-feature statistics from
StatisticsGen, and what ExampleValidator found."""

import json
import os
from typing import List, Optional

from tensorflow_metadata.proto.v0 import statistics_pb2
from tfx.dsl.io import fileio

from components import file_io
from components.anomalies_gate.component import describe_anomalies

STATS_FILE = "FeatureStats.pb"  # what StatisticsGen writes in each Split-<name>/
BYTES_PLACEHOLDER = "__BYTES_VALUE__"  # TFDV's stand-in for binary values (encoded images)


def split_names(artifact) -> List[str]:
    return json.loads(artifact.get("split_names") or "[]")


def _feature_row(feature: statistics_pb2.FeatureNameStatistics, num_examples: int) -> dict:
    name = ".".join(feature.path.step) or feature.name
    kind = feature.WhichOneof("stats")
    stats = getattr(feature, kind)
    common = stats.common_stats
    present = common.num_non_missing
    row = {
        "feature": name,
        "type": statistics_pb2.FeatureNameStatistics.Type.Name(feature.type).lower(),
        "missing": 1 - present / num_examples if num_examples else 0.0,
    }
    if kind == "num_stats":
        row["summary"] = (
            f"mean {stats.mean:.4g}, std {stats.std_dev:.4g}, "
            f"min {stats.min:.4g}, max {stats.max:.4g}"
        )
    elif kind == "string_stats":
        top = ", ".join(
            f"{v.value[:30]!s} ({v.frequency:.0f})"
            for v in stats.top_values[:3]
            if not v.value.startswith(BYTES_PLACEHOLDER)
        )
        row["summary"] = f"{stats.unique} unique, average length {stats.avg_length:.1f}" + (
            f"; most frequent: {top}" if top else ""
        )
    elif kind == "bytes_stats":
        row["summary"] = (
            f"{stats.unique} unique, {stats.avg_num_bytes:.0f} bytes on average "
            f"({stats.min_num_bytes:.0f}-{stats.max_num_bytes:.0f})"
        )
    else:
        row["summary"] = ""
    return row


def statistics_highlights(statistics) -> List[dict]:
    """Per split: {"split", "examples", "features": [{feature, type, missing, summary}]}."""
    splits = []
    for split in split_names(statistics):
        path = os.path.join(statistics.uri, f"Split-{split}", STATS_FILE)
        if not fileio.exists(path):
            continue
        with fileio.open(path, "rb") as f:
            stats = statistics_pb2.DatasetFeatureStatisticsList.FromString(f.read())
        for dataset in stats.datasets:
            splits.append(
                {
                    "split": split,
                    "examples": dataset.num_examples,
                    "features": [
                        _feature_row(feature, dataset.num_examples) for feature in dataset.features
                    ],
                }
            )
    return splits


def anomalies(anomalies_artifact) -> List[str]:
    """ExampleValidator's findings, one line each (empty: none)."""
    return describe_anomalies(anomalies_artifact.uri, split_names(anomalies_artifact))


def drift(drift_artifact) -> Optional[List[str]]:
    """DistributionValidator's findings, one line each (empty: within every threshold); None
    when it had nothing to compare with (no champion yet: it writes no split pairs)."""
    if not file_io.glob(os.path.join(drift_artifact.uri, "SplitPair-*")):
        return None
    return describe_anomalies(drift_artifact.uri, split_names(drift_artifact))
