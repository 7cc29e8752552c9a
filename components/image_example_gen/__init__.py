"""ExampleGen for images: the CIFAR-10 binary release or `<split>/<class>/*.png|jpg` folders."""

from components.image_example_gen.component import ImageExampleGen
from components.image_example_gen.layout import ImageDataError

__all__ = ["ImageDataError", "ImageExampleGen"]
