"""The Settings page's writes: consensus and gold settings changes are audited with what changed; a gold CSV
import through the API stores every row or, when any line is bad, nothing, naming each bad line."""

from __future__ import annotations

import pytest

from annotation.models import AuditEntry
from consensus.models import ConsensusSettings
from gold.models import GoldItem, GoldSettings
from tests import factories

pytestmark = pytest.mark.django_db


def test_consensus_and_gold_settings_changes_are_audited(api_client, organizer, dataset):
    client = api_client(organizer)
    r = client.patch(
        f"/api/v1/datasets/{dataset.pk}/consensus-settings",
        {"target_precision": 0.97, "vote_cap": 12, "estimator": "dynamic"},
        format="json",
    )
    assert r.status_code == 200, r.content
    stored = ConsensusSettings.objects.get(dataset=dataset)
    assert (stored.target_precision, stored.vote_cap, stored.estimator) == (0.97, 12, "dynamic")
    r = client.patch(f"/api/v1/datasets/{dataset.pk}/gold-settings", {"rate": 0.25}, format="json")
    assert r.status_code == 200 and GoldSettings.objects.get(dataset=dataset).rate == 0.25
    entries = {e.action: e.parameters for e in AuditEntry.objects.filter(dataset=dataset)}
    assert entries["consensus_settings.change"]["vote_cap"] == 12
    assert entries["gold_settings.change"] == {"rate": 0.25}


def test_a_refused_settings_change_stores_nothing_and_writes_no_audit(api_client, organizer, dataset):
    r = api_client(organizer).patch(
        f"/api/v1/datasets/{dataset.pk}/consensus-settings", {"target_precision": 0.3}, format="json"
    )
    assert r.status_code == 400 and "target_precision" in r.json()
    assert not ConsensusSettings.objects.filter(dataset=dataset).exists()
    assert not AuditEntry.objects.filter(dataset=dataset).exists()


def test_gold_csv_import_stores_every_row_and_is_audited(api_client, organizer, dataset):
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    a, b = (factories.ImageFactory(dataset=dataset, original_name=f"dog{i}.jpg") for i in range(2))
    csv = f"kind,concept,image,answer\nimage_verify,{dog.wnid},dog0.jpg,yes\nimage_verify,{dog.wnid},{b.pk},no\n"
    r = api_client(organizer).post(f"/api/v1/datasets/{dataset.pk}/gold/import", {"csv": csv}, format="json")
    assert r.status_code == 201, r.content
    assert r.json()["created"] == 2
    assert sorted(GoldItem.objects.filter(dataset=dataset).values_list("image_id", "answer")) == sorted(
        [(a.pk, True), (b.pk, False)]
    )
    assert AuditEntry.objects.get(dataset=dataset, action="gold.import").parameters == {"rows": 2}


def test_gold_csv_import_with_a_bad_line_stores_nothing_and_names_it(api_client, organizer, dataset):
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    factories.ImageFactory(dataset=dataset, original_name="dog0.jpg")
    csv = f"kind,concept,image,answer\nimage_verify,{dog.wnid},dog0.jpg,yes\nimage_verify,n00000000,nope.jpg,maybe\n"
    r = api_client(organizer).post(f"/api/v1/datasets/{dataset.pk}/gold/import", {"csv": csv}, format="json")
    assert r.status_code == 400
    errors = r.json()["errors"]
    assert any(e.startswith("line 3:") and "n00000000" in e for e in errors)
    assert any("line 3" in e and "nope.jpg" in e for e in errors)
    assert not GoldItem.objects.exists() and not AuditEntry.objects.exists()
