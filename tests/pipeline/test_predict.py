"""`predict --input` (pipeline/predict.py): texts are predicted in batches of similar length,
read a window of batches ahead, and answered in input order, bad lines included."""

import io
import json

import numpy as np

from pipeline.predict import predict_lines
from trainer_module.serving.contract import TRANSLATE


class EchoTranslator:
    """A served translator (runtimes.Served's interface) that upper-cases its sources and
    records each batch."""

    signature, input = TRANSLATE, "source"

    def __init__(self):
        self.batches = []

    def __call__(self, texts):
        self.batches.append(list(texts))
        return {"translation": np.array([t.upper().encode() for t in texts])}


def lines(*sources):
    return io.StringIO("".join(json.dumps({"source": s}) + "\n" for s in sources))


def test_texts_are_batched_by_length_and_answered_in_input_order():
    sources = ["a" * n for n in (9, 1, 7, 3, 8, 2, 6, 4)]
    model = EchoTranslator()
    answers = list(predict_lines(model, lines(*sources), batch_size=2, window=4))
    assert [a["line"] for a in answers] == list(range(1, 9))
    assert [a["translation"] for a in answers] == [s.upper() for s in sources]
    assert [[len(t) for t in batch] for batch in model.batches] == [[1, 2], [3, 4], [6, 7], [8, 9]]


def test_the_window_bounds_how_far_ahead_lines_are_read():
    sources = ["a" * n for n in (5, 1, 4, 2)]
    model = EchoTranslator()
    list(predict_lines(model, lines(*sources), batch_size=1, window=2))
    assert [len(batch[0]) for batch in model.batches] == [1, 5, 2, 4]  # sorted within 2 lines


def test_a_bad_line_is_answered_in_its_place_and_the_others_translated():
    text = lines("zwei Hunde", "").getvalue() + "not json\n" + lines("ein Hund").getvalue()
    answers = list(predict_lines(EchoTranslator(), io.StringIO(text), batch_size=2))
    assert [a["line"] for a in answers] == [1, 2, 3, 4]
    assert answers[0]["translation"] == "ZWEI HUNDE" and answers[3]["translation"] == "EIN HUND"
    assert "error" in answers[1] and "not JSON" in answers[2]["error"]
