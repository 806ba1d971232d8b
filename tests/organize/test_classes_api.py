"""Hierarchy upload through the API (load_hierarchy's validation, every bad entry named; no silent rewrite of
a concept a dataset uses) and the dataset's class selection."""

from __future__ import annotations

import json

import pytest

from annotation.models import AuditEntry
from hierarchy.models import Concept, Hierarchy
from tests import factories

pytestmark = pytest.mark.django_db

VOC20 = json.loads(open("fixtures/hierarchies/voc20.json").read())


def upload(client, data):
    return client.post("/api/v1/hierarchy-uploads", data, format="json")


def test_uploading_voc20_loads_it_and_a_second_upload_is_a_no_op(api_client, organizer):
    client = api_client(organizer)
    first = upload(client, VOC20)
    assert first.status_code == 201, first.data
    assert first.data["leaves"] == 20 and first.data["created"] is True
    again = upload(client, VOC20)
    assert again.status_code == 200 and again.data["created"] is False
    assert Hierarchy.objects.count() == 1


def test_every_bad_entry_is_named_and_nothing_is_stored(api_client, organizer):
    data = json.loads(json.dumps(VOC20))
    data["nodes"][0]["id"] = "dog!"
    data["nodes"][3]["parents"] = ["q:nowhere"]
    data["nodes"].append(dict(data["nodes"][5]))  # a duplicate id
    response = upload(api_client(organizer), data)
    assert response.status_code == 400
    errors = response.data["errors"]
    assert len(errors) >= 3
    text = " ".join(errors)
    assert "'dog!'" in text and "q:nowhere" in text and "duplicate id" in text
    assert not Hierarchy.objects.exists() and not Concept.objects.exists()


def test_a_gloss_or_parent_conflicting_with_a_used_concept_is_refused_naming_both(
    api_client, organizer, dataset
):
    client = api_client(organizer)
    assert upload(client, VOC20).status_code == 201
    cat = next(n for n in VOC20["nodes"] if n["name"] == "cat")
    other = factories.DatasetFactory(name="pets")
    other.concepts.add(Concept.objects.get(wnid=cat["id"]))
    changed = json.loads(json.dumps(VOC20))
    changed["version"] = "2"
    node = next(n for n in changed["nodes"] if n["id"] == cat["id"])
    node["gloss"] = "a small robot"
    changed["nodes"].insert(
        0,
        {
            "id": "n00015388",
            "name": "animal",
            "gloss": "a living organism",
            "leaf": False,
            "parents": [],
            "question": "Is there an animal in this image?",
        },
    )
    node["parents"] = [*node["parents"], "n00015388"]  # a new is-a parent of a used concept
    response = upload(client, changed)
    assert response.status_code == 409, response.data
    errors = response.data["errors"]
    assert len(errors) == 2
    assert "'a small robot'" in errors[0] and repr(cat["gloss"]) in errors[0]
    assert "n00015388" in errors[1] and "(none)" in errors[1]
    # Another organizer's dataset is "other datasets", never named.
    assert all("used by other datasets" in e and "pets" not in e for e in errors)
    assert Hierarchy.objects.count() == 1
    assert Concept.objects.get(wnid=cat["id"]).gloss == cat["gloss"]


def test_renaming_a_used_concept_is_refused_naming_only_the_uploaders_own_datasets(
    api_client, organizer, dataset
):
    """Before, a changed name passed: another organizer's upload renamed this dataset's class."""
    client = api_client(organizer)
    assert upload(client, VOC20).status_code == 201
    cat = next(n for n in VOC20["nodes"] if n["name"] == "cat")
    dataset.concepts.add(Concept.objects.get(wnid=cat["id"]))
    factories.DatasetFactory(name="B-main").concepts.add(Concept.objects.get(wnid=cat["id"]))
    changed = json.loads(json.dumps(VOC20))
    changed["version"] = "2"
    next(n for n in changed["nodes"] if n["id"] == cat["id"])["name"] = '=HYPERLINK("https://evil.example")'
    response = upload(client, changed)
    assert response.status_code == 409, response.data
    [error] = response.data["errors"]
    assert "name '=HYPERLINK" in error and "'cat'" in error
    assert (
        f"used by your dataset(s) {dataset.name} and used by other datasets" in error
        and "B-main" not in error
    )
    assert Concept.objects.get(wnid=cat["id"]).name == "cat" and Hierarchy.objects.count() == 1
    unused = json.loads(json.dumps(changed))
    unused["nodes"] = [n if n["id"] != cat["id"] else {**n, "name": "cat"} for n in unused["nodes"]]
    assert upload(client, unused).status_code == 201  # the same file keeping the stored name loads


def test_load_hierarchy_on_the_command_line_refuses_the_same_rewrite_of_a_concept_in_use(
    api_client, organizer, tmp_path
):
    """The upload and `load_hierarchy` share one rule (hierarchy.services): a concept another dataset holds
    tasks about keeps its gloss, the refusal names both glosses and the dataset, and nothing is stored."""
    from django.core.management import CommandError, call_command

    assert upload(api_client(organizer), VOC20).status_code == 201
    cat = next(n for n in VOC20["nodes"] if n["name"] == "cat")
    factories.TaskFactory(
        image=factories.ImageFactory(dataset=factories.DatasetFactory(name="shelter")),
        concept=Concept.objects.get(wnid=cat["id"]),
    )
    changed = json.loads(json.dumps(VOC20))
    changed["version"] = "2"
    next(n for n in changed["nodes"] if n["id"] == cat["id"])["gloss"] = "a small robot"
    path = tmp_path / "voc20-v2.json"
    path.write_text(json.dumps(changed))
    with pytest.raises(CommandError) as refused:
        call_command("load_hierarchy", str(path))
    text = str(refused.value)
    assert "nothing stored" in text and "'a small robot'" in text and repr(cat["gloss"]) in text
    assert "shelter" in text
    assert Hierarchy.objects.count() == 1
    assert Concept.objects.get(wnid=cat["id"]).gloss == cat["gloss"]
    changed["nodes"] = [n if n["id"] != cat["id"] else {**n, "gloss": cat["gloss"]} for n in changed["nodes"]]
    path.write_text(json.dumps(changed))
    call_command("load_hierarchy", str(path))  # the same file without the rewrite loads
    assert Hierarchy.objects.count() == 2


def test_the_dataset_picks_its_classes_among_a_hierarchys_leaves(api_client, organizer, dataset):
    client = api_client(organizer)
    hierarchy = upload(client, VOC20).data["hierarchy"]
    listed = client.get(f"/api/v1/datasets/{dataset.pk}/concepts?hierarchy={hierarchy}").data
    assert len(listed["choices"]) == 20 and listed["selected"] == []
    picked = [c["wnid"] for c in listed["choices"][:3]]
    response = client.put(f"/api/v1/datasets/{dataset.pk}/concepts", {"concepts": picked}, format="json")
    assert response.status_code == 200
    assert sorted(dataset.concepts.values_list("wnid", flat=True)) == sorted(picked)
    assert AuditEntry.objects.get().action == "concepts.set"
    bad = client.put(f"/api/v1/datasets/{dataset.pk}/concepts", {"concepts": ["n99999999"]}, format="json")
    assert bad.status_code == 400 and "n99999999" in str(bad.data)


def test_workers_cannot_upload_hierarchies_or_pick_classes(api_client, worker, dataset):
    client = api_client(worker)
    assert upload(client, VOC20).status_code == 403
    assert client.get(f"/api/v1/datasets/{dataset.pk}/concepts").status_code == 403
