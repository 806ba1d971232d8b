"""The candidate pools and queries API the organizer's Candidates page reads: per-class pool counts in one
aggregate query whatever the number of pools, and the same search queries as the candidate_queries command."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from candidates.models import Candidate
from tests import factories
from tests.conftest import client_for
from tests.hierarchy.test_queries import WHIPPET, whippet_tree  # noqa: F401  (a fixture)


def pool(dataset, concept, images, queries):
    """Each image found by each query: len(images) * len(queries) entries."""
    for image in images:
        for query in queries:
            Candidate.objects.create(
                dataset=dataset, concept=concept, image=image, query=query, url=f"http://x/{image.pk}/{query}"
            )


def pools_of(client, dataset):
    response = client.get(f"/api/v1/datasets/{dataset.pk}/candidate-pools")
    assert response.status_code == 200, response.content
    return response.json()


def test_pools_count_entries_distinct_images_and_queries_per_class(db, organizer, dataset):
    dog = factories.ConceptFactory(wnid="n02084071", name="dog")
    cat = factories.ConceptFactory(wnid="n02121808", name="domestic cat")
    images = [factories.ImageFactory(dataset=dataset) for _ in range(3)]
    pool(dataset, dog, images, ["dog", "puppy"])
    pool(dataset, cat, images[:1], ["cat"])
    elsewhere = factories.DatasetFactory(organizers=[organizer], name="elsewhere")
    pool(elsewhere, dog, [factories.ImageFactory(dataset=elsewhere)], ["dog"])
    assert pools_of(client_for(organizer), dataset) == [
        {"wnid": "n02084071", "name": "dog", "entries": 6, "images": 3, "queries": 2},
        {"wnid": "n02121808", "name": "domestic cat", "entries": 1, "images": 1, "queries": 1},
    ]


def test_the_pool_listing_costs_the_same_queries_for_one_pool_or_twenty(db, organizer, dataset):
    client = client_for(organizer)
    image = factories.ImageFactory(dataset=dataset)
    pool(dataset, factories.ConceptFactory(wnid="n00000000", name="c0"), [image], ["q"])
    pools_of(client, dataset)  # the first request of a client also reads its user's roles once
    with CaptureQueriesContext(connection) as one:
        assert len(pools_of(client, dataset)) == 1
    for n in range(1, 20):
        pool(dataset, factories.ConceptFactory(wnid=f"n{n:08d}", name=f"c{n}"), [image], ["q", "r"])
    with CaptureQueriesContext(connection) as twenty:
        assert len(pools_of(client, dataset)) == 20
    assert len(twenty) == len(one) == 2  # the dataset (scoped to its organizer), then the pools' aggregate


def test_queries_are_the_commands_list_without_translations(whippet_tree, organizer, dataset, capsys):  # noqa: F811
    response = client_for(organizer).get(
        f"/api/v1/datasets/{dataset.pk}/candidate-queries", {"concept": WHIPPET.wnid}
    )
    assert response.status_code == 200, response.content
    assert [(r["query"], r["kind"], r["language"]) for r in response.json()] == [
        ("whippet", "synonym", "en"),
        ("whippet greyhound", "parent", "en"),
        ("whippet dog", "parent", "en"),
    ]
    call_command("candidate_queries", "--concept", WHIPPET.wnid, "--format", "json")
    assert json.loads(capsys.readouterr().out) == response.json()


@pytest.mark.parametrize(
    ("params", "message"),
    [({}, "required: the wnid"), ({"concept": ""}, "required: the wnid"), ({"concept": "n9"}, "no concept")],
)
def test_queries_without_a_known_concept_are_a_400_naming_it(db, organizer, dataset, params, message):
    response = client_for(organizer).get(f"/api/v1/datasets/{dataset.pk}/candidate-queries", params)
    assert response.status_code == 400
    assert message in str(response.json()["concept"])


def test_another_organizer_gets_a_404_and_a_worker_a_403(db, organizer, dataset, worker):
    other = factories.user_with_roles("org-b", ("organizers",))
    for path in ("candidate-pools", "candidate-queries?concept=n02084071"):
        assert client_for(other).get(f"/api/v1/datasets/{dataset.pk}/{path}").status_code == 404
        assert client_for(worker).get(f"/api/v1/datasets/{dataset.pk}/{path}").status_code == 403
