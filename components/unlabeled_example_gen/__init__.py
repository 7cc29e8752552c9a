from components.unlabeled_example_gen.component import UnlabeledExampleGen  # noqa: F401
