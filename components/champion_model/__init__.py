from components.champion_model.component import ChampionAwareEvaluator, ChampionModel  # noqa: F401
