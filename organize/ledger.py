"""The cost ledger's arithmetic (pure): money per stage and synset at the configured reward per answer plus the
provider's fee, and what two simpler designs would have cost for the same labels:

- fixed majority-5: every decided binary question asked of exactly five workers (the ILSVRC paper's point of
  comparison for its adaptive stopping, §3.1.3);
- flat per-class questions: every multi-labelled image asked about every class of its hierarchy instead of
  Algorithm 1's hierarchical questions (§3.3.3), at the votes per question actually observed.

Beside the money, the in-house reviewers' time: reviewer items at a set number of seconds each, in minutes (a
reviewer is not paid per item, so their time is not priced)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class UsageRow:
    stage: str  # the question or task kind the answers were for
    wnid: str  # the synset ("" when the task has none, e.g. a box drawn for a job)
    tasks: int
    answers: int
    worker_seconds: float
    decided_questions: int = 0  # binary questions decided (for the majority-5 comparison)


@dataclass(frozen=True)
class Pricing:
    rewards: dict[str, float]  # stage -> reward per answer
    default_reward: float
    fee_fraction: float  # the provider's fee on top of the rewards (MTurk: 0.2)

    def per_answer(self, stage: str) -> float:
        return self.rewards.get(stage, self.default_reward) * (1 + self.fee_fraction)


def ledger_compute(
    rows: list[UsageRow],
    pricing: Pricing,
    multilabel_images_x_classes: int = 0,
    multilabel_stage: str = "hierarchy",
) -> dict:
    out_rows = []
    totals = {"tasks": 0, "answers": 0, "worker_seconds": 0.0, "cost": 0.0}
    majority5 = 0.0
    stage_answers: dict[str, int] = {}
    stage_questions: dict[str, int] = {}
    for row in rows:
        cost = row.answers * pricing.per_answer(row.stage)
        out_rows.append({**asdict(row), "cost": round(cost, 4)})
        totals["tasks"] += row.tasks
        totals["answers"] += row.answers
        totals["worker_seconds"] += row.worker_seconds
        totals["cost"] += cost
        majority5 += 5 * row.decided_questions * pricing.per_answer(row.stage)
        stage_answers[row.stage] = stage_answers.get(row.stage, 0) + row.answers
        stage_questions[row.stage] = stage_questions.get(row.stage, 0) + row.tasks
    # Binary work that is not a decided question (box drawing, fixed votes) costs the same in every design.
    undecided_work = sum(r.answers * pricing.per_answer(r.stage) for r in rows if not r.decided_questions)
    per_question = (
        stage_answers.get(multilabel_stage, 0) / stage_questions[multilabel_stage]
        if stage_questions.get(multilabel_stage)
        else 5.0
    )
    flat = multilabel_images_x_classes * per_question * pricing.per_answer(multilabel_stage)
    hierarchical = sum(r.answers * pricing.per_answer(r.stage) for r in rows if r.stage == multilabel_stage)
    totals["cost"] = round(totals["cost"], 4)
    return {
        "rows": out_rows,
        "totals": totals,
        "alternatives": {
            "fixed_majority_5": round(majority5 + undecided_work, 4),
            "multilabel_hierarchical": round(hierarchical, 4),
            "multilabel_flat_per_class": round(flat, 4),
            "flat_votes_per_question": round(per_question, 3),
        },
    }


def reviewer_minutes(*, decided: int, open_items: int, seconds_per_item: int) -> dict:
    """Reviewer time at `seconds_per_item` an item: spent on the decided items, still to come for the open ones
    (waiting or leased), and both together."""
    spent = decided * seconds_per_item / 60
    expected = open_items * seconds_per_item / 60
    return {
        "decided_items": decided,
        "open_items": open_items,
        "seconds_per_item": seconds_per_item,
        "minutes_spent": round(spent, 1),
        "minutes_expected": round(expected, 1),
        "minutes_total": round(spent + expected, 1),
    }
