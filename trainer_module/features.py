"""Feature names shared across the pipeline: the raw tf.Example features the ExampleGens write
(components/*_example_gen) and every preprocessing_fn reads, and the transformed features a
task's TFMA EvalConfig reads (labels and slice keys). A family's other transformed features
are named in its own preprocessing.py."""

# Raw reviews (components/reviews_example_gen).
TEXT = "text"
LABEL = "label"  # the class's index (IMDB: 0 = negative, 1 = positive); also the transformed
# label of every classifier
LABEL_NAME = "label_name"  # the class's name (components/reviews_example_gen/classes.py)
RATING = "rating"  # the reviewer's 1-10 score (aclImdb file names); -1 when unknown (CSV)
REVIEW_ID = "id"
LABEL_NAMES = ("negative", "positive")  # IMDB's classes, by label
# The split of texts without labels that pretraining reads (the reviews ExampleGen's, when a run
# pretrains; the unlabeled ExampleGen's for bulk inference); their label is NO_LABEL.
UNLABELED_SPLIT = "unlabeled"
NO_LABEL = -1

# Raw sentence pairs (components/parallel_corpus_example_gen).
SOURCE = "source"
TARGET = "target"
PAIR_ID = "id"  # <file prefix>:<line number>

# Raw images (components/image_example_gen).
IMAGE = "image"  # encoded PNG or JPEG bytes
IMAGE_LABEL = "label"  # int, the index of label_name in the dataset's class list
IMAGE_LABEL_NAME = "label_name"
IMAGE_ID = "id"  # <batch file>:<record> or <split>/<class>/<file>
IMAGE_WIDTH, IMAGE_HEIGHT = "image_width", "image_height"  # as read, before Transform resizes

# Every ExampleGen writes a stable per-example id (the seeded hash split reads it).
EXAMPLE_ID = "id"

# The text ExampleGens' profile of each text, for statistics and drift checks only (no model
# reads them): its number of whitespace-separated words, and its first lower-cased word
# tokens (components/text_profile.py).
TEXT_WORDS, TEXT_TOKENS = "text_words", "text_tokens"
SOURCE_WORDS, SOURCE_TOKENS = "source_words", "source_tokens"
PROFILES = {TEXT: (TEXT_WORDS, TEXT_TOKENS), SOURCE: (SOURCE_WORDS, SOURCE_TOKENS)}

# Transformed features that tasks' EvalConfigs read.
LENGTH_BUCKET = "length_bucket"  # text classifiers: review length, for TFMA slices
REFERENCE = "reference"  # translators: the target as BLEU compares it
SOURCE_LENGTH_BUCKET = "source_length_bucket"  # translators: source length, for TFMA slices
