from django.urls import re_path

from . import api

urlpatterns = [
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/candidate-imports/?$",
        api.CandidateImportListView.as_view(),
        name="candidate-imports",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/candidate-imports/(?P<candidate_import_id>[0-9]+)/?$",
        api.CandidateImportView.as_view(),
        name="candidate-import",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/source-buckets/?$",
        api.SourceBucketListView.as_view(),
        name="source-buckets",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/source-buckets/(?P<source_bucket_id>[0-9]+)/?$",
        api.SourceBucketView.as_view(),
        name="source-bucket",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/candidates/(?P<wnid>[^/]+)/precision/?$",
        api.QueryPrecisionView.as_view(),
        name="candidate-query-precision",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/candidate-pools/?$",
        api.CandidatePoolsView.as_view(),
        name="candidate-pools",
    ),
    re_path(
        r"^datasets/(?P<dataset_id>[0-9]+)/candidate-queries/?$",
        api.CandidateQueriesView.as_view(),
        name="candidate-queries",
    ),
]
