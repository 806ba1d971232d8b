"""The precedence rule of final labels (pure): the strongest pipeline with a verdict decides, and withdrawing
it lets the next one speak."""

from annotation.final_evidence import evidence_entry, resolve


def test_precedence_is_boxes_then_consensus_then_multilabel_then_fixed_votes():
    evidence = {
        "binary_vote": evidence_entry(True, yes=2, no=1),
        "multilabel": evidence_entry(False, via="q:animal"),
    }
    assert (resolve(evidence).present, resolve(evidence).source) == (False, "multilabel")
    evidence["consensus"] = evidence_entry(True, yes=4, p=0.998)
    resolved = resolve(evidence)
    assert (resolved.present, resolved.source, resolved.probability, resolved.yes) == (
        True,
        "consensus",
        0.998,
        4,
    )
    evidence["consensus"] = evidence_entry(False, no=5, p=0.001)
    evidence["box"] = evidence_entry(True, boxes=2)
    resolved = resolve(evidence)
    assert (resolved.present, resolved.source, resolved.boxes) == (True, "box", 2)


def test_withdrawn_or_empty_evidence_lets_the_next_pipeline_decide_and_none_means_unknown():
    evidence = {"box": evidence_entry(True, boxes=0), "multilabel": evidence_entry(False)}
    assert resolve(evidence).source == "multilabel", "no final box left: the box verdict is void"
    del evidence["multilabel"]
    assert resolve(evidence) is None
    assert resolve({}) is None
