"""Writes the embedded movie-review corpus in the aclImdb layout (data/imdb/aclImdb/...).

Every review is composed here from the phrase bank below (no text copied from any dataset),
with a fixed seed, so the output is the same on every machine:

    python data/generate_imdb.py            # rewrite data/imdb/
    python data/generate_imdb.py --check    # exit 1 if data/imdb/ differs from the generator

Reviews vary in length (one line to several paragraphs joined by `<br /><br />`, as in
aclImdb), use punctuation and some non-ASCII text, and carry a 1-10 rating in the file name
(`ID_RATING.txt`: positive 7-10, negative 1-4).
"""

import argparse
import pathlib
import random
import sys

SEED = 20261121
COUNTS = {"train": 160, "test": 60}  # reviews per label folder

TITLES = [
    "The Lantern Keeper",
    "Salt and Iron",
    "Midnight at Café Lumière",
    "A Quiet Orbit",
    "The Glass Orchard",
    "Dockside Blues",
    "Émile's Last Summer",
    "North of Nowhere",
    "The Paper Crown",
    "Kites over Kraków",
    "Static Hearts",
    "The Long Haul",
    "Señora Valdés",
    "Fjord Light",
    "Borrowed Thunder",
    "The Ninth Mile",
]
PEOPLE = [
    "the lead actress",
    "the director",
    "the young co-star",
    "the composer",
    "the screenwriter",
    "the cinematographer",
    "the veteran actor",
    "the supporting cast",
    "Zoë Marchetti",
    "Björn Alder",
    "the editor",
    "the villain",
]
POSITIVE = [
    "a wonderful, moving story",
    "genuinely brilliant",
    "beautifully shot",
    "an absolute delight",
    "one of the best films of the year",
    "funny and warm",
    "superb from start to finish",
    "a gorgeous score",
    "the performances are excellent",
    "I loved every minute",
    "clever, tight and surprising",
    "a masterpiece of mood",
    "charming and heartfelt",
    "it earns every tear",
    "thrilling",
    "smart dialogue",
    "a joy to watch",
    "wonderfully acted",
    "I was captivated",
    "highly recommended",
]
NEGATIVE = [
    "a dull, lifeless mess",
    "painfully boring",
    "badly written",
    "an utter waste of time",
    "one of the worst films of the year",
    "tedious and flat",
    "awful from start to finish",
    "a grating score",
    "the performances are terrible",
    "I hated every minute",
    "lazy, predictable and confused",
    "a disaster of pacing",
    "clumsy and cynical",
    "it never earns a single tear",
    "stupid",
    "wooden dialogue",
    "a chore to sit through",
    "horribly acted",
    "I was bored stiff",
    "avoid it",
]
NEUTRAL = [
    "The plot follows a family over one long winter.",
    "It runs just under two hours.",
    "I saw it at a small festival screening.",
    "The story is set in a harbour town.",
    "Most of it was filmed on location.",
    "It is based on a novel I have not read.",
    "There is a subplot about a missing letter.",
    "The first act introduces six characters.",
    "My friend dragged me to it on a Tuesday.",
    "The trailer gives away very little.",
    "It is partly in French, with subtitles.",
    "The film opens with a long tracking shot.",
]
POSITIVE_TEMPLATES = [
    "Honestly, {p}.",
    "{P} -- {person} is {p2}.",
    "What a film: {p}!",
    "{title} is {p}; {p2}.",
    "I expected little, but it was {p}.",
    "By the end I thought: {p}. {P2}!",
    "{Person} makes it {p}.",
]
NEGATIVE_TEMPLATES = [
    "Honestly, {p}.",
    "{P} -- {person} is {p2}.",
    "What a film: {p}...",
    "{title} is {p}; {p2}.",
    "I expected a lot, but it was {p}.",
    "By the end I thought: {p}. {P2}?!",
    "{Person} makes it {p}.",
]
CLOSERS = {
    1: [
        "10/10 would watch again ★★★★★",
        "See it on the biggest screen you can.",
        "Bravo.",
        "Worth every cent — and then some.",
    ],
    0: [
        "1/10, and that is generous.",
        "Save your money.",
        "Skip it.",
        "Two hours I will never get back… ugh.",
    ],
}


def review(rng: random.Random, label: int) -> str:
    phrases, templates = (POSITIVE, POSITIVE_TEMPLATES) if label else (NEGATIVE, NEGATIVE_TEMPLATES)
    paragraphs = []
    for _ in range(rng.choice([1, 1, 2, 3, 4, 6])):
        sentences = []
        for _ in range(rng.randint(1, 6)):
            if rng.random() < 0.35:
                sentences.append(rng.choice(NEUTRAL))
                continue
            p, p2 = rng.sample(phrases, 2)
            person = rng.choice(PEOPLE)
            sentences.append(
                rng.choice(templates).format(
                    p=p,
                    p2=p2,
                    P=p[0].upper() + p[1:],
                    P2=p2[0].upper() + p2[1:],
                    person=person,
                    Person=person[0].upper() + person[1:],
                    title=rng.choice(TITLES),
                )
            )
        paragraphs.append(" ".join(sentences))
    if rng.random() < 0.5:
        paragraphs.append(rng.choice(CLOSERS[label]))
    return "<br /><br />".join(paragraphs)


def generate() -> dict:
    """Relative path -> review text for the whole corpus."""
    rng = random.Random(SEED)
    files = {}
    for split, count in COUNTS.items():
        for folder, label in (("neg", 0), ("pos", 1)):
            for review_id in range(count):
                rating = rng.choice([7, 8, 9, 10] if label else [1, 2, 3, 4])
                path = f"aclImdb/{split}/{folder}/{review_id}_{rating}.txt"
                files[path] = review(rng, label)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(pathlib.Path(__file__).parent / "imdb"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    files = generate()
    if args.check:
        existing = {str(p.relative_to(out)): p.read_text("utf-8") for p in out.rglob("*.txt")}
        if existing != files:
            print(f"{out} differs from the generator; rerun python data/generate_imdb.py")
            return 1
        print(f"{out}: {len(files)} reviews match the generator")
        return 0
    for relative, text in files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    print(f"wrote {len(files)} reviews under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
