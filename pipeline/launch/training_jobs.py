"""Vertex AI custom training jobs for a launched task: the client side, in the task's process.

TFX's Google Cloud executors (tfx.extensions.google_cloud_ai_platform) build the CustomJob
themselves, each worker pool's container command included (`python -m
tfx.scripts.run_executor ...`), and hand it to Vertex AI's JobServiceClient. A launched task
runs those executors unchanged through this module:

    python -m pipeline.launch.training_jobs --service URL -m <the task's module> <its arguments>

which puts LocalJobServiceClient in JobServiceClient's place, then runs the task's module as
`python -m` would. The client does what Vertex AI's client does with the job before it leaves
the process: it builds the CreateCustomJobRequest proto from the executor's dict, so a
misspelt field or an accelerator Vertex AI does not have fails here, before any replica
starts. Then it sends the job to the launcher's job service (job_service.py, at URL on
loopback), which applies the service's own checks and runs each replica as Vertex AI would, in
a container of the image (`launch --image`) or a process here.
"""

import json
import runpy
import sys
import urllib.error
import urllib.request
from typing import List


class LocalJobServiceClient:
    """Stands in for google.cloud.aiplatform.gapic.JobServiceClient: create_custom_job sends
    the job to the launcher's service, which runs it to its end, so the executor's first poll
    finds it finished."""

    service = ""  # the job service's URL, set by main()

    def __init__(self, client_options=None, **_):
        self.endpoint = (client_options or {}).get("api_endpoint", "")

    def create_custom_job(self, parent: str, custom_job, **_):
        from google.api_core import exceptions
        from google.cloud.aiplatform_v1.types import CreateCustomJobRequest, CustomJob

        # As the gapic client builds its request: a dict becomes the proto, or fails.
        request = CreateCustomJobRequest(parent=parent, custom_job=custom_job)
        body = json.dumps(
            {
                "parent": request.parent,
                "custom_job": json.loads(
                    CustomJob.to_json(request.custom_job, use_integers_for_enums=False)
                ),
            }
        ).encode()
        post = urllib.request.Request(
            f"{self.service}/customJobs", body, {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(post, timeout=None) as response:
                answer = json.load(response)
        except urllib.error.HTTPError as error:
            message = json.loads(error.read() or b"{}").get("error", str(error))
            raise exceptions.InvalidArgument(message) from None
        return CustomJob.from_json(json.dumps(answer), ignore_unknown_fields=True)

    def get_custom_job(self, name: str, retry=None, **_):
        from google.cloud.aiplatform_v1.types import CustomJob

        with urllib.request.urlopen(f"{self.service}/customJobs/{name}") as response:
            return CustomJob.from_json(response.read(), ignore_unknown_fields=True)


def install(service: str) -> None:
    """Puts LocalJobServiceClient in Vertex AI's JobServiceClient's place, in this process."""
    from google.cloud.aiplatform import gapic

    LocalJobServiceClient.service = service.rstrip("/")
    gapic.JobServiceClient = LocalJobServiceClient  # type: ignore[misc, assignment]


def main(argv: List[str]) -> None:
    if len(argv) < 4 or argv[0] != "--service" or argv[2] != "-m":
        raise SystemExit(
            "usage: python -m pipeline.launch.training_jobs --service URL -m MODULE [ARGS...]"
        )
    install(argv[1])
    sys.argv = [argv[3], *argv[4:]]
    runpy.run_module(argv[3], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
