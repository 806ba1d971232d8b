"""The quality figures of a dataset from aggregated counts: precision estimated from gold with a Wilson
interval, the worker-accuracy histogram, votes needed per synset, the hardest synsets and the review load per
synset. Pure: counts in, plain rows out."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

HISTOGRAM_BINS = 10
HARDEST = 10


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval of a binomial proportion (95% at z = 1.96); None without observations. It
    stays inside [0, 1] and is sensible at 0/n and n/n, where the normal interval collapses."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes out of {n}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class GoldCheck:
    """How consensus decided the subjects of gold items of one question kind: `accepted` decisions, of which
    the gold answer is yes for `accepted_gold_yes`; `rejected` ones, of which gold says no for
    `rejected_gold_no`."""

    kind: str
    accepted: int = 0
    accepted_gold_yes: int = 0
    rejected: int = 0
    rejected_gold_no: int = 0


def gold_checks(rows: Iterable[tuple[str, str, bool, int]]) -> list[GoldCheck]:
    """Fold (question kind, decided state "accepted"/"rejected", gold answer, count) rows into one GoldCheck per
    kind, sorted by kind."""
    tally: dict[str, list[int]] = {}
    for kind, state, answer, n in rows:
        cell = tally.setdefault(kind, [0, 0, 0, 0])
        if state == "accepted":
            cell[0] += n
            cell[1] += n if answer else 0
        elif state == "rejected":
            cell[2] += n
            cell[3] += 0 if answer else n
    return [GoldCheck(kind, *tally[kind]) for kind in sorted(tally)]


def precision_row(check: GoldCheck) -> dict:
    """Precision (accepted decisions that gold confirms) and its negative counterpart, with Wilson intervals."""

    def share(hits: int, n: int) -> dict:
        interval = wilson_interval(hits, n)
        return {
            "value": None if n == 0 else hits / n,
            "low": None if interval is None else interval[0],
            "high": None if interval is None else interval[1],
        }

    return {
        "kind": check.kind,
        "accepted": check.accepted,
        "accepted_gold_yes": check.accepted_gold_yes,
        "rejected": check.rejected,
        "rejected_gold_no": check.rejected_gold_no,
        "precision": share(check.accepted_gold_yes, check.accepted),
        "negative_predictive_value": share(check.rejected_gold_no, check.rejected),
    }


def accuracy_histogram(bin_counts: Mapping[int, int], bins: int = HISTOGRAM_BINS) -> list[dict]:
    """Every bin of [0, 1] in `bins` equal steps with its number of workers, empty bins included. Keys are
    floor(accuracy * bins); an accuracy of exactly 1 (key `bins`) belongs to the last bin."""
    counts = [0] * bins
    for key, n in bin_counts.items():
        if key is None:
            continue
        counts[min(max(int(key), 0), bins - 1)] += n
    return [{"low": k / bins, "high": (k + 1) / bins, "workers": counts[k]} for k in range(bins)]


@dataclass(frozen=True)
class SynsetVotes:
    """Decided production questions of one (question kind, synset): how many, their votes, how many the vote
    cap sent to review."""

    kind: str
    wnid: str
    name: str
    questions: int
    votes: int
    review: int

    @property
    def votes_per_question(self) -> float:
        return self.votes / self.questions if self.questions else 0.0

    @property
    def review_share(self) -> float:
        return self.review / self.questions if self.questions else 0.0

    def as_row(self) -> dict:
        return {
            "kind": self.kind,
            "wnid": self.wnid,
            "name": self.name,
            "questions": self.questions,
            "votes": self.votes,
            "review": self.review,
            "votes_per_question": round(self.votes_per_question, 3),
            "review_share": round(self.review_share, 4),
        }


def hardest(rows: Iterable[SynsetVotes], k: int = HARDEST) -> list[SynsetVotes]:
    """The synsets consensus found hardest: most votes per decided question, then the largest share sent to
    review (ILSVRC §3.1.3: the votes needed grow with a synset's ambiguity), then wnid for a stable order."""
    return sorted(rows, key=lambda r: (-r.votes_per_question, -r.review_share, r.kind, r.wnid))[:k]


@dataclass(frozen=True)
class SynsetReviewLoad:
    """The decided production questions about one synset (every question kind): the images they are about,
    their votes, and the reviewer items among them, waiting in review (`review_open`) or decided by a reviewer
    (`review_decided`)."""

    wnid: str
    name: str
    images: int
    votes: int
    review_open: int
    review_decided: int

    @property
    def review_items(self) -> int:
        return self.review_open + self.review_decided

    @property
    def votes_per_image(self) -> float:
        return self.votes / self.images if self.images else 0.0

    @property
    def review_per_100_images(self) -> float:
        return 100 * self.review_items / self.images if self.images else 0.0

    def as_row(self) -> dict:
        return {
            "wnid": self.wnid,
            "name": self.name,
            "images": self.images,
            "votes": self.votes,
            "votes_per_image": round(self.votes_per_image, 3),
            "review_open": self.review_open,
            "review_decided": self.review_decided,
            "review_items": self.review_items,
            "review_per_100_images": round(self.review_per_100_images, 2),
        }


def boxed_only(synsets: Iterable[SynsetVotes], image_kinds: Collection[str]) -> set[str]:
    """The synsets with decided questions about boxes but none about whole images (counted by their box jobs)."""
    rows = list(synsets)
    return {r.wnid for r in rows} - {r.wnid for r in rows if r.kind in image_kinds}


def review_load(
    synsets: Iterable[SynsetVotes],
    image_kinds: Collection[str],
    reviewer_decided: Mapping[str, int],
    box_jobs: Mapping[str, int],
) -> list[SynsetReviewLoad]:
    """Fold the (kind, synset) rows into one row per synset, heaviest review load first (then wnid).

    Its images are its decided questions of the image-level kinds (`image_kinds`: one question per image), or,
    for a synset only boxed, its box jobs (one per image): box jobs follow from the images its questions found
    present, so counting both would count those images twice. Votes and questions waiting in review are every
    kind's; `reviewer_decided` (by wnid) are the questions a reviewer decided, `box_jobs` (by wnid) those of
    the synsets `boxed_only` names."""
    folded: dict[str, list] = {}
    for row in synsets:
        cell = folded.setdefault(row.wnid, [row.name, 0, 0, 0])
        cell[1] += row.questions if row.kind in image_kinds else 0
        cell[2] += row.votes
        cell[3] += row.review
    rows = [
        SynsetReviewLoad(
            wnid=wnid,
            name=name,
            images=image_questions or box_jobs.get(wnid, 0),
            votes=votes,
            review_open=review,
            review_decided=reviewer_decided.get(wnid, 0),
        )
        for wnid, (name, image_questions, votes, review) in folded.items()
    ]
    return sorted(rows, key=lambda r: (-r.review_per_100_images, r.wnid))
