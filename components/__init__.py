"""Custom TFX components: dataset ExampleGens, the anomalies gate, the versioned pusher."""

from trainer_module import quiet_shutdown

quiet_shutdown.install()
