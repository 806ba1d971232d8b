"""Algorithm 1 engine: propagation over DAGs, resumability, termination and the "never below a no" rule."""

import json
import random

import pytest

from hierarchy.algorithm import (
    DagError,
    QuestionDag,
    QuestionNode,
    Source,
    answer,
    breadth_first,
    candidates,
    is_done,
    leaf_labels,
    next_question,
    present_leaves,
    run,
    start,
)
from hierarchy.algorithm import LabelingState as State


def diamond() -> QuestionDag:
    # animal and water-thing both lead to whale (a diamond); dog only under animal; boat only under water.
    return QuestionDag(
        [
            QuestionNode("animal"),
            QuestionNode("water"),
            QuestionNode("person", leaf=True),
            QuestionNode("dog", ("animal",), leaf=True),
            QuestionNode("whale", ("animal", "water"), leaf=True),
            QuestionNode("boat", ("water",), leaf=True),
        ]
    )


def deep_tree() -> QuestionDag:
    return QuestionDag(
        [
            QuestionNode("organism"),
            QuestionNode("mammal", ("organism",)),
            QuestionNode("bird", ("organism",), leaf=True),
            QuestionNode("dog", ("mammal",), leaf=True),
            QuestionNode("cat", ("mammal",), leaf=True),
            QuestionNode("vehicle"),
            QuestionNode("car", ("vehicle",), leaf=True),
            QuestionNode("bus", ("vehicle",), leaf=True),
        ]
    )


def oracle(dag: QuestionDag, present: set[str]):
    asked: list[str] = []

    def reply(node: str) -> bool:
        asked.append(node)
        return bool(present & (set(dag.leaves_under(node)) | {node}))

    return reply, asked


def test_start_offers_only_roots_in_dag_order():
    assert candidates(start(diamond())) == ("animal", "water", "person")


def test_yes_adds_children_and_no_prunes_every_descendant_unasked():
    state = answer(start(deep_tree()), "organism", False)
    dog = state.decisions["dog"]
    assert (dog.present, dog.source, dog.via) == (False, Source.NO_FROM_ANCESTOR, "organism")
    assert "mammal" not in candidates(state) and "dog" not in candidates(state)
    state = answer(state, "vehicle", True)
    assert candidates(state) == ("car", "bus")


def test_no_on_one_parent_of_a_diamond_prunes_the_shared_child_even_when_the_other_parent_is_yes():
    state = answer(start(diamond()), "animal", True)
    assert "whale" in candidates(state)
    state = answer(state, "water", False)
    whale = state.decisions["whale"]
    assert (whale.present, whale.source, whale.via) == (False, Source.NO_FROM_ANCESTOR, "water")
    assert "whale" not in candidates(state)


def test_yes_on_a_child_decides_its_other_parents_yes_without_asking():
    state = answer(start(diamond()), "animal", True)
    state = answer(state, "whale", True)
    water = state.decisions["water"]
    assert (water.present, water.source, water.via) == (True, Source.YES_FROM_DESCENDANT, "whale")
    assert candidates(state) == ("person", "dog", "boat")


def test_answering_a_decided_node_is_refused():
    state = answer(start(diamond()), "water", False)
    with pytest.raises(ValueError, match="already decided"):
        answer(state, "boat", True)


@pytest.mark.parametrize("seed", range(30))
def test_random_dags_end_with_every_leaf_labelled_and_nothing_asked_below_a_no(seed):
    rng = random.Random(seed)
    nodes: list[QuestionNode] = []
    for i in range(rng.randint(3, 6)):
        nodes.append(QuestionNode(f"r{i}"))
    for i in range(rng.randint(4, 12)):
        parents = tuple(rng.sample([n.id for n in nodes], k=min(len(nodes), rng.randint(1, 2))))
        nodes.append(QuestionNode(f"m{i}", parents))
    internal = [n.id for n in nodes]
    for i in range(rng.randint(10, 25)):
        parents = tuple(rng.sample(internal, k=rng.randint(1, 3)))
        nodes.append(QuestionNode(f"l{i}", parents, leaf=True))
    # Internal nodes without children become leaves so the DAG is valid.
    used = {p for n in nodes for p in n.parents}
    nodes = [n if n.leaf or n.id in used else QuestionNode(n.id, n.parents, leaf=True) for n in nodes]
    dag = QuestionDag(nodes)
    present = {leaf for leaf in dag.leaves if rng.random() < 0.15}
    reply, asked = oracle(dag, present)
    state = run(start(dag), reply)
    assert is_done(state) and candidates(state) == ()
    labels = leaf_labels(state)
    assert {leaf for leaf, label in labels.items() if label.present} == present
    for i, node in enumerate(asked):
        earlier_no = {n for n, yes in state.answers[:i] if not yes}
        assert not (dag.ancestors(node) & earlier_no), f"{node} asked below a no"
    assert len(asked) == len(set(asked)) == len(state.answers)


def test_every_leaf_label_has_provenance():
    dag = deep_tree()
    reply, asked = oracle(dag, {"dog"})
    labels = leaf_labels(run(start(dag), reply))
    assert labels["dog"].source == Source.ASKED and labels["dog"].present
    assert labels["car"].source == Source.NO_FROM_ANCESTOR and labels["car"].via == "vehicle"
    assert labels["cat"].source == Source.ASKED and not labels["cat"].present
    assert asked == ["organism", "vehicle", "mammal", "bird", "dog", "cat"]


def test_leaf_labels_refuses_an_unfinished_image():
    with pytest.raises(ValueError, match="undecided"):
        leaf_labels(answer(start(deep_tree()), "organism", True))


def test_state_resumes_from_its_json_form_midway_and_finishes_identically():
    dag = deep_tree()
    reply, _ = oracle(dag, {"cat", "bus"})
    straight = run(start(dag), reply)
    state = start(dag)
    for _ in range(3):
        node = next_question(state)
        assert node is not None
        state = answer(state, node, reply(node))
    saved = json.loads(json.dumps(state.to_dict()))
    resumed = State.from_dict(saved, dag)
    assert resumed.decisions == state.decisions and candidates(resumed) == candidates(state)
    finished = run(resumed, reply)
    assert finished.decisions == straight.decisions and finished.answers == straight.answers


def test_resuming_on_a_different_hierarchy_is_refused():
    saved = answer(start(deep_tree()), "organism", True).to_dict()
    with pytest.raises(ValueError, match="hierarchy"):
        State.from_dict(saved, diamond())


def test_breadth_first_asks_shallow_candidates_before_deep_ones():
    dag = deep_tree()
    state = answer(start(dag), "organism", True)
    assert breadth_first(state) == "vehicle"


def test_an_order_choosing_a_decided_node_is_rejected():
    state = answer(start(diamond()), "water", False)
    with pytest.raises(ValueError, match="not an undecided node"):
        next_question(state, lambda s: "boat")


def test_shortcut_below_the_frontier_is_allowed_and_infers_ancestors():
    state = answer(start(deep_tree()), "dog", True)
    assert state.decisions["organism"].source == Source.YES_FROM_DESCENDANT
    assert state.decisions["mammal"].via == "dog"
    assert present_leaves(state) == ("dog",)


def test_invalid_dags_name_every_problem():
    with pytest.raises(DagError) as caught:
        QuestionDag(
            [
                QuestionNode("a"),
                QuestionNode("a", leaf=True),
                QuestionNode("x", ("ghost",), leaf=True),
                QuestionNode("empty", ("a",)),
            ]
        )
    text = " ".join(caught.value.problems)
    assert "duplicate node id 'a'" in text and "'ghost'" in text and "'empty'" in text


def test_cycles_are_refused():
    with pytest.raises(DagError, match="cycle"):
        QuestionDag(
            [QuestionNode("a", ("b",)), QuestionNode("b", ("a",)), QuestionNode("l", ("a",), leaf=True)]
        )


def test_restricting_to_some_leaves_drops_unneeded_questions_and_bypasses_single_child_ones():
    sub = deep_tree().restricted_to(["dog", "cat", "car"])
    # bird and bus go; organism (only mammal left) and vehicle (only car left) would never save a question.
    assert set(sub) == {"mammal", "dog", "cat", "car"}
    assert sub.roots == ("mammal", "car")
    assert sub.node("dog").parents == ("mammal",)
