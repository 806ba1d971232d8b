"""Candidate imports: record a URL list (or a bucket prefix) as rows of an import, download them in background
batches through the existing ingestion, and keep the candidate pool that verification takes as its input.

A row never blocks the rest: each is settled in its own transaction with its reason. Re-running an import
fetches nothing twice: a URL an earlier row of the dataset fetched is skipped (and linked to its image), and
downloaded bytes already in the dataset are linked to that image instead of stored again."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation import buckets
from annotation.ingest import IngestItem, images_ingest
from annotation.models import Dataset
from hierarchy.models import Concept
from outbox.services import message_enqueue

from . import dedup, sources
from .addresses import allow_list
from .fetch import Fetched, FetchLimits, Outcome, PoolSettings, fetch_many
from .models import Candidate, CandidateImport, CandidateRow, ImportState, RowState
from .rowfile import ListedRow, ListRefused, rows_parse

RUN_TASK = "candidates.tasks.candidate_import_run"
INGEST_CHUNK = 50  # downloads per ingestion call
INGEST_BYTES = 64 * 1024 * 1024  # or fewer, when they hold this many bytes
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class ImportRefused(ValueError):
    """The import as a whole cannot start (bad file, unknown dataset or concept, no bucket support)."""


def limits_from_settings() -> tuple[FetchLimits, PoolSettings]:
    config = settings.CROWDLABEL
    try:
        allow = allow_list(config["CANDIDATE_ALLOWED_HOSTS"])
    except ValueError as exc:
        raise ImportRefused(f"CROWDLABEL_CANDIDATE_ALLOWED_HOSTS: {exc}") from None
    return (
        FetchLimits(
            max_bytes=config["MAX_IMAGE_BYTES"],
            timeout=config["CANDIDATE_TIMEOUT_SECONDS"],
            total_seconds=config["CANDIDATE_TOTAL_SECONDS"],
            max_redirects=config["CANDIDATE_MAX_REDIRECTS"],
            allow=allow,
        ),
        PoolSettings(
            concurrency=config["CANDIDATE_CONCURRENCY"],
            host_interval=config["CANDIDATE_HOST_INTERVAL_SECONDS"],
            attempts=config["CANDIDATE_ATTEMPTS"],
            backoff=config["CANDIDATE_BACKOFF_SECONDS"],
        ),
    )


def candidate_import_create(
    *, dataset: Dataset, name: str, data: bytes, actor=None, default_source: str = "url"
) -> CandidateImport:
    """Record a CSV/JSONL list as an import: every row, good or refused with its reason, then queue the
    downloads in the same transaction. ImportRefused when the file as a whole is refused."""
    try:
        listed = rows_parse(name, data, default_source=default_source)
    except ListRefused as exc:
        raise ImportRefused(str(exc)) from None
    if not listed:
        raise ImportRefused(f"{name}: no rows")
    return _create(dataset, name, listed, actor)


def candidate_import_bucket(
    *, dataset: Dataset, url: str, concept: str, query: str = "", actor=None
) -> CandidateImport:
    """Record every object under an s3://bucket/prefix as a row for one concept (source "bucket"). The bucket
    must be registered for the dataset (candidates.sources) and is listed with its credentials."""
    if not url.startswith("s3://") or not url[5:].split("/", 1)[0]:
        raise ImportRefused(f"{url!r} is not an s3://bucket/prefix URL")
    bucket = url[5:].split("/", 1)[0]
    source = sources.registered(dataset, bucket)
    if source is None:
        raise ImportRefused(
            f"bucket {bucket!r} is not registered for dataset {dataset.name!r}: register it first "
            f"(POST /api/v1/datasets/{dataset.pk}/source-buckets/)"
        )
    try:
        client = sources.source_client(source)
        listed = [
            ListedRow(line=n, url=f"s3://{bucket}/{obj.key}", concept=concept, query=query, source="bucket")
            for n, obj in enumerate(buckets.bucket_objects(url, client=client), start=1)
        ]
    except sources.SourceRefused as exc:
        raise ImportRefused(f"bucket {bucket!r}: {exc}") from None
    except buckets.BucketError as exc:  # a bad URL, a missing bucket, denied access: named by the message
        raise ImportRefused(str(exc)) from None
    if not listed:
        raise ImportRefused(f"{url}: no objects under this prefix")
    return _create(dataset, url, listed, actor)


def _create(dataset: Dataset, name: str, listed: Sequence[ListedRow], actor) -> CandidateImport:
    wnids = {row.concept for row in listed if not row.error}
    concepts = {c.wnid: c for c in Concept.objects.filter(wnid__in=wnids)}
    with transaction.atomic():
        job = CandidateImport.objects.create(
            dataset=dataset, created_by=actor, source_name=name[:500], total=len(listed)
        )
        rows = []
        now = timezone.now()
        for item in listed:
            error = item.error or ("" if item.concept in concepts else f"unknown concept {item.concept!r}")
            rows.append(
                CandidateRow(
                    job=job,
                    line=item.line,
                    url=item.url,
                    concept=concepts.get(item.concept),
                    query=item.query,
                    source=item.source,
                    state=RowState.FAILED if error else RowState.PENDING,
                    reason=error[:500],
                    finished_at=now if error else None,
                )
            )
        CandidateRow.objects.bulk_create(rows, batch_size=1000)
        failed = sum(1 for row in rows if row.state == RowState.FAILED)
        job.failed = failed
        if failed == len(rows):
            job.state, job.finished_at = ImportState.DONE, now
        job.save(update_fields=["failed", "state", "finished_at"])
        if job.state != ImportState.DONE:
            message_enqueue(RUN_TASK, (job.pk,), dataset_id=dataset.pk)
    return job


def _fetched_urls(dataset: Dataset, urls: Iterable[str]) -> dict[str, int]:
    """URL -> image id for URLs an earlier row of the dataset fetched (stored or found to be a duplicate)."""
    return dict(
        CandidateRow.objects.filter(
            job__dataset=dataset,
            url__in=list(urls),
            state__in=(RowState.STORED, RowState.DUPLICATE, RowState.SKIPPED),
            image__isnull=False,
        )
        .order_by("id")
        .values_list("url", "image_id")
    )


def _file_name(url: str, row_id: int) -> str:
    stem = PurePosixPath(unquote(urlsplit(url).path)).stem
    stem = _SAFE_NAME.sub("-", stem).strip("-.")[:80]
    return stem or f"candidate-{row_id}"


def _downloads(
    dataset: Dataset, urls: Sequence[str], limits: FetchLimits, pool: PoolSettings, fetcher: Callable | None
) -> Iterator[Outcome]:
    http = [u for u in urls if not u.startswith("s3://")]
    yield from fetch_many(http, limits, pool, fetcher=fetcher)
    s3 = [u for u in urls if u.startswith("s3://")]
    clients: dict = {}
    for index, url in enumerate(s3):
        bucket, _, key = url[5:].partition("/")
        outcome = Outcome(index=index, url=url, attempts=1)
        try:
            data = sources.object_read(dataset, bucket, key, max_bytes=limits.max_bytes, sources=clients)
            outcome.fetched = Fetched(url=url, final_url=url, content_type="", data=data)
        except buckets.BucketError as exc:  # one text for missing, unregistered and denied (sources.py)
            outcome.error = str(exc)[:500]
        yield outcome


def candidate_import_run(
    job_id: int, *, batch: int | None = None, fetcher: Callable | None = None, requeue: bool = True
) -> CandidateImport:
    """Settle the next batch of an import's pending rows: skip URLs fetched before, download the others
    (bounded, polite, retried), ingest what came, record each row's outcome; queue the next batch, or mark the
    import done. Safe to run again: only pending rows are taken, each settled once."""
    job = CandidateImport.objects.select_related("dataset").get(pk=job_id)
    if job.state == ImportState.DONE:
        return job
    limits, pool = limits_from_settings()
    size = batch or settings.CROWDLABEL["CANDIDATE_BATCH_ROWS"]
    CandidateImport.objects.filter(pk=job.pk, state=ImportState.QUEUED).update(state=ImportState.RUNNING)
    rows = list(job.rows.filter(state=RowState.PENDING).order_by("line")[:size])
    by_url: dict[str, list[CandidateRow]] = defaultdict(list)
    for row in rows:
        by_url[row.url].append(row)
    known = _fetched_urls(job.dataset, by_url)
    for url, image_id in known.items():
        for row in by_url.pop(url):
            _settle(
                job.dataset_id,
                row,
                RowState.SKIPPED,
                f"URL already fetched (image {image_id})",
                image_id,
                attempts=0,
            )
    # Downloads arrive while earlier ones are ingested; the ingestion takes them in chunks, so the dataset's
    # hash index is loaded once per chunk and at most INGEST_BYTES of downloads wait in memory.
    waiting: list[tuple[Outcome, list[CandidateRow]]] = []
    held = 0
    for outcome in _downloads(job.dataset, list(by_url), limits, pool, fetcher):
        group = by_url[outcome.url]
        if outcome.fetched is None:
            for row in group:
                _settle(job.dataset_id, row, RowState.FAILED, outcome.error, None, outcome.attempts)
            continue
        waiting.append((outcome, group))
        held += len(outcome.fetched.data)
        if len(waiting) >= INGEST_CHUNK or held >= INGEST_BYTES:
            _ingest_settle(job.dataset, waiting)
            waiting, held = [], 0
    if waiting:
        _ingest_settle(job.dataset, waiting)
    job.refresh_from_db()
    if job.rows.filter(state=RowState.PENDING).exists():
        if requeue:
            with transaction.atomic():
                message_enqueue(RUN_TASK, (job.pk,), dataset_id=job.dataset_id)
    else:
        CandidateImport.objects.filter(pk=job.pk).update(state=ImportState.DONE, finished_at=timezone.now())
        job.refresh_from_db()
    return job


def _ingest_settle(dataset: Dataset, waiting: list[tuple[Outcome, list[CandidateRow]]]) -> None:
    """Store downloaded bytes through the ingestion (its checks, hashes and near-duplicate flag) in one call,
    or link rows to the image already holding them; then settle every row. Of several rows with one URL, the
    first stored the bytes and the others link to that image. Downloads finish in any order: the chunk is taken
    in the file's order, so of two URLs with the same bytes in one chunk the earlier line stores them and the
    later is its duplicate, whichever came first (across chunks, the one ingested first)."""
    waiting = sorted(waiting, key=lambda pair: pair[1][0].line)
    results: dict[int, tuple[str, str, int | None]] = {}
    items: list[IngestItem] = []
    for index, (outcome, group) in enumerate(waiting):
        fetched = outcome.fetched
        assert fetched is not None
        existing = _image_with_bytes(dataset, fetched.data)
        if existing is not None:
            results[index] = (RowState.DUPLICATE, f"same bytes as image {existing}", existing)
            continue
        # the row id keeps names unique within the call: the report names what it stored and refused
        name = f"{group[0].pk}-{_file_name(fetched.final_url, group[0].pk)}"
        items.append(IngestItem(name=name, data=fetched.data, source=group[0].url))
    if items:
        report = images_ingest(dataset=dataset, items=items)
        stored = {image.original_name: image for image in report.stored}
        refused = dict(report.rejected)
        by_name = {item.name[:255]: item for item in items}
        for index, (outcome, group) in enumerate(waiting):
            if index in results:
                continue
            name = f"{group[0].pk}-{_file_name(outcome.fetched.final_url, group[0].pk)}"[:255]
            if name in stored:
                image = stored[name]
                kept = dedup.kept_copy_choose(image)
                note = ""
                if kept.pk != image.pk:
                    note = f"near-duplicate of image {kept.pk}"
                elif image.near_duplicates.exists():
                    note = "near-duplicate kept for its higher resolution"
                results[index] = (RowState.STORED, note, image.pk)
                continue
            existing = _image_with_bytes(dataset, by_name[name].data)
            if existing is not None:  # the same bytes came twice in this chunk, or from a concurrent import
                results[index] = (RowState.DUPLICATE, f"same bytes as image {existing}", existing)
            else:
                results[index] = (RowState.FAILED, refused.get(name, "not stored"), None)
    for index, (outcome, group) in enumerate(waiting):
        state, reason, image_id = results[index]
        for position, row in enumerate(group):
            row_state = state if position == 0 or state == RowState.FAILED else RowState.DUPLICATE
            _settle(dataset.pk, row, row_state, reason, image_id, outcome.attempts)


def _image_with_bytes(dataset: Dataset, data: bytes) -> int | None:
    sha256 = hashlib.sha256(data).hexdigest()
    return dataset.images.filter(sha256=sha256).values_list("pk", flat=True).first()


_COUNTER = {
    RowState.STORED: "stored",
    RowState.DUPLICATE: "duplicates",
    RowState.SKIPPED: "skipped",
    RowState.FAILED: "failed",
}


def _settle(
    dataset_id: int, row: CandidateRow, state: str, reason: str, image_id: int | None, attempts: int
) -> None:
    """One row's outcome, its pool entry and the import's counter, together; a row already settled (by a
    concurrent run of the same batch) is left as it is."""
    with transaction.atomic():
        updated = CandidateRow.objects.filter(pk=row.pk, state=RowState.PENDING).update(
            state=state,
            reason=reason[:500],
            image_id=image_id,
            attempts=attempts,
            finished_at=timezone.now(),
        )
        if not updated:
            return
        CandidateImport.objects.filter(pk=row.job_id).update(**{_COUNTER[state]: F(_COUNTER[state]) + 1})
        if image_id is not None and row.concept_id is not None:
            Candidate.objects.get_or_create(
                dataset_id=dataset_id,
                concept_id=row.concept_id,
                image_id=image_id,
                query=row.query,
                defaults={"source": row.source, "url": row.url, "row_id": row.pk},
            )


def import_progress(job: CandidateImport, *, failures: int = 100) -> dict:
    """What the API and the command show: the counts, and the failed rows with their reasons."""
    failed = list(
        job.rows.filter(state=RowState.FAILED).order_by("line").values("line", "url", "reason")[:failures]
    )
    return {
        "id": job.pk,
        "dataset": job.dataset_id,
        "source_name": job.source_name,
        "state": job.state,
        "total": job.total,
        "done": job.done_rows,
        "stored": job.stored,
        "duplicates": job.duplicates,
        "skipped": job.skipped,
        "failed": job.failed,
        "failures": failed,
        "created_at": job.created_at,
        "finished_at": job.finished_at,
    }
