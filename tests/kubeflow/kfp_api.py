"""A stand-in Kubeflow Pipelines API server on loopback for `submit`'s tests: it answers the
v2beta1 calls the kfp SDK's Client makes to start a run (health, experiments, runs) as the API
server's REST gateway shapes them, records every request (its path, its Authorization header,
its body), and, like a multi-user cluster behind an auth proxy, refuses a request without the
expected bearer token (401)."""

import http.server
import json
import threading
from typing import List, Optional


class KfpApiServer:
    """`url` to give the kfp Client; `requests` as received; `token`: the bearer token a
    request must carry (None: any request is taken, as a single-user cluster's)."""

    def __init__(self, token: Optional[str] = None, multi_user: bool = False):
        self.token, self.multi_user = token, multi_user
        self.requests: List[dict] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format, *args):  # noqa: A002
                pass

            def respond(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else b""
                authorization = self.headers.get("Authorization", "")
                server.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "authorization": authorization,
                        "body": json.loads(body) if body else None,
                    }
                )
                if server.token is not None and authorization != f"Bearer {server.token}":
                    self.reply(401, {"error": "Jwt is missing", "code": 16})
                    return
                self.reply(200, server.answer(self.command, self.path.split("?")[0]))

            def reply(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = respond

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, method: str, path: str) -> dict:
        if path.endswith("/healthz"):
            return {"multi_user": self.multi_user}
        if path.endswith("/experiments") and method == "POST":
            return {"experiment_id": "experiment-1", "display_name": "Default"}
        if path.endswith("/experiments"):
            return {"experiments": [{"experiment_id": "experiment-1", "display_name": "Default"}]}
        if path.endswith("/runs") and method == "POST":
            return {"run_id": "run-1", "display_name": "submitted"}
        return {}

    def created_runs(self) -> List[dict]:
        return [r for r in self.requests if r["method"] == "POST" and r["path"].endswith("/runs")]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
