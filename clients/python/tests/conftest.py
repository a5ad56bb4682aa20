"""Fixtures of the client's tests: `server` (a real `cellar serve`), `conn`, `table`."""

from cellar_testserver import conn, server, table

__all__ = ["conn", "server", "table"]
