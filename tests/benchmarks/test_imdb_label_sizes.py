"""The label-size subsets: every validation review, the first N training reviews, and with
`unlabeled` the other training reviews as aclImdb's unlabelled texts."""

import os

from benchmarks.imdb_label_sizes import subset


def test_a_subset_keeps_n_labelled_reviews_and_can_give_the_rest_without_labels(tmp_path):
    train = tmp_path / "full" / "aclImdb" / "train"
    for label in ("pos", "neg"):
        (train / label).mkdir(parents=True)
        for i in range(50):
            (train / label / f"{i}_{8 if label == 'pos' else 2}.txt").write_text(f"{label} {i}")

    def files(root, folder):
        path = os.path.join(root, "aclImdb", "train", folder)
        return sorted(os.listdir(path)) if os.path.isdir(path) else []

    plain = subset(str(tmp_path / "full"), 10, str(tmp_path / "plain"))
    rest = subset(str(tmp_path / "full"), 10, str(tmp_path / "rest"), unlabeled=True)
    labelled = files(plain, "pos") + files(plain, "neg")
    assert files(plain, "unsup") == []
    assert files(rest, "pos") + files(rest, "neg") == labelled  # the same labelled reviews
    unlabelled = files(rest, "unsup")
    # Every review is labelled or unlabelled, never both: validation's are never unlabelled.
    assert len(labelled) + len(unlabelled) == 100
    assert all(name.startswith(("pos-", "neg-")) for name in unlabelled)
    validation = len(labelled) - 10
    assert len(unlabelled) == 100 - validation - 10
    pos_unlabelled = {name[len("pos-") :] for name in unlabelled if name.startswith("pos-")}
    assert not pos_unlabelled & set(files(rest, "pos"))
