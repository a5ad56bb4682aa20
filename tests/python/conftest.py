"""Shared fixtures: a real `cellar serve` process on ephemeral loopback ports.

`cellar_server` (module scope) starts one server for a test module; `start_cellar_server`
starts one with extra flags (e.g. small limits). Both stop the server with SIGTERM, then
SIGKILL if it has not exited within a bound (`cellar_proc.CellarServer`).
"""

import pathlib
import tempfile

import pytest

from cellar_proc import CellarServer


@pytest.fixture(scope="module")
def cellar_server():
    with tempfile.TemporaryDirectory(prefix="cellar-test-") as d:
        with CellarServer(pathlib.Path(d) / "db") as server:
            yield server


@pytest.fixture
def start_cellar_server():
    """Starts servers with extra flags: `start_cellar_server("--max-scanners", "2")`."""
    started = []
    dirs = []

    def start(*extra_args):
        d = tempfile.TemporaryDirectory(prefix="cellar-test-")
        dirs.append(d)
        server = CellarServer(pathlib.Path(d.name) / "db", extra_args).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for s in started:
            try:
                s.stop()
            finally:
                s.kill()
        for d in dirs:
            d.cleanup()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "filter_language: scans with HBase filter strings (filterString)")
