"""The interim decision rule for hierarchy questions: a sequential vote biased to "yes". Pure Python.

Stands in for the consensus engine until hierarchy questions go through it (see multilabel/asking.py): one
answer wins when it leads the other by its margin. A false "no" on a high-level question prunes a whole subtree
unasked (ILSVRC §3.3.3), while a false "yes" only costs the questions below it, so "no" needs a larger lead than
"yes" there, and a question still open at the vote cap is decided "yes". Leaves need a lead of 3 either way:
at ~15% wrong votes (10% spammers among the crowd) that keeps both errors near 0.5% per question.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VoteRule:
    yes_margin: int
    no_margin: int
    max_votes: int
    at_cap: bool = True  # the answer when the cap is reached without a decision (ties included)

    def __post_init__(self) -> None:
        if min(self.yes_margin, self.no_margin) < 1 or self.max_votes < max(self.yes_margin, self.no_margin):
            raise ValueError("margins must be >= 1 and reachable within max_votes")


HIGH_LEVEL = VoteRule(yes_margin=2, no_margin=3, max_votes=7, at_cap=True)
LEAF = VoteRule(yes_margin=3, no_margin=3, max_votes=9, at_cap=True)


def rule_for(leaf: bool) -> VoteRule:
    return LEAF if leaf else HIGH_LEVEL


def vote_outcome(yes: int, no: int, rule: VoteRule) -> bool | None:
    """The decided answer after `yes` and `no` votes, or None when another vote is needed."""
    if yes - no >= rule.yes_margin:
        return True
    if no - yes >= rule.no_margin:
        return False
    if yes + no >= rule.max_votes:
        return rule.at_cap if yes == no else yes > no
    return None
