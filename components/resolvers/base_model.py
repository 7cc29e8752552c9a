"""The model a Trainer warm-starts from (TFX's `base_model`): the latest blessed model that was
trained on other examples than this run's.

The latest blessed model as such would not do: it changes whenever a model is blessed, so a rerun
on the same data would find new Trainer inputs and train again, and again. Leaving out the
models trained on this run's examples (MLMD lineage: model <- Trainer's "examples" <- Transform's
"examples") keeps a rerun cached, and gives a new span, or changed data, the champion of the
data before it.
"""

from typing import Dict, List, Optional

import ml_metadata as mlmd
from tfx import types
from tfx.dsl.components.common import resolver
from tfx.types import Channel, standard_artifacts

from components.resolvers import lineage

MODEL, BLESSING, EXAMPLES = "model", "model_blessing", "examples"


class PreviousDataChampionStrategy(resolver.ResolverStrategy):
    """Resolves {model: [the base model]} (or nothing), its blessing, and the examples."""

    def resolve_artifacts(
        self, store: mlmd.MetadataStore, input_dict: Dict[str, List[types.Artifact]]
    ) -> Optional[Dict[str, List[types.Artifact]]]:
        current = {examples.id for examples in input_dict[EXAMPLES]}
        blessings = {
            b.get_int_custom_property("current_model_id"): b
            for b in input_dict[BLESSING]
            if b.get_int_custom_property("blessed") == 1
        }
        for model in sorted(input_dict[MODEL], key=lambda a: a.id, reverse=True):
            if model.id not in blessings:
                continue
            trained_on = set(lineage.upstream(store, model.id, "examples", "examples"))
            if trained_on and not trained_on & current:
                return {
                    MODEL: [model],
                    BLESSING: [blessings[model.id]],
                    EXAMPLES: input_dict[EXAMPLES],
                }
        return {MODEL: [], BLESSING: [], EXAMPLES: input_dict[EXAMPLES]}


def base_model_resolver(examples: types.BaseChannel) -> resolver.Resolver:
    """The Resolver node whose outputs["model"] is the base model (possibly none) for the run
    whose ExampleGen wrote `examples`."""
    return resolver.Resolver(
        strategy_class=PreviousDataChampionStrategy,
        model=Channel(type=standard_artifacts.Model),
        model_blessing=Channel(type=standard_artifacts.ModelBlessing),
        examples=examples,
    ).with_id("base_model_resolver")
