"""Feature names: the raw tf.Example features written by the ExampleGens and the outputs of Transform."""

# Raw IMDB review features (components/reviews_example_gen).
TEXT = "text"
LABEL = "label"  # 0 = negative, 1 = positive
RATING = "rating"  # the reviewer's 1-10 score (aclImdb file names); -1 when unknown (CSV)
REVIEW_ID = "id"

# Transformed features (trainer_module/preprocessing/text.py).
TOKEN_IDS = "token_ids"  # int64 (B, max_length), 0 = padding
LENGTH_BUCKET = "length_bucket"  # string, for TFMA slices by review length
TRANSFORMED_LABEL = "label"

LABEL_NAMES = ("negative", "positive")
