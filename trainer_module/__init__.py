"""What runs inside the Transform and Trainer components: preprocessing, models, training, serving."""
