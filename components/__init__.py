"""Custom TFX components: dataset ExampleGens, the anomalies gate, the versioned pusher."""
