"""Fixtures for the multilabel app's database tests: the hierarchy tests' tiny diamond hierarchy, and every test
starting with the process caches of a fresh process (graphs and fitted orders)."""

from __future__ import annotations

import pytest

from hierarchy.graph import graph_cache_clear
from multilabel.labeling import order_cache_clear
from tests.hierarchy.conftest import tiny_hierarchy  # noqa: F401  (a fixture, used by name)


@pytest.fixture(autouse=True)
def _fresh_process_caches():
    # Database ids are reused between tests: start every test as a fresh process would.
    graph_cache_clear()
    order_cache_clear()
    yield
    graph_cache_clear()
    order_cache_clear()
