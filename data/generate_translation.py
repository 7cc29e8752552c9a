"""Writes the embedded German-English corpus in Multi30k's layout (data/translation/...).

Each pair is composed here from a small grammar and a hand-written bilingual word list (no
sentence copied from any dataset), with a fixed seed, so the output is the same everywhere:

    python data/generate_translation.py            # rewrite data/translation/
    python data/generate_translation.py --check    # exit 1 if data/translation/ differs

Sentences describe a scene, as image captions do: a subject with an optional adjective, an
action, a place and optionally clothing ("Eine junge Frau in einem roten Hemd sitzt auf einer
Bank." / "A young woman in a red shirt is sitting on a bench."). German gender, adjective
endings and plural verbs are followed, so the model has to learn more than word-for-word
substitution.
"""

import argparse
import pathlib
import random
import sys

SEED = 20261121
COUNTS = {"train": 480, "val": 120}  # distinct pairs per split
OUT_DIR = pathlib.Path(__file__).resolve().parent / "translation"

# noun: (German nominative with indefinite article by gender, English, gender, plural?)
SUBJECTS = [
    ("Mann", "man", "m"),
    ("Frau", "woman", "f"),
    ("Kind", "child", "n"),
    ("Junge", "boy", "m"),
    ("Mädchen", "girl", "n"),
    ("Hund", "dog", "m"),
    ("Arbeiter", "worker", "m"),
    ("Musikerin", "musician", "f"),
]
PLURAL_SUBJECTS = [
    ("Zwei Männer", "Two men"),
    ("Drei Kinder", "Three children"),
    ("Einige Leute", "Some people"),
    ("Zwei Frauen", "Two women"),
]
ADJECTIVES = [
    ("jung", "young"),
    ("alt", "old"),
    ("klein", "little"),
    ("glücklich", "happy"),
    ("müde", "tired"),
]
# action: (singular German, plural German, English singular, English plural)
ACTIONS = [
    ("läuft", "laufen", "is running", "are running"),
    ("sitzt", "sitzen", "is sitting", "are sitting"),
    ("steht", "stehen", "is standing", "are standing"),
    ("spielt", "spielen", "is playing", "are playing"),
    ("wartet", "warten", "is waiting", "are waiting"),
    ("lacht", "lachen", "is laughing", "are laughing"),
    ("tanzt", "tanzen", "is dancing", "are dancing"),
    ("schläft", "schlafen", "is sleeping", "are sleeping"),
]
PLACES = [
    ("auf der Straße", "on the street"),
    ("im Park", "in the park"),
    ("am Strand", "on the beach"),
    ("vor einem Gebäude", "in front of a building"),
    ("im Wasser", "in the water"),
    ("auf einer Bank", "on a bench"),
    ("im Schnee", "in the snow"),
    ("neben einem Auto", "next to a car"),
    ("auf einer Bühne", "on a stage"),
    ("im Gras", "in the grass"),
]
# clothing: (German dative with "in einem/einer", English)
CLOTHES = [
    ("einem {c}en Hemd", "a {c} shirt"),
    ("einer {c}en Jacke", "a {c} jacket"),
    ("einem {c}en Kleid", "a {c} dress"),
    ("einem {c}en Hut", "a {c} hat"),
]
COLOURS = [
    ("rot", "red"),
    ("blau", "blue"),
    ("grün", "green"),
    ("schwarz", "black"),
    ("weiß", "white"),
    ("gelb", "yellow"),
]

ARTICLES = {"m": "ein", "f": "eine", "n": "ein"}
ADJECTIVE_ENDINGS = {"m": "er", "f": "e", "n": "es"}  # after ein/eine (mixed declension)


def english_article(word: str) -> str:
    return "An" if word[0] in "aeiou" else "A"


def pair(rng: random.Random) -> tuple:
    if rng.random() < 0.25:
        german, english = rng.choice(PLURAL_SUBJECTS)
        plural = True
    else:
        noun_de, noun_en, gender = rng.choice(SUBJECTS)
        plural = False
        if rng.random() < 0.5:
            adjective_de, adjective_en = rng.choice(ADJECTIVES)
            adjective_de = adjective_de.rstrip("e") + ADJECTIVE_ENDINGS[gender]
            german = f"{ARTICLES[gender].capitalize()} {adjective_de} {noun_de}"
            english = f"{english_article(adjective_en)} {adjective_en} {noun_en}"
        else:
            german = f"{ARTICLES[gender].capitalize()} {noun_de}"
            english = f"{english_article(noun_en)} {noun_en}"
    if rng.random() < 0.4:
        clothes_de, clothes_en = rng.choice(CLOTHES)
        colour_de, colour_en = rng.choice(COLOURS)
        german += " in " + clothes_de.format(c=colour_de)
        english += " in " + clothes_en.format(c=colour_en)
    action_de_sg, action_de_pl, action_en_sg, action_en_pl = rng.choice(ACTIONS)
    place_de, place_en = rng.choice(PLACES)
    german += f" {action_de_pl if plural else action_de_sg} {place_de}."
    english += f" {action_en_pl if plural else action_en_sg} {place_en}."
    return german, english


def corpus() -> dict:
    """{split: [(german, english), ...]} with no pair in two splits."""
    rng = random.Random(SEED)
    seen, splits = set(), {}
    for split, count in COUNTS.items():
        pairs = []
        while len(pairs) < count:
            candidate = pair(rng)
            if candidate not in seen:
                seen.add(candidate)
                pairs.append(candidate)
        splits[split] = pairs
    return splits


def files() -> dict:
    """{file name: content}: `<split>.de` and `<split>.en`, line N of one pairs with line N of
    the other."""
    out = {}
    for split, pairs in corpus().items():
        out[f"{split}.de"] = "".join(f"{de}\n" for de, _ in pairs)
        out[f"{split}.en"] = "".join(f"{en}\n" for _, en in pairs)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify instead of writing")
    args = parser.parse_args()
    expected = files()
    if args.check:
        stale = [
            name
            for name, text in expected.items()
            if not (OUT_DIR / name).exists() or (OUT_DIR / name).read_text("utf-8") != text
        ]
        if stale:
            print(f"{OUT_DIR} differs from the generator: {stale}", file=sys.stderr)
            return 1
        return 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for name, text in expected.items():
        (OUT_DIR / name).write_text(text, "utf-8")
    print(f"wrote {len(expected)} files to {OUT_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
