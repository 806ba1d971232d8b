"""A challenge submission with the media storage on S3 (moto's server on loopback): the uploaded file is kept in
the bucket and scored from there against the hidden test labels."""

from __future__ import annotations

import pytest

from benchmark.models import Submission
from tests.benchmark.test_api import challenge, frozen, perfect_results, submit, team_user  # noqa: F401
from tests.s3_fixtures import s3_client

pytestmark = pytest.mark.django_db


def test_a_submission_is_stored_in_the_bucket_and_scored_from_it(s3_media, s3_endpoint, challenge, team_user):  # noqa: F811
    data = perfect_results(challenge)

    response = submit(team_user, challenge, data)

    assert response.status_code == 201, response.content
    assert response.json()["state"] == "scored" and response.json()["scores"]["AP50"] == pytest.approx(1.0)
    name = Submission.objects.get().file.name
    assert name.startswith("submissions/")
    assert s3_client(s3_endpoint).get_object(Bucket=s3_media, Key=name)["Body"].read() == data
