"""RunReport: a static HTML page per run (model card, TFMA metrics and slices, training
curves, attention heatmaps, data statistics, lineage)."""

from components.run_report.component import RunReport, RunReportArtifact

__all__ = ["RunReport", "RunReportArtifact"]
