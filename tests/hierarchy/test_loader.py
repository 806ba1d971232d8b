"""load_hierarchy: both shipped fixtures load; broken files are refused naming the offending entries, and a
refused file stores nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from hierarchy.fixture import parse_fixture
from hierarchy.graph import graph_for
from hierarchy.models import Concept, ConceptEdge, Hierarchy, QuestionNode
from hierarchy.services import HierarchyConflict, hierarchy_load

from .conftest import node, tiny_data

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "hierarchies"


def load(tmp_path, data) -> str:
    path = tmp_path / "h.json"
    path.write_text(json.dumps(data))
    out = []
    call_command("load_hierarchy", str(path), stdout=type("W", (), {"write": lambda s, x: out.append(x)})())
    return "".join(out)


@pytest.mark.django_db
@pytest.mark.parametrize("name,nodes,leaves", [("voc20", 28, 20), ("ilsvrc_det200", 256, 200)])
def test_shipped_fixture_loads_with_every_node_a_concept_and_the_same_dag(name, nodes, leaves):
    call_command("load_hierarchy", str(FIXTURES / f"{name}.json"), stdout=open("/dev/null", "w"))
    hierarchy = Hierarchy.objects.get()
    assert hierarchy.nodes.count() == nodes
    assert hierarchy.nodes.filter(leaf=True).count() == leaves
    assert not hierarchy.nodes.filter(concept__isnull=True).exists()
    graph = graph_for(hierarchy.pk)
    assert graph.dag.fingerprint == hierarchy.fingerprint
    assert len(graph.leaf_of_concept) == leaves


@pytest.mark.django_db
def test_loading_the_same_file_twice_is_a_no_op_and_a_changed_dag_needs_a_new_version(tmp_path):
    assert "loaded: hierarchy" in load(tmp_path, tiny_data())
    assert "already loaded" in load(tmp_path, tiny_data())
    assert Hierarchy.objects.count() == 1
    changed = tiny_data()
    changed["nodes"][5]["parents"] = ["q:vehicle", "q:animal"]  # car also under animal
    with pytest.raises(HierarchyConflict, match="bump the version"):
        hierarchy_load(parse_fixture(changed))
    changed["version"] = "2"
    assert hierarchy_load(parse_fixture(changed)).created
    assert Hierarchy.objects.count() == 2


@pytest.mark.django_db
def test_synset_nodes_get_is_a_edges_and_question_ids_local_concepts(tiny_hierarchy):
    dog = QuestionNode.objects.get(hierarchy=tiny_hierarchy, node_id="n02084071")
    assert dog.concept.wnid == "n02084071" and dog.concept.name == "dog"
    assert set(dog.parents.values_list("node_id", flat=True)) == {"q:animal", "q:pet"}
    assert QuestionNode.objects.get(node_id="q:pet").concept.wnid == "q:pet"
    assert not ConceptEdge.objects.exists()  # dog's parents are question ids, not synsets


def broken(kind: str) -> dict:
    data = tiny_data()
    nodes = data["nodes"]
    if kind == "cycle":
        nodes[0]["parents"] = ["q:pet"]  # animal under pet under animal
    elif kind == "unknown parent":
        nodes[5]["parents"] = ["q:machine"]
    elif kind == "duplicate wnid":
        nodes.append(node("n02084071", ["q:vehicle"], leaf=True, name="dog again"))
    elif kind == "no path to a root":
        nodes.append(node("q:a", ["q:b"]))
        nodes.append(node("q:b", ["q:a"]))
        nodes.append(node("n01503061", ["q:a"], leaf=True, name="bird"))
    return data


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kind,named",
    [
        ("cycle", "cycle: "),
        ("unknown parent", "unknown parent 'q:machine'"),
        ("duplicate wnid", "'n02084071': duplicate id"),
        ("no path to a root", "leaf 'n01503061' (bird): no path to a root"),
    ],
)
def test_broken_file_is_refused_naming_the_entry_and_nothing_is_stored(tmp_path, kind, named):
    with pytest.raises(CommandError) as caught:
        load(tmp_path, broken(kind))
    assert named in str(caught.value)
    assert not Hierarchy.objects.exists()
    assert not QuestionNode.objects.exists()
    assert not Concept.objects.exists()


@pytest.mark.django_db
def test_a_failure_midway_rolls_back_every_row(monkeypatch):
    import hierarchy.services as services

    def explode(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(services.QuestionNode.objects, "bulk_create", explode)
    with pytest.raises(RuntimeError):
        hierarchy_load(parse_fixture(tiny_data()))
    assert not Concept.objects.exists() and not Hierarchy.objects.exists()


def test_unreadable_file_is_refused_with_the_reason(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{ not json")
    with pytest.raises(CommandError, match="cannot read JSON"):
        call_command("load_hierarchy", str(path))


@pytest.mark.django_db
def test_a_cached_graph_is_not_served_for_another_row_under_a_reused_id(tiny_hierarchy):
    """A restored or rebuilt database gives ids back, and the same file loaded again has the same fingerprint
    but other node and concept rows: the per-process graph must be the row's own."""
    from datetime import timedelta

    first = graph_for(tiny_hierarchy)
    leaf = next(n for n in first.nodes.values() if n.leaf)
    other = Concept.objects.create(wnid="n99999998", name="stand-in")
    QuestionNode.objects.filter(pk=leaf.pk).update(concept=other)
    Hierarchy.objects.filter(pk=tiny_hierarchy.pk).update(
        created_at=tiny_hierarchy.created_at + timedelta(days=1)
    )
    again = graph_for(Hierarchy.objects.get(pk=tiny_hierarchy.pk))
    assert again.nodes[leaf.node_id].concept_id == other.pk
