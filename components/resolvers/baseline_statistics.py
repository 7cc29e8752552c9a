"""The statistics of the data the current champion was evaluated on: the baseline that
DistributionValidator compares a new span's statistics with.

The latest statistics of any earlier run would not do: a span refused for drift leaves its
statistics behind, and the next run on the same span would be compared with itself and pass.
Following MLMD lineage from the latest blessing (ModelBlessing <- Evaluator <- its `examples`
-> StatisticsGen -> ExampleStatistics) gives the statistics of data a blessed model was
trained and judged on. No blessed model yet (the first span): no baseline, and
DistributionValidator passes the span.
"""

from typing import Dict, List, Optional

import ml_metadata as mlmd
from tfx import types
from tfx.dsl.components.common import resolver
from tfx.types import Channel, standard_artifacts

from components.resolvers import lineage

BLESSING, STATISTICS = "model_blessing", "statistics"


class ChampionDataStatisticsStrategy(resolver.ResolverStrategy):
    """Resolves {statistics: [the champion's evaluation data's statistics]} (or nothing) and
    {model_blessing: [the latest blessing]}."""

    def resolve_artifacts(
        self, store: mlmd.MetadataStore, input_dict: Dict[str, List[types.Artifact]]
    ) -> Optional[Dict[str, List[types.Artifact]]]:
        blessed = [b for b in input_dict[BLESSING] if b.get_int_custom_property("blessed") == 1]
        if not blessed:
            return {BLESSING: [], STATISTICS: []}
        blessing = max(blessed, key=lambda a: a.id)
        examples = set(lineage.upstream(store, blessing.id, "examples"))  # the Evaluator's
        by_producer = {
            execution: statistics
            for statistics in input_dict[STATISTICS]
            for execution in lineage.executions(store, statistics.id, lineage.OUTPUT)
        }
        for example in sorted(examples, reverse=True):
            for execution in lineage.executions(store, example, lineage.INPUT):
                if execution in by_producer:
                    return {BLESSING: [blessing], STATISTICS: [by_producer[execution]]}
        return {BLESSING: [blessing], STATISTICS: []}


def baseline_statistics_resolver() -> resolver.Resolver:
    """The Resolver node whose outputs["statistics"] is the baseline (possibly none)."""
    return resolver.Resolver(
        strategy_class=ChampionDataStatisticsStrategy,
        model_blessing=Channel(type=standard_artifacts.ModelBlessing),
        statistics=Channel(type=standard_artifacts.ExampleStatistics),
    ).with_id("baseline_statistics_resolver")
