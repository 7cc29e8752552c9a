"""The services tier (`make services`, then `make test-services`): the registry on an MLflow
tracking server backed by PostgreSQL, pipelines started together against it, and ML Metadata on
MariaDB. Without the servers these tests skip with the command that starts them, unless
REQUIRE_SERVICES=1 (CI), which turns the skip into a failure. Each test gets a database of its
own on the shared server."""

import os
import re
import socket
import uuid

import pytest

POSTGRES_URI = os.environ.get("TFXT_POSTGRES_URI", "postgresql://tfxt@127.0.0.1:55432/mlflow")
MYSQL_URI = os.environ.get("TFXT_MYSQL_URI", "mysql://tfxt@127.0.0.1:53306/mlmd")
SERVER = re.compile(r"^\w+://[^@/]+@(?P<host>[^:/]+):(?P<port>\d+)/")


def require(uri: str, what: str) -> re.Match:
    """The parts of `uri`, once its server accepts a connection; else skip (or fail)."""
    parts = SERVER.match(uri)
    try:
        with socket.create_connection((parts["host"], int(parts["port"])), timeout=3):
            return parts
    except OSError as error:
        message = (
            f"{what} is not running at {parts['host']}:{parts['port']} ({error}): "
            "`make services` starts it"
        )
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail(message)
        pytest.skip(message)


def fresh_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def postgres_database():
    """A new, empty PostgreSQL database on the services' server; its SQLAlchemy URI."""
    require(POSTGRES_URI, "PostgreSQL")
    import psycopg2

    name = fresh_name("mlflow")
    admin = POSTGRES_URI.rsplit("/", 1)[0] + "/postgres"
    connection = psycopg2.connect(admin)
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    connection.close()
    return POSTGRES_URI.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture
def mysql_database():
    """A mysql:// URI naming a new database on the services' MariaDB (ML Metadata creates it)."""
    require(MYSQL_URI, "MariaDB")
    return MYSQL_URI.rsplit("/", 1)[0] + "/" + fresh_name("mlmd")
