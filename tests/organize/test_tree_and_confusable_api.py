"""The tree browser's endpoint (every node of a hierarchy with its parents, in three queries) and confusable
pairs edited by organizers: only between their dataset's classes, each change audited, a duplicate refused, and
each dataset's pairs and notes its own (another organizer's are neither shown, named nor touched)."""

from __future__ import annotations

import json

import pytest

from annotation.models import AuditEntry
from review.models import ConfusablePair
from tests import factories

pytestmark = pytest.mark.django_db

VOC20 = json.loads(open("fixtures/hierarchies/voc20.json").read())


def test_the_tree_lists_every_node_with_its_parents(api_client, organizer, django_assert_max_num_queries):
    client = api_client(organizer)
    hierarchy = client.post("/api/v1/hierarchy-uploads", VOC20, format="json").data["hierarchy"]
    with django_assert_max_num_queries(5):
        body = client.get(f"/api/v1/hierarchies/{hierarchy}/tree").json()
    nodes = {n["node"]: n for n in body["nodes"]}
    assert len(nodes) == len(VOC20["nodes"])
    for entry in VOC20["nodes"]:
        assert sorted(nodes[entry["id"]]["parents"]) == sorted(entry.get("parents", [])), entry["id"]
    assert sum(n["leaf"] for n in body["nodes"]) == 20
    assert api_client(organizer).get("/api/v1/hierarchies/999/tree").status_code == 404


@pytest.fixture
def classes(dataset):
    seal, otter, dog = (
        factories.ConceptFactory(wnid=w, name=n)
        for w, n in [("n02076196", "seal"), ("n02444819", "otter"), ("n02084071", "dog")]
    )
    dataset.concepts.set([seal, otter])
    return seal, otter, dog


def test_an_organizer_adds_and_removes_a_pair_of_their_classes(api_client, organizer, dataset, classes):
    client = api_client(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/confusable-pairs"
    r = client.post(url, {"a": "n02444819", "b": "n02076196", "note": "wet fur"}, format="json")
    assert r.status_code == 201, r.content
    pair = ConfusablePair.objects.get()
    assert pair.concept_a_id < pair.concept_b_id  # stored canonically whatever the order given
    assert [p["note"] for p in client.get(url).json()] == ["wet fur"]
    again = client.post(url, {"a": "n02076196", "b": "n02444819"}, format="json")
    assert again.status_code == 409 and "listed already" in again.json()["detail"]
    assert client.delete(f"{url}/{pair.pk}").status_code == 204
    assert not ConfusablePair.objects.exists()
    actions = list(AuditEntry.objects.filter(dataset=dataset).values_list("action", flat=True).order_by("id"))
    assert actions == ["confusable_pair.add", "confusable_pair.remove"]


def test_a_pair_needs_two_distinct_classes_of_the_dataset(api_client, organizer, dataset, classes):
    url = f"/api/v1/datasets/{dataset.pk}/confusable-pairs"
    client = api_client(organizer)
    outside = client.post(url, {"a": "n02076196", "b": "n02084071"}, format="json")
    assert outside.status_code == 400 and "n02084071" in outside.json()["concepts"]
    assert client.post(url, {"a": "n02076196", "b": "n02076196"}, format="json").status_code == 400
    assert not ConfusablePair.objects.exists() and not AuditEntry.objects.exists()


def test_each_dataset_keeps_its_own_pairs_and_notes(api_client, organizer, dataset, other_dataset, classes):
    """Before, pairs were shared: another organizer's note showed in this dataset's list, and removing the pair
    was refused naming the other organizer's dataset."""
    seal, otter, _ = classes
    other_dataset.concepts.set([seal, otter])
    theirs = ConfusablePair.objects.create(
        dataset=other_dataset, concept_a=seal, concept_b=otter, note="B's note"
    )
    client = api_client(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/confusable-pairs"
    assert client.get(url).json() == []
    assert client.delete(f"{url}/{theirs.pk}").status_code == 404
    mine = client.post(url, {"a": "n02076196", "b": "n02444819", "note": "A's note"}, format="json")
    assert mine.status_code == 201, mine.content  # the same classes, listed in this dataset too
    assert [p["note"] for p in client.get(url).json()] == ["A's note"]
    removed = client.delete(f"{url}/{mine.json()['id']}")
    assert removed.status_code == 204 and other_dataset.name.encode() not in removed.content
    assert ConfusablePair.objects.get(pk=theirs.pk).note == "B's note"


def test_pairs_outside_the_dataset_are_neither_listed_nor_removable(api_client, organizer, dataset, classes):
    seal, _, dog = classes
    pair = ConfusablePair.objects.create(dataset=factories.DatasetFactory(), concept_a=seal, concept_b=dog)
    client = api_client(organizer)
    assert client.get(f"/api/v1/datasets/{dataset.pk}/confusable-pairs").json() == []
    assert client.delete(f"/api/v1/datasets/{dataset.pk}/confusable-pairs/{pair.pk}").status_code == 404
