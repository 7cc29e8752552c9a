"""ExampleGen for translation: parallel text files (Multi30k) or tab-separated pairs (Anki)."""

from components.parallel_corpus_example_gen.component import ParallelCorpusExampleGen
from components.parallel_corpus_example_gen.layout import CorpusDataError

__all__ = ["CorpusDataError", "ParallelCorpusExampleGen"]
