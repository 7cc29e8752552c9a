"""Beam's DirectRunner for runs on this machine, less its first try on the Prism runner."""

from apache_beam.runners.direct import direct_runner


class DirectRunner(direct_runner.SwitchingDirectRunner):
    """The runner `--runner=DirectRunner` picks (the FnApiRunner, in memory or on worker
    processes), without the Prism attempt Beam's DirectRunner makes first. Prism is a Go binary
    fetched from GitHub: offline the fetch fails, and with a stub location it fails after
    starting a worker pool (0.2-0.9 s for each of the four Beam pipelines of a small run); the
    fallback is this same runner. The DirectRunner skips Prism for interactive pipelines, and
    that is the only use it makes of the flag."""

    def run_pipeline(self, pipeline, options):
        self.is_interactive()
        return super().run_pipeline(pipeline, options)
