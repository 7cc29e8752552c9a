"""Stops the pipeline when ExampleValidator found anomalies."""

from components.anomalies_gate.component import AnomaliesGate, describe_anomalies

__all__ = ["AnomaliesGate", "describe_anomalies"]
