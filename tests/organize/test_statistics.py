"""The Statistics page and its endpoint: the report of `manage.py dataset_stats` for the organizer's own
dataset (per split, the test split's labels withheld; the comparison with its sources), its plots drawn
server-side as SVG beside their numbers, the split-version and detection-set pickers, refusals for everyone
else, and a number of queries that does not grow with the dataset."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from benchmark.dataset_stats import dataset_statistics
from benchmark.services import export_source
from hierarchy.models import Concept
from tests import factories
from tests.benchmark.conftest import finalize
from tests.benchmark.test_detection_sets import add_box, cmd
from tests.conftest import client_for

# Real commits: the report is computed when the request that asks for it commits (no broker: in-process), as
# under `make run`; tests/benchmark/test_reports.py covers the report while it is still being computed.
pytestmark = pytest.mark.django_db(transaction=True)

W, H = 100, 100


def scene(dataset, copies: int = 1):
    """`copies` times: one image with a small dog (1% of the image), one with a dog (9%) and a cat (4%), one with a cat
    filling half of it, one with nothing (verified: no dog; an image nobody labelled is no background, and neither
    exports nor statistics hold it)."""
    dog, _ = Concept.objects.get_or_create(wnid="n02084071", defaults={"name": "dog"})
    cat, _ = Concept.objects.get_or_create(wnid="n02121808", defaults={"name": "domestic cat"})
    for _ in range(copies):
        img = [factories.ImageFactory(dataset=dataset, width=W, height=H) for _ in range(4)]
        add_box(img[0], dog, 0, 0, 10, 10)
        add_box(img[1], dog, 0, 0, 30, 30)
        add_box(img[1], cat, 40, 40, 60, 60)
        add_box(img[2], cat, 0, 0, 100, 50)
        factories.TaskFactory(
            image=img[3],
            dataset=dataset,
            concept=dog,
            state="done",
            result={"answer": False, "yes": 0, "no": 3},
        )
    finalize(dataset)
    return dog, cat


def freeze_splits(dataset):
    """A frozen split version 1: half train, a quarter each val and test."""
    cmd(
        "make_splits", "--dataset", dataset.name, "--train", ".5", "--val", ".25", "--test", ".25", "--freeze"
    )


def page(user, dataset, query: str = ""):
    client = Client()
    client.force_login(user)
    return client.get(f"/organize/datasets/{dataset.pk}/statistics/{query}")


def test_the_endpoint_reports_what_the_command_reports_for_an_unsplit_dataset(organizer, dataset):
    scene(dataset)
    body = client_for(organizer).get(f"/api/v1/datasets/{dataset.pk}/statistics").json()
    assert body["split_version"] is None and body["version"] == "unsplit" and body["withheld"] == []
    (split,) = body["splits"]
    # every image has a label now: the one with nothing is a verified negative
    assert (split["split"], split["images"], split["labelled_images"], split["instances"]) == ("all", 4, 4, 4)
    assert split["clutter"] == pytest.approx(4 / 3, abs=1e-4)  # three images with a box, one of them with two
    assert split["mean_classes_per_image"] == pytest.approx((0 + 1 + 2 + 1) / 4, abs=1e-4)
    assert [r["images"] for r in split["classes_per_image"]] == [1, 2, 1]
    by_bin = {b["bin"]: b["instances"] for b in split["scale_histogram"]}
    assert by_bin["1%-5%"] == 2 and by_bin["5%-10%"] == 1 and by_bin["50%-75%"] == 1 and by_bin["0%-1%"] == 0
    assert split["per_class"] == [
        {"name": "dog", "instances": 2, "images": 2},
        {"name": "domestic cat", "instances": 2, "images": 2},
    ]  # most instances first, then by name
    (expected,) = dataset_statistics(export_source(dataset, "all"))
    assert {k: split[k] for k in expected.as_dict()} == expected.as_dict()
    sources = {r["benchmark"]: r["source"] for r in body["references"]}
    assert "ILSVRC 2015 devkit readme" in sources["ILSVRC 2014 DET val"] and "PASCAL VOC 2012" in sources


def test_the_test_split_is_withheld_and_the_pickers_choose_version_and_detection_set(organizer, dataset):
    dog, _ = scene(dataset, copies=3)
    freeze_splits(dataset)
    client = client_for(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/statistics"
    body = client.get(url).json()
    assert body["split_version"] == 1 and body["split_versions"] == [1]
    assert [s["split"] for s in body["splits"]] == ["train", "val"]
    (withheld,) = body["withheld"]
    assert withheld["split"] == "test"
    assert sum(s["images"] for s in body["splits"]) + withheld["images"] == 12
    created = client.post(
        f"/api/v1/datasets/{dataset.pk}/detection-sets/",
        {"name": "dogs", "classes": [dog.wnid]},
        format="json",
    )
    assert created.status_code == 201, created.content
    dogs = client.get(url, {"split_version": 1, "detection_set": "dogs"}).json()
    assert dogs["detection_set"] == "dogs" and dogs["detection_sets"] == ["dogs"]
    assert {c["name"] for s in dogs["splits"] for c in s["per_class"]} <= {"dog"}
    html = page(organizer, dataset, "?split_version=1&detection_set=dogs").content.decode()
    assert '<option value="dogs" selected>dogs</option>' in html and "labels withheld" in html


def test_an_unknown_version_or_detection_set_is_a_400_naming_it(organizer, dataset):
    scene(dataset)
    client = client_for(organizer)
    url = f"/api/v1/datasets/{dataset.pk}/statistics"
    missing = client.get(url, {"split_version": 7})
    assert missing.status_code == 400 and "no split version 7" in missing.json()["split_version"][0]
    for bad in ("x", "²", "-1", "9" * 30):
        refused = client.get(url, {"split_version": bad})
        assert refused.status_code == 400 and "must be a version number" in refused.json()["split_version"][0]
    unknown = client.get(url, {"detection_set": "nope"})
    assert unknown.status_code == 400 and "no detection set 'nope'" in unknown.json()["detection_set"][0]
    refused = page(organizer, dataset, "?detection_set=nope")
    assert refused.status_code == 400 and "no detection set &#x27;nope&#x27;" in refused.content.decode()


def test_the_page_draws_each_plot_as_svg_beside_its_numbers(organizer, dataset):
    scene(dataset)
    response = page(organizer, dataset)
    assert response.status_code == 200
    html = response.content.decode()
    scripts = re.findall(r"<script[^>]*>", html)
    assert all("src=" in tag for tag in scripts), scripts  # the policy allows no inline script
    assert html.count('<svg class="chart"') == 2
    # seven scale bins, and zero, one or two classes per image
    assert html.count('<rect class="stat-bar series-0"') == 7 + 3
    assert "all, 50%-75%: 25.0%" in html  # the cat filling half of an image: one of four instances
    for table in (
        "statistics-splits",
        "statistics-scale",
        "statistics-classes-per-image",
        "statistics-per-class",
    ):
        assert f'id="{table}"' in html
    assert "ILSVRC 2014 DET train" in html and "456567" in html and "measured here" in html
    nav = html.split('aria-label="Dataset sections"', 1)[1].split("</nav>", 1)[0]
    assert f'href="/organize/datasets/{dataset.pk}/statistics/" aria-current="page">Statistics</a>' in nav


def test_the_dataset_home_links_to_the_statistics_page(organizer, dataset):
    html = page(organizer, dataset).content.decode()
    client = Client()
    client.force_login(organizer)
    home = client.get(f"/organize/datasets/{dataset.pk}/").content.decode()
    assert f'href="/organize/datasets/{dataset.pk}/statistics/"' in home and "Statistics" in html


@pytest.mark.parametrize("role", ["worker", "reviewer"])
def test_workers_and_reviewers_are_refused_page_and_endpoint(request, role, dataset):
    user = request.getfixturevalue(role)
    assert page(user, dataset).status_code == 403
    assert client_for(user).get(f"/api/v1/datasets/{dataset.pk}/statistics").status_code == 403


def test_another_organizers_dataset_is_not_found(organizer, other_dataset):
    assert page(organizer, other_dataset).status_code == 404
    assert client_for(organizer).get(f"/api/v1/datasets/{other_dataset.pk}/statistics").status_code == 404


def _queries(fn) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        assert fn().status_code == 200
    return [q["sql"] for q in captured.captured_queries]


def test_page_and_endpoint_take_the_same_queries_whatever_the_dataset_size(organizer, dataset):
    """The page and the endpoint read the kept report: more images, not more queries (and far fewer than computing it)."""
    big = factories.DatasetFactory(organizers=[organizer])
    scene(dataset, copies=1)
    scene(big, copies=8)
    browser = Client()
    browser.force_login(organizer)
    api = client_for(organizer)
    counts = {}
    for d in (dataset, big):
        browser.get(f"/organize/datasets/{d.pk}/statistics/")  # warm the session
        api.get(f"/api/v1/datasets/{d.pk}/statistics")
        counts[d.pk] = (
            _queries(lambda d=d: browser.get(f"/organize/datasets/{d.pk}/statistics/")),
            _queries(lambda d=d: api.get(f"/api/v1/datasets/{d.pk}/statistics")),
        )
    for small, large in zip(counts[dataset.pk], counts[big.pk], strict=True):
        assert len(small) == len(large), "\n".join(large)
    # session and user, dataset, split version default, the kept report, pickers (and the page's role check)
    assert len(counts[big.pk][0]) <= 9 and len(counts[big.pk][1]) <= 6, counts[big.pk]
