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

# Raw translation features (components/parallel_corpus_example_gen).
SOURCE = "source"
TARGET = "target"
PAIR_ID = "id"  # <file prefix>:<line number>

# Transformed translation features (trainer_module/preprocessing/translation.py).
SOURCE_IDS = "source_ids"  # int64 (B, max_source_length), 0 = padding
DECODER_INPUT_IDS = "decoder_input_ids"  # [START] y1 ... yn, 0-padded
TARGET_IDS = "target_ids"  # y1 ... yn [END], 0-padded: the labels
REFERENCE = "reference"  # the target, tokenized and joined by spaces: what BLEU compares with
SOURCE_LENGTH_BUCKET = "source_length_bucket"  # string, for TFMA slices by sentence length

# Raw image features (components/image_example_gen).
IMAGE = "image"  # encoded PNG or JPEG bytes
IMAGE_LABEL = "label"  # int, the index of label_name in the dataset's class list
IMAGE_LABEL_NAME = "label_name"
IMAGE_ID = "id"  # <batch file>:<record> or <split>/<class>/<file>

# Transformed image features (trainer_module/preprocessing/image.py).
PIXELS = "pixels"  # float32 (B, S, S, 3), per-channel normalized
CLASS_VOCABULARY = "class_names"  # tf.Transform vocabulary of "<label>:<label_name>" entries
