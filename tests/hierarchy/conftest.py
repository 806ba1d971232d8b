"""Fixtures for the hierarchy app's database tests: a tiny diamond hierarchy loaded through the service."""

from __future__ import annotations

import pytest

from hierarchy.fixture import parse_fixture
from hierarchy.graph import graph_cache_clear
from hierarchy.services import hierarchy_load


@pytest.fixture(autouse=True)
def _fresh_process_caches():
    # Database ids are reused between tests: start every test as a fresh process would.
    graph_cache_clear()
    yield
    graph_cache_clear()


def node(node_id, parents=(), leaf=False, name=None):
    name = name or node_id.split(":")[-1]
    return {
        "id": node_id,
        "name": name,
        "gloss": f"gloss of {name}",
        "question": f"Is there ANY {name} in this image?",
        "parents": list(parents),
        "leaf": leaf,
    }


def tiny_data(version: str = "1") -> dict:
    """animal -> {dog, cat}; vehicle -> {car}; pet (animal AND a second parent of dog) makes a diamond; person."""
    return {
        "format": "crowdlabel-hierarchy/1",
        "name": "tiny",
        "version": version,
        "description": "test hierarchy",
        "nodes": [
            node("q:animal"),
            node("q:vehicle"),
            node("q:pet", ["q:animal"]),
            node("n02084071", ["q:animal", "q:pet"], leaf=True, name="dog"),
            node("n02121808", ["q:pet"], leaf=True, name="cat"),
            node("n02958343", ["q:vehicle"], leaf=True, name="car"),
            node("n00007846", [], leaf=True, name="person"),
        ],
    }


@pytest.fixture
def tiny_hierarchy(db):
    return hierarchy_load(parse_fixture(tiny_data())).hierarchy
