"""The profile the text ExampleGens write beside each text, for statistics and drift checks."""

from components.text_profile import PROFILE_TOKENS, text_profile
from tests.components.example_gen_util import value


def test_words_and_lower_cased_tokens_of_any_script():
    profile = text_profile("Ein Café — 2 MÄNNER, don't!", "w", "t")
    assert profile["w"].int64_list.value == [6]
    assert [t.decode() for t in profile["t"].bytes_list.value] == [
        "ein",
        "café",
        "2",
        "männer",
        "don",
        "t",
    ]


def test_a_long_text_keeps_its_first_tokens_and_counts_every_word():
    profile = text_profile(" ".join(f"w{i}" for i in range(1000)), "w", "t")
    assert profile["w"].int64_list.value == [1000]
    tokens = profile["t"].bytes_list.value
    assert len(tokens) == PROFILE_TOKENS and tokens[-1] == f"w{PROFILE_TOKENS - 1}".encode()


def test_reviews_carry_their_profile(aclimdb_dir, tmp_path):
    from components.reviews_example_gen import ReviewsExampleGen
    from tests.components.example_gen_util import run_executor

    example = run_executor(ReviewsExampleGen(str(aclimdb_dir)), tmp_path / "out")["train"][0]
    text = value(example, "text")
    assert value(example, "text_words") == len(text.split())
    assert example.features.feature["text_tokens"].bytes_list.value[0] == (
        text.split()[0].lower().strip(".,!").encode()
    )
