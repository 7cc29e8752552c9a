"""What runs inside Transform, Trainer, Tuner and Evaluator: one package per model family
(text_encoder/, translator/, vit/, bert/), and what they share (layers/, preprocessing/,
training/, serving/). families.py lists the families by name."""
