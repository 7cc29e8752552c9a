"""ExampleGen for movie reviews: the original aclImdb folder layout, or CSV files."""

from components.reviews_example_gen.component import ReviewsExampleGen

__all__ = ["ReviewsExampleGen"]
