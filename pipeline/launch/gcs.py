"""Cloud Storage on loopback, spoken to through GCS's own API by every client a job's steps use:
TensorFlow's gs:// file system (every TFX artifact), Beam's gcsio (the ExampleGens', TFDV's,
tf.Transform's and TFMA's reads and writes), google-cloud-storage (MLflow's GCS artifact
store, the Pusher's create-if-absent, Kubeflow's launcher as launch plays it).

The store is fake-gcs-server (github.com/fsouza/fake-gcs-server, a Go module: `make
gcs-emulator` builds it), its objects in a folder. In front of it, a gateway of this module's:

- **TensorFlow's file system cannot be pointed at an endpoint.** TF 2.16's GCS client has
  `https://www.googleapis.com/storage/v1/` and `https://storage.googleapis.com/` built in (no
  variable moves them), so its requests reach the gateway as an HTTPS proxy (`https_proxy`,
  which its libcurl honours): the gateway answers CONNECT for Google's storage and token hosts
  only, with a certificate of its own CA (`CURL_CA_BUNDLE`), and passes each request on to the
  emulator. Every other host is refused, as these machines' network would.
- **Python's clients are pointed at it** (`STORAGE_EMULATOR_HOST`), plainly.
- **Credentials:** an `authorized_user` file (`GOOGLE_APPLICATION_CREDENTIALS`) whose refresh
  the gateway answers for Google's token hosts (`oauth2.googleapis.com/token`, TF's
  `www.googleapis.com/oauth2/v3/token`), so every client takes the path it takes on a cluster
  with credentials, over HTTPS, with no metadata server. The clients trust the gateway's CA
  beside the usual ones (a bundle of both: `CURL_CA_BUNDLE`, `REQUESTS_CA_BUNDLE`).
- **Where the emulator differs from Cloud Storage**, the gateway makes the request into one it
  reads as GCS would: an empty POST's `Transfer-Encoding: identity` (which TF's libcurl sends
  and Go's HTTP server refuses, 501) is dropped, a resumable upload's `Location` keeps the
  scheme the client spoke, and each part of a batch request (Beam's deletes and copies) gets
  the `Content-ID` fake-gcs-server needs to answer it.

The emulator keeps its objects in memory: its file-system store drops the zero-byte `dir/`
objects TensorFlow writes for every folder (so that a folder's listing fails where Cloud
Storage's succeeds, and the markers that break Kubeflow's launcher never appear), which Cloud
Storage keeps. `GcsEmulator(folder).start()` runs both, loading the objects a previous one
saved under `folder/objects` (one file each, named by its percent-encoded name), and `close()`
saves them there; `environment()` is what a process needs to use it; `attach(folder)` finds
one already running over the same folder (a test's, shared with a tracking server).
"""

import contextlib
import datetime
import hashlib
import http.client
import http.server
import json
import os
import shutil
import socket
import socketserver
import ssl
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from typing import Dict, Iterator, List, Optional, Tuple

# fake-gcs-server's release `make gcs-emulator` builds, and where it puts it.
EMULATOR_MODULE = "github.com/fsouza/fake-gcs-server"
EMULATOR_VERSION = "v1.56.1"
TOOLS_BIN = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(__file__))), ".tools", "bin"
)
# The hosts Google's clients call, which the gateway answers for.
STORAGE_HOSTS = ("www.googleapis.com", "storage.googleapis.com", "oauth2.googleapis.com")
TOKEN_PATHS = ("/token", "/oauth2/v3/token", "/oauth2/v4/token")
PROJECT = "emulated-project"
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
}


def emulator_binary() -> str:
    """fake-gcs-server: FAKE_GCS_SERVER, else `make gcs-emulator`'s build, else on PATH."""
    for candidate in (
        os.environ.get("FAKE_GCS_SERVER", ""),
        os.path.join(TOOLS_BIN, "fake-gcs-server"),
        shutil.which("fake-gcs-server") or "",
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(
        "no fake-gcs-server, the GCS emulator: build it with `make gcs-emulator` (Go's module "
        f"proxy, {EMULATOR_MODULE}@{EMULATOR_VERSION}) or set FAKE_GCS_SERVER"
    )


def die_with_parent() -> None:
    """In a child before it runs: ended (SIGTERM) when the process that started it ends, even
    by SIGKILL (Linux's PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, 15)


def free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The certificates the gateway presents for Google's hosts.


def write_certificates(folder: str) -> Tuple[str, str, str]:
    """A CA, and a server certificate for STORAGE_HOSTS (and loopback) signed by it, written
    to `folder`; (CA, certificate, key) paths."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    os.makedirs(folder, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tfx-transformers GCS emulator")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: List[x509.GeneralName] = [x509.DNSName(host) for host in STORAGE_HOSTS]
    names += [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, STORAGE_HOSTS[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = tuple(os.path.join(folder, n) for n in ("ca.pem", "server.pem", "server-key.pem"))
    with open(paths[0], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths[1], "wb") as f:
        f.write(certificate.public_bytes(serialization.Encoding.PEM))
    with open(paths[2], "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return paths  # type: ignore[return-value]


def write_bundle(ca: str, path: str) -> None:
    """The gateway's CA and the usual public ones (certifi's) in one bundle at `path`."""
    import certifi

    with open(path, "wb") as out:
        for source in (ca, certifi.where()):
            with open(source, "rb") as f:
                out.write(f.read().rstrip(b"\n") + b"\n")


# The gateway.


def with_content_ids(body: bytes, content_type: str) -> bytes:
    """A batch request's multipart body with a `Content-ID` in every part that has none."""
    boundary = ""
    for parameter in content_type.split(";")[1:]:
        name, _, value = parameter.strip().partition("=")
        if name.lower() == "boundary":
            boundary = value.strip('"')
    if not boundary:
        return body
    delimiter = b"--" + boundary.encode()
    pieces = body.split(delimiter)
    for at in range(1, len(pieces)):
        piece = pieces[at]
        if piece.startswith(b"--"):
            break  # the closing delimiter
        newline = b"\r\n" if b"\r\n" in piece[:4] else b"\n"
        head, separator, rest = piece.lstrip(b"\r\n").partition(newline + newline)
        if b"content-id:" not in head.lower():
            head += newline + f"Content-ID: <part-{at}>".encode()
            pieces[at] = newline + head + separator + rest
    return delimiter.join(pieces)


class _Forward(http.server.BaseHTTPRequestHandler):
    """One client connection's requests, passed on to the emulator (the module's docstring).
    `scheme` is what the client speaks: "https" inside a CONNECT tunnel, else "http"."""

    protocol_version = "HTTP/1.1"
    scheme = "http"
    gateway: "GcsGateway"

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass

    def do_CONNECT(self) -> None:
        host = self.path.split(":")[0].lower()
        if self.scheme != "http" or host not in STORAGE_HOSTS:
            self.send_error(403, f"the GCS emulator's gateway answers for {STORAGE_HOSTS} only")
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        tls = self.gateway.tls.wrap_socket(self.connection, server_side=True)
        tunnel = type("_Tunnelled", (_Forward,), {"scheme": "https", "gateway": self.gateway})
        tunnel(tls, self.client_address, self.server)
        self.close_connection = True

    def body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def forward(self) -> None:
        data = self.body()
        if self.command == "POST" and self.path.split("?")[0] in TOKEN_PATHS:
            self.answer(200, [("Content-Type", "application/json")], self.gateway.token())
            return
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"
        }
        if self.path.startswith("/batch/storage/v1"):
            data = with_content_ids(data, self.headers.get("Content-Type", ""))
        sends_body = data or self.command in ("POST", "PUT", "PATCH")
        connection = http.client.HTTPConnection("127.0.0.1", self.gateway.emulator_port)
        try:
            connection.request(
                self.command, self.path, body=data if sends_body else None, headers=headers
            )
            response = connection.getresponse()
            payload = response.read()
            returned = response.getheaders()
        except OSError as error:  # the emulator is not (or no longer) there
            self.answer(503, [("Content-Type", "text/plain")], f"emulator: {error}".encode())
            return
        finally:
            connection.close()
        listed = []
        for name, value in returned:
            lower = name.lower()
            if lower in HOP_BY_HOP or (lower == "content-length" and self.command != "HEAD"):
                continue
            if lower == "location" and self.scheme == "https":
                value = value.replace("http://", "https://", 1)
            listed.append((name, value))
        self.answer(response.status, listed, payload, response.reason)

    def setup(self) -> None:
        super().setup()
        # A response's head and body leave in one write, without Nagle's wait on each.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def answer(self, status: int, headers, payload: bytes, reason: str = "") -> None:
        """The response in one write (its head and its body, but for HEAD)."""
        reason = reason or self.responses.get(status, ("",))[0]
        lines = [f"{self.protocol_version} {status} {reason}"]
        lines += [f"{name}: {value}" for name, value in headers]
        if self.command != "HEAD":
            lines.append(f"Content-Length: {len(payload)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head + (payload if self.command != "HEAD" else b""))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = forward


class GcsGateway(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """The gateway on `port` of loopback, in front of the emulator's `emulator_port`. It runs
    in a process of its own (`python -m pipeline.launch.gcs`): TensorFlow holds Python's GIL
    through some of its file operations (a SavedModel's save), which a gateway in the same
    process would then never answer."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, emulator_port: int, certificate: str, key: str):
        handler = type("_Handler", (_Forward,), {"gateway": self})
        super().__init__(("127.0.0.1", port), handler)
        self.emulator_port = emulator_port
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(certificate, key)

    @staticmethod
    def token() -> bytes:
        return json.dumps(
            {"access_token": "emulated", "expires_in": 3600, "token_type": "Bearer"}
        ).encode()


class GcsEmulator:
    """fake-gcs-server and the gateway, over `folder` (the objects saved under
    `folder/objects`, the certificates and credentials under `folder/client`): `start()`,
    `close()`."""

    def __init__(self, folder: str):
        self.folder = os.path.abspath(folder)
        self.client_folder = os.path.join(self.folder, "client")
        self.state_file = os.path.join(self.folder, "emulator.json")
        self.process: Optional[subprocess.Popen] = None
        self.gateway: Optional[subprocess.Popen] = None
        self.port = 0

    @classmethod
    def attach(cls, folder: str) -> Optional["GcsEmulator"]:
        """The emulator already serving `folder` (started by another process), or None."""
        emulator = cls(folder)
        try:
            with open(emulator.state_file) as f:
                emulator.port = json.load(f)["port"]
            with urllib.request.urlopen(f"{emulator.url}/storage/v1/b", timeout=5):
                return emulator
        except (OSError, ValueError, KeyError):
            return None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> "GcsEmulator":
        os.makedirs(os.path.join(self.folder, "objects"), exist_ok=True)
        ca, certificate, key = write_certificates(self.client_folder)
        write_bundle(ca, os.path.join(self.client_folder, "ca-bundle.pem"))
        emulator_port, self.port = free_loopback_port(), free_loopback_port()
        self.write_credentials()
        log = open(os.path.join(self.folder, "emulator.log"), "ab")
        self.process = subprocess.Popen(
            [
                emulator_binary(),
                "-scheme",
                "http",
                "-host",
                "127.0.0.1",
                "-port",
                str(emulator_port),
                "-backend",
                "memory",
                "-public-host",
                "storage.googleapis.com",
                "-log-level",
                "warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        log.close()
        with open(os.path.join(self.folder, "gateway.log"), "ab") as gateway_log:
            self.gateway = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pipeline.launch.gcs",
                    "gateway",
                    str(self.port),
                    str(emulator_port),
                    certificate,
                    key,
                ],
                stdout=gateway_log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        deadline = time.monotonic() + timeout
        while True:
            for process, part in ((self.process, "emulator"), (self.gateway, "gateway")):
                if process.poll() is not None:
                    self.close(save=False)
                    raise RuntimeError(f"the GCS {part} exited: see {self.folder}/{part}.log")
            try:
                with urllib.request.urlopen(f"{self.url}/storage/v1/b", timeout=5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    self.close(save=False)
                    raise RuntimeError(f"fake-gcs-server did not answer in {timeout} s") from None
                time.sleep(0.2)
        self.load()
        with open(self.state_file, "w") as f:
            json.dump({"port": self.port, "pid": os.getpid()}, f)
        return self

    def load(self) -> None:
        """The objects saved under `folder/objects`, back in their buckets."""
        root = os.path.join(self.folder, "objects")
        index = os.path.join(root, "index.json")
        if not os.path.exists(index):
            return
        with open(index) as f:
            saved = json.load(f)
        client = self.client()
        for bucket_name, objects in sorted(saved.items()):
            self.make_bucket(bucket_name)
            bucket = client.bucket(bucket_name)
            for name, file_name in sorted(objects.items()):
                bucket.blob(name).upload_from_filename(os.path.join(root, file_name))

    def save(self) -> None:
        """Every object, one file each under `folder/objects/` (named by a digest of its
        bucket and name; `index.json` maps them back), replacing what was saved."""
        root = os.path.join(self.folder, "objects")
        saving = root + ".saving"
        shutil.rmtree(saving, ignore_errors=True)
        os.makedirs(saving)
        client = self.client()
        index: Dict[str, Dict[str, str]] = {}
        for bucket in client.list_buckets():
            objects = index.setdefault(bucket.name, {})
            for blob in client.list_blobs(bucket.name):
                file_name = hashlib.sha256(f"{bucket.name}/{blob.name}".encode()).hexdigest()
                blob.download_to_filename(os.path.join(saving, file_name))
                objects[blob.name] = file_name
        with open(os.path.join(saving, "index.json"), "w") as f:
            json.dump(index, f, indent=1, sort_keys=True)
        shutil.rmtree(root, ignore_errors=True)
        os.replace(saving, root)

    def write_credentials(self) -> None:
        """An `authorized_user` credentials file whose refresh the gateway answers."""
        with open(os.path.join(self.client_folder, "credentials.json"), "w") as f:
            json.dump(
                {
                    "type": "authorized_user",
                    "client_id": "emulated.apps.googleusercontent.com",
                    "client_secret": "emulated",
                    "refresh_token": "emulated",
                    "token_uri": "https://oauth2.googleapis.com/token",
                },
                f,
            )

    def environment(self) -> Dict[str, str]:
        """What a process needs to reach the emulator as Cloud Storage, through every client."""
        bundle = os.path.join(self.client_folder, "ca-bundle.pem")
        return {
            "STORAGE_EMULATOR_HOST": self.url,
            "https_proxy": self.url,
            "HTTPS_PROXY": self.url,
            "no_proxy": "localhost,127.0.0.1",
            "NO_PROXY": "localhost,127.0.0.1",
            "CURL_CA_BUNDLE": bundle,
            "REQUESTS_CA_BUNDLE": bundle,
            "GOOGLE_APPLICATION_CREDENTIALS": os.path.join(self.client_folder, "credentials.json"),
            "GOOGLE_CLOUD_PROJECT": PROJECT,
            "NO_GCE_CHECK": "true",
        }

    def close(self, save: bool = True) -> None:
        """Saves the objects (`save`), then stops the emulator and the gateway."""
        try:
            if save and self.process is not None and self.process.poll() is None:
                self.save()
        finally:
            self.stop()

    def stop(self) -> None:
        for process in (self.gateway, self.process):
            if process is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, 15)
                process.wait(timeout=30)
        self.gateway = self.process = None
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.state_file)

    # What a test or a launch does with it, as `gcloud storage` would.

    def client(self):
        """A google-cloud-storage client of the emulator."""
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(
            project=PROJECT,
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": self.url},
        )

    def make_bucket(self, name: str) -> None:
        client = self.client()
        if client.lookup_bucket(name) is None:
            client.create_bucket(name)

    def upload_tree(self, local: str, uri: str) -> int:
        """Copies the files under `local` to `uri` (gs://BUCKET/PATH), as `gcloud storage cp
        -r` would, skipping those already there with the same size; how many it copied."""
        bucket_name, _, prefix = uri[len("gs://") :].partition("/")
        self.make_bucket(bucket_name)
        bucket = self.client().bucket(bucket_name)
        present = {b.name: b.size for b in bucket.list_blobs(prefix=prefix)}
        copied = 0
        for path in walk_files(local):
            name = "/".join(p for p in (prefix.rstrip("/"), os.path.relpath(path, local)) if p)
            if present.get(name) != os.path.getsize(path):
                bucket.blob(name).upload_from_filename(path)
                copied += 1
        return copied


def walk_files(folder: str) -> Iterator[str]:
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            yield os.path.join(root, name)


def install() -> str:
    """Builds fake-gcs-server at EMULATOR_VERSION into TOOLS_BIN with `go install` (Go's module
    proxy), unless it is there; its path."""
    target = os.path.join(TOOLS_BIN, "fake-gcs-server")
    if not os.access(target, os.X_OK):
        if not shutil.which("go"):
            raise SystemExit("building the GCS emulator needs Go (https://go.dev/dl/)")
        subprocess.run(
            ["go", "install", f"{EMULATOR_MODULE}@{EMULATOR_VERSION}"],
            env={**os.environ, "GOBIN": TOOLS_BIN},
            check=True,
        )
    print(f"{target} ({EMULATOR_MODULE}@{EMULATOR_VERSION})")
    return target


def main(argv: List[str]) -> None:
    """`install` (make gcs-emulator), or the gateway's process: `gateway PORT EMULATOR_PORT
    CERTIFICATE KEY`."""
    if argv[:1] == ["install"]:
        install()
        return
    port, emulator_port, certificate, key = argv[1:]
    GcsGateway(int(port), int(emulator_port), certificate, key).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
