"""The error every dataset ExampleGen raises for data it cannot read as it is."""


class DataError(ValueError):
    """Data that cannot be read as it is; the message names the file and the problem. Each
    ExampleGen's layout raises its own subclass (ReviewDataError, ImageDataError,
    CorpusDataError); catch this one for any of them."""
