"""A real boto3 MTurk client under botocore's Stubber (requests and responses are checked against MTurk's
service model), and the rows a published HIT needs."""

from __future__ import annotations

import datetime as dt

import boto3
from botocore.stub import Stubber

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def stubbed_client():
    client = boto3.client(
        "mturk",
        region_name="us-east-1",
        endpoint_url="https://mturk-requester-sandbox.us-east-1.amazonaws.com",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    return client, Stubber(client)


def assignment(assignment_id: str, worker_id: str, hit_id: str = "HIT1", status: str = "Submitted") -> dict:
    return {
        "AssignmentId": assignment_id,
        "WorkerId": worker_id,
        "HITId": hit_id,
        "AssignmentStatus": status,
        "AcceptTime": NOW,
        "SubmitTime": NOW,
    }
