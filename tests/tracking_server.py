"""A real MLflow tracking server for tests, as a team runs it (docs/team.md): `mlflow
server` on a free port (of loopback, or of another address of this machine's), its backend
store a SQLite file or a PostgreSQL database, and artifacts proxied by the server
(--serve-artifacts) into a folder (or a bucket) clients never see."""

import os
import signal
import subprocess
import sys
import time
import urllib.request
from typing import Optional

from tests.ports import free_port


class TrackingServer:
    """`mlflow server` in its own process group; `url` is its tracking URI. `stop()` kills it
    (SIGKILL: no chance to finish a request), `start()` starts it again on the same port and
    stores."""

    def __init__(
        self,
        backend_store_uri: str,
        artifacts: str,
        workers: int = 2,
        host: str = "127.0.0.1",
        environment: Optional[dict] = None,
        log: Optional[str] = None,
    ):
        self.backend_store_uri, self.artifacts, self.workers = backend_store_uri, artifacts, workers
        self.host, self.environment = host, environment
        self.port = free_port()
        self.url = f"http://{host}:{self.port}"
        self.process: Optional[subprocess.Popen] = None
        self.log = log or artifacts + "-server.log"

    def start(self, timeout: float = 120) -> "TrackingServer":
        if "://" not in self.artifacts:  # a folder (else a store such as gs://)
            os.makedirs(self.artifacts, exist_ok=True)
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [
                    os.path.join(os.path.dirname(sys.executable), "mlflow"),
                    "server",
                    "--host",
                    self.host,
                    "--port",
                    str(self.port),
                    "--backend-store-uri",
                    self.backend_store_uri,
                    "--serve-artifacts",
                    "--artifacts-destination",
                    self.artifacts,
                    "--workers",
                    str(self.workers),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # gunicorn's workers go with it
                env=None if self.environment is None else {**os.environ, **self.environment},
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"mlflow server exited: {self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=5) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"mlflow server did not answer in {timeout} s: {self.tail()}")
            time.sleep(0.3)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None

    def tail(self) -> str:
        with open(self.log, errors="replace") as f:
            return f.read()[-3000:]
