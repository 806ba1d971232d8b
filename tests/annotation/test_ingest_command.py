"""`manage.py ingest_images`: folders walked, every file judged, a readable summary, clear failures."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Dataset, Image, Task
from annotation.vote_tasks import KIND
from consensus.management.commands import ingest_images
from tests import factories
from tests.annotation import imagefiles

pytestmark = pytest.mark.django_db


def run(*args, **options) -> str:
    out = io.StringIO()
    call_command(
        "ingest_images", *map(str, args), stdout=out, stderr=io.StringIO(), no_progress=True, **options
    )
    return out.getvalue()


@pytest.fixture
def folder(tmp_path) -> Path:
    """photos/ with two pictures, a nested folder holding a third and a near-copy, and some non-images."""
    root = tmp_path / "photos"
    (root / "nested" / "deeper").mkdir(parents=True)
    (root / "a.jpg").write_bytes(imagefiles.jpeg(1))
    (root / "b.png").write_bytes(imagefiles.encode(imagefiles.picture(2), "PNG"))
    (root / "nested" / "c.jpg").write_bytes(imagefiles.jpeg(3))
    (root / "nested" / "deeper" / "z-a-again.jpg").write_bytes(imagefiles.near_copy(1))
    (root / "README.txt").write_bytes(imagefiles.TEXT)
    (root / "nested" / "half.jpg").write_bytes(imagefiles.truncated_jpeg())
    return root


def test_folder_is_walked_recursively_and_every_file_is_judged(dataset, folder):
    output = run(folder, dataset=dataset.name)
    stored = set(dataset.images.values_list("original_name", flat=True))
    assert {Path(n).name for n in stored} == {"a.jpg", "b.png", "c.jpg", "z-a-again.jpg"}
    assert "stored 4 of 6 files, 1 flagged as near-duplicates, 2 rejected" in output
    assert f"{folder / 'README.txt'}: not an image" in output
    assert f"{folder / 'nested' / 'half.jpg'}: the image data is truncated" in output


def test_summary_names_the_image_a_near_duplicate_resembles(dataset, folder):
    output = run(folder, dataset=dataset.name)
    original = dataset.images.get(original_name=str(folder / "a.jpg"))
    copy = dataset.images.get(near_duplicate_of=original)
    assert f"image {copy.pk} resembles image {original.pk}" in output


def test_rerun_over_an_ingested_folder_names_the_images_already_stored_and_succeeds(dataset, tmp_path):
    photo = tmp_path / "one.jpg"
    photo.write_bytes(imagefiles.jpeg(4))
    run(photo, dataset=dataset.name)
    first = dataset.images.get()
    out = io.StringIO()
    call_command("ingest_images", str(photo), dataset=dataset.name, stdout=out, no_progress=True)
    assert f"already in the dataset as image {first.pk}" in out.getvalue()
    assert "Every file is already in the dataset" in out.getvalue()
    assert dataset.images.count() == 1


def test_a_run_that_stores_nothing_for_a_real_reason_fails(dataset, tmp_path):
    photo = tmp_path / "one.jpg"
    photo.write_bytes(imagefiles.jpeg(4))
    run(photo, dataset=dataset.name)
    junk = tmp_path / "notes.jpg"
    junk.write_text("not an image")
    with pytest.raises(CommandError, match="none of the 2 files was stored"):
        call_command(
            "ingest_images",
            str(photo),
            str(junk),
            dataset=dataset.name,
            stdout=io.StringIO(),
            no_progress=True,
        )


def test_single_files_and_folders_can_be_mixed(dataset, folder, tmp_path):
    extra = tmp_path / "extra.jpg"
    extra.write_bytes(imagefiles.jpeg(8))
    run(extra, folder / "nested", dataset=dataset.name)
    assert dataset.images.count() == 3  # extra.jpg, c.jpg and z-a-again.jpg; half.jpg refused


def test_concept_queues_one_vote_task_per_stored_image(dataset, folder):
    concept = factories.ConceptFactory(wnid="n02121808", name="domestic cat")
    output = run(folder, dataset=dataset.name, concept="n02121808", answers_wanted=5)
    tasks = Task.objects.filter(kind=KIND, concept=concept)
    assert sorted(tasks.values_list("image_id", flat=True)) == sorted(
        dataset.images.values_list("pk", flat=True)
    )
    assert {t.answers_wanted for t in tasks} == {5}
    assert "Queued 4 vote tasks for n02121808 (domestic cat)" in output


def test_concept_tasks_cover_only_this_runs_images(dataset, folder, tmp_path):
    factories.ConceptFactory(wnid="n02121808")
    earlier = tmp_path / "earlier.jpg"
    earlier.write_bytes(imagefiles.jpeg(20))
    run(earlier, dataset=dataset.name)
    run(folder / "nested", dataset=dataset.name, concept="n02121808")
    assert Task.objects.count() == 2
    assert not Task.objects.filter(image__original_name=str(earlier)).exists()


def test_unknown_dataset_fails_and_suggests_create_dataset(folder):
    with pytest.raises(CommandError, match="no dataset named 'nope'.*--create-dataset"):
        run(folder, dataset="nope")
    assert not Image.objects.exists()


def test_create_dataset_creates_it_and_stores_the_files(folder):
    run(folder, dataset="street-scenes", create_dataset=True)
    assert Dataset.objects.get(name="street-scenes").images.count() == 4


def test_create_dataset_refuses_a_name_that_is_not_a_slug(folder):
    with pytest.raises(CommandError, match="cannot create dataset"):
        run(folder, dataset="my photos!", create_dataset=True)
    assert not Dataset.objects.exists()


def test_unknown_concept_fails_before_storing_or_creating_anything(folder):
    with pytest.raises(CommandError, match="no concept with wnid 'n99999999'"):
        run(folder, dataset="fresh", create_dataset=True, concept="n99999999")
    assert not Dataset.objects.exists() and not Image.objects.exists()


def test_missing_path_fails_naming_it(dataset, folder, tmp_path):
    ghost = tmp_path / "ghost"
    with pytest.raises(CommandError, match=f"no such file or folder: {ghost}"):
        run(folder, ghost, dataset=dataset.name)
    assert not Image.objects.exists()


def test_empty_folder_fails_with_no_files_found(dataset, tmp_path):
    (tmp_path / "empty" / "inside").mkdir(parents=True)
    with pytest.raises(CommandError, match="no files found"):
        run(tmp_path / "empty", dataset=dataset.name)


def test_a_batch_of_only_bad_files_fails_after_naming_each(dataset, tmp_path, settings):
    settings.CROWDLABEL = {**settings.CROWDLABEL, "MAX_IMAGE_BYTES": 1_000}
    (tmp_path / "bomb.png").write_bytes(imagefiles.bomb_png())
    (tmp_path / "large.jpg").write_bytes(imagefiles.jpeg(1))
    out = io.StringIO()
    with pytest.raises(CommandError, match="none of the 2 files"):
        call_command("ingest_images", str(tmp_path), dataset=dataset.name, stdout=out, no_progress=True)
    assert "bomb.png: the file is" in out.getvalue()  # over the byte limit before any decoding
    assert "large.jpg: the file is" in out.getvalue()


def test_files_are_read_one_at_a_time(dataset, folder, monkeypatch):
    reads: list[str] = []
    real_item_read, real_ingest = ingest_images.item_read, ingest_images.images_ingest

    def counting_read(name, stream, **kwargs):
        reads.append(name)
        return real_item_read(name, stream, **kwargs)

    def checking_ingest(*, dataset, items, progress=None):
        seen = []
        for position, item in enumerate(items, start=1):
            assert len(reads) == position  # the next file is not read before this one is handed over
            seen.append(item)
        return real_ingest(dataset=dataset, items=seen, progress=progress)

    monkeypatch.setattr(ingest_images, "item_read", counting_read)
    monkeypatch.setattr(ingest_images, "images_ingest", checking_ingest)
    run(folder, dataset=dataset.name)
    assert len(reads) == 6


def test_source_is_recorded_on_every_stored_image(dataset, folder):
    run(folder, dataset=dataset.name, source="flickr query 'tabby'")
    assert set(dataset.images.values_list("source", flat=True)) == {"flickr query 'tabby'"}


def test_an_unreadable_file_is_rejected_with_a_reason_and_the_rest_is_stored(dataset, folder):
    (folder / "dangling.jpg").symlink_to(folder / "gone.jpg")
    output = run(folder, dataset=dataset.name)
    assert f"{folder / 'dangling.jpg'}: cannot read the file" in output
    assert "stored 4 of 7 files" in output
