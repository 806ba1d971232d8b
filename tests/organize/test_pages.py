"""The organizer workspace pages and endpoints: only organizers, only their own datasets, a fixed number of
queries whatever the dataset's size."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import AuditEntry
from benchmark.models import SplitVersion
from tests import factories

pytestmark = pytest.mark.django_db

PAGES = [
    "/organize/",
    "/organize/datasets/{id}/",
    "/organize/datasets/{id}/images/",
    "/organize/datasets/{id}/classes/",
    "/organize/datasets/{id}/candidates/",
    "/organize/datasets/{id}/predictions/",
    "/organize/datasets/{id}/crowds/",
    "/organize/datasets/{id}/benchmark/",
    "/organize/datasets/{id}/people/",
    "/organize/datasets/{id}/quality/",
    "/organize/datasets/{id}/settings/",
    "/organize/datasets/{id}/images/1/",
    "/organize/datasets/{id}/people/1/",
]
# Pages that compute a report (more queries, counted in their own tests) but are refused like the others.
REPORT_PAGES = ["/organize/datasets/{id}/statistics/"]
ENDPOINTS = [
    ("get", "/api/v1/datasets/{id}/progress"),
    ("get", "/api/v1/datasets/{id}/audit"),
    ("get", "/api/v1/datasets/{id}/cost"),
    ("get", "/api/v1/datasets/{id}/cost-settings"),
    ("patch", "/api/v1/datasets/{id}/cost-settings"),
    ("get", "/api/v1/datasets/{id}/invitations"),
    ("get", "/api/v1/datasets/{id}/people"),
    ("get", "/api/v1/datasets/{id}/split-versions"),
    ("post", "/api/v1/datasets/{id}/split-versions"),
    ("post", "/api/v1/datasets/{id}/split-versions/1/freeze"),
    ("get", "/api/v1/datasets/{id}/review"),
    ("post", "/api/v1/datasets/{id}/review"),
    ("post", "/api/v1/datasets/{id}/people/1/block"),
    ("post", "/api/v1/datasets/{id}/people/1/unblock"),
    ("post", "/api/v1/datasets/{id}/invitations"),
    ("get", "/api/v1/datasets/{id}/images"),
    ("get", "/api/v1/datasets/{id}/concepts"),
    ("put", "/api/v1/datasets/{id}/concepts"),
    ("post", "/api/v1/hierarchy-uploads"),
    ("get", "/api/v1/datasets/"),
    ("post", "/api/v1/datasets/"),
    ("post", "/api/v1/datasets/{id}/verification"),
    ("post", "/api/v1/datasets/{id}/multilabel"),
    ("post", "/api/v1/datasets/{id}/box-jobs"),
    ("get", "/api/v1/datasets/{id}/quality"),
    ("get", "/api/v1/datasets/{id}/consensus-settings"),
    ("patch", "/api/v1/datasets/{id}/consensus-settings"),
    ("get", "/api/v1/datasets/{id}/gold-settings"),
    ("patch", "/api/v1/datasets/{id}/gold-settings"),
    ("get", "/api/v1/datasets/{id}/gold"),
    ("get", "/api/v1/datasets/{id}/candidate-pools"),
    ("get", "/api/v1/datasets/{id}/candidate-queries?concept=n02084071"),
    ("get", "/api/v1/datasets/{id}/candidate-imports"),
    ("post", "/api/v1/datasets/{id}/gold/import"),
    ("get", "/api/v1/datasets/{id}/images/1"),
    ("get", "/api/v1/datasets/{id}/people/1"),
    ("get", "/api/v1/datasets/{id}/confusable-pairs"),
    ("post", "/api/v1/datasets/{id}/confusable-pairs"),
    ("delete", "/api/v1/datasets/{id}/confusable-pairs/1"),
    ("get", "/api/v1/hierarchies/1/tree"),
    ("get", "/api/v1/datasets/{id}/challenges"),
    ("post", "/api/v1/datasets/{id}/challenges"),
    ("get", "/api/v1/datasets/{id}/challenges/1"),
    ("post", "/api/v1/datasets/{id}/challenges/1/teams"),
    ("get", "/api/v1/datasets/{id}/review/decisions"),
    ("get", "/api/v1/datasets/{id}/near-duplicates"),
    ("post", "/api/v1/datasets/{id}/near-duplicates/1"),
    ("get", "/api/v1/datasets/{id}/statistics"),
]


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("role", ["worker", "reviewer"])
def test_workers_and_reviewers_are_refused_every_organizer_page(request, role, dataset):
    client = signed_in(request.getfixturevalue(role))
    for page in PAGES + REPORT_PAGES:
        response = client.get(page.format(id=dataset.pk))
        assert response.status_code == 403, page
        assert "not an organizer" in response.content.decode()


@pytest.mark.parametrize("role", ["worker", "reviewer"])
def test_workers_and_reviewers_are_refused_every_organizer_endpoint(request, api_client, role, dataset):
    client = api_client(request.getfixturevalue(role))
    for method, url in ENDPOINTS:
        response = getattr(client, method)(url.format(id=dataset.pk), {}, format="json")
        assert response.status_code == 403, (method, url, response.status_code)


def test_signed_out_visitors_are_sent_to_sign_in(client, dataset):
    response = client.get("/organize/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_an_organizer_never_sees_another_organizers_dataset(api_client, organizer, dataset, other_dataset):
    client = signed_in(organizer)
    listing = client.get("/organize/").content.decode()
    assert dataset.name in listing and other_dataset.name not in listing
    for page in PAGES[1:] + REPORT_PAGES:
        assert client.get(page.format(id=other_dataset.pk)).status_code == 404, page
    api = api_client(organizer)
    for method, url in ENDPOINTS:
        if "{id}" in url:
            response = getattr(api, method)(url.format(id=other_dataset.pk), {}, format="json")
            assert response.status_code == 404, (method, url, response.status_code)


def test_the_home_page_sends_a_non_staff_organizer_to_organize(organizer):
    client = signed_in(organizer)
    body = client.get("/").content.decode()
    assert 'href="/organize/">Organize datasets</a>' in body
    assert not organizer.is_staff
    assert client.get("/organize/").status_code == 200


@pytest.fixture
def big_dataset(organizer, dataset):
    """Enough rows of every kind that a per-row query would show in the counts."""
    images = factories.ImageFactory.create_batch(12, dataset=dataset)
    for _ in range(5):
        factories.DatasetFactory(organizers=[organizer])
    concept = factories.ConceptFactory()
    from annotation.models import Box, BoxJob

    for image in images[:6]:
        Box.objects.create(image=image, concept=concept, x1=0, y1=0, x2=5, y2=5)
        BoxJob.objects.create(
            dataset=dataset, image=image, concept=concept, state={}, max_boxes=3, max_rounds=3
        )
    from candidates.models import Candidate, CandidateImport

    for n in range(4):
        CandidateImport.objects.create(dataset=dataset, source_name=f"list-{n}.csv", total=2, failed=1)
        pool_concept = factories.ConceptFactory()
        for image in images[:3]:
            Candidate.objects.create(
                dataset=dataset, concept=pool_concept, image=image, query="q", url=f"http://x/{image.pk}"
            )
    for n in range(7):
        AuditEntry.objects.create(dataset=dataset, actor=organizer, action=f"test.{n}", parameters={"n": n})
    return dataset


def test_pages_take_a_fixed_number_of_queries(organizer, big_dataset, django_assert_max_num_queries):
    client = signed_in(organizer)
    client.get("/organize/")  # warm the session and the role cache paths
    for page in PAGES:
        with django_assert_max_num_queries(6):
            assert client.get(page.format(id=big_dataset.pk)).status_code == 200


def test_endpoints_take_a_fixed_number_of_queries(
    api_client, organizer, big_dataset, django_assert_max_num_queries
):
    client = api_client(organizer)
    concept_wnid = big_dataset.images.first().boxes.first().concept.wnid
    SplitVersion.objects.create(dataset=big_dataset, number=1, seed=0, ratios={}, manifest={}, frozen=True)
    for url, most in [
        ("/api/v1/datasets/{id}/progress", 8),
        ("/api/v1/datasets/{id}/audit", 4),
        ("/api/v1/datasets/{id}/cost", 12),  # 3 of them for the providers' spend, 1 for reviewer time
        ("/api/v1/datasets/{id}/invitations", 3),
        ("/api/v1/datasets/{id}/people", 6),
        ("/api/v1/datasets/{id}/split-versions", 3),
        ("/api/v1/datasets/{id}/review", 3),
        ("/api/v1/datasets/{id}/images", 4),
        ("/api/v1/datasets/{id}/image-grid", 4),
        ("/api/v1/datasets/{id}/image-grid?stage=unstarted&concept=" + concept_wnid, 5),
        ("/api/v1/datasets/{id}/image-grid?stage=boxing&split=train", 5),
        ("/api/v1/datasets/{id}/quality", 10),  # 2 of them for the review load
        ("/api/v1/datasets/{id}/consensus-settings", 3),
        ("/api/v1/datasets/{id}/gold-settings", 3),
        ("/api/v1/datasets/{id}/gold", 4),
        ("/api/v1/datasets/{id}/candidate-pools", 3),
        ("/api/v1/datasets/{id}/candidate-imports", 3),
    ]:
        with django_assert_max_num_queries(most):
            assert client.get(url.format(id=big_dataset.pk)).status_code == 200, url
