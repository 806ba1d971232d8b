"""Hierarchy fixture format: the shipped fixtures validate; broken files are refused with every problem named."""

import copy
from pathlib import Path

import pytest

from hierarchy.fixture import FixtureError, fixture_to_dict, load_fixture, parse_fixture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "hierarchies"


def small() -> dict:
    return {
        "format": "crowdlabel-hierarchy/1",
        "name": "tiny",
        "version": "1",
        "description": "",
        "nodes": [
            {"id": "q:animal", "name": "animal", "question": "Is there ANY animal?", "parents": []},
            {
                "id": "n02084071",
                "name": "dog",
                "question": "Is there a dog?",
                "parents": ["q:animal"],
                "leaf": True,
            },
            {
                "id": "n00007846",
                "name": "person",
                "question": "Is there a person?",
                "parents": [],
                "leaf": True,
            },
        ],
    }


def errors_of(data) -> list[str]:
    with pytest.raises(FixtureError) as caught:
        parse_fixture(data)
    return caught.value.errors


def test_small_fixture_parses_and_round_trips():
    fixture = parse_fixture(small())
    assert [leaf.wnid for leaf in fixture.leaves] == ["n02084071", "n00007846"]
    assert fixture.nodes[0].wnid is None
    assert parse_fixture(fixture_to_dict(fixture)) == fixture
    assert fixture.to_dag().roots == ("q:animal", "n00007846")


@pytest.mark.parametrize(
    ("filename", "leaves", "roots"), [("voc20.json", 20, 4), ("ilsvrc_det200.json", 200, 12)]
)
def test_shipped_fixtures_validate_with_unique_wordnet_leaves(filename, leaves, roots):
    fixture = load_fixture(FIXTURES / filename)
    wnids = [leaf.wnid for leaf in fixture.leaves]
    assert len(wnids) == leaves and len(set(wnids)) == leaves and None not in wnids
    dag = fixture.to_dag()
    assert len(dag.roots) == roots
    assert all(node.question.endswith("?") for node in fixture.nodes)
    assert all(leaf.gloss for leaf in fixture.leaves)


def test_det200_fixture_keeps_detection_order_and_known_ids():
    leaves = load_fixture(FIXTURES / "ilsvrc_det200.json").leaves
    assert (leaves[0].name, leaves[0].wnid) == ("accordion", "n02672831")
    assert (leaves[27].name, leaves[27].wnid) == ("bow tie", "n02883205")
    assert (leaves[28].name, leaves[28].wnid) == ("bow", "n02879718")
    assert (leaves[199].name, leaves[199].wnid) == ("zebra", "n02391049")


def test_det200_tree_is_shallow_with_moderate_branching():
    dag = load_fixture(FIXTURES / "ilsvrc_det200.json").to_dag()
    assert max(dag.depth.values()) <= 4
    branching = [len(dag.children[n]) for n in dag if not dag.node(n).leaf]
    assert max(branching) <= 12 and sum(branching) / len(branching) >= 3


def test_voc20_fixture_is_in_devkit_order():
    names = [leaf.name for leaf in load_fixture(FIXTURES / "voc20.json").leaves]
    assert (
        names[:3] == ["aeroplane", "bicycle", "bird"] and names[-1] == "tvmonitor" and names[14] == "person"
    )


def test_duplicate_ids_are_named():
    data = small()
    data["nodes"].append(copy.deepcopy(data["nodes"][1]))
    assert any("'n02084071'" in e and "duplicate" in e for e in errors_of(data))


def test_unknown_parent_and_orphan_leaf_are_named():
    data = small()
    data["nodes"][1]["parents"] = ["q:ghost"]
    errors = errors_of(data)
    assert any("unknown parent 'q:ghost'" in e for e in errors)
    assert any("'n02084071'" in e and "no path to a root" in e for e in errors)


def test_cycle_is_named_with_its_members_and_its_leaf_has_no_root():
    data = small()
    data["nodes"][0]["parents"] = ["q:pet"]
    data["nodes"].append({"id": "q:pet", "name": "pet", "question": "A pet?", "parents": ["q:animal"]})
    errors = errors_of(data)
    assert any(e.startswith("cycle:") and "q:animal" in e and "q:pet" in e for e in errors)
    assert any("'n02084071'" in e and "no path to a root" in e for e in errors)


def test_all_problems_are_collected_in_one_error():
    data = small()
    data["name"] = ""
    data["nodes"][0]["question"] = ""
    data["nodes"][2]["id"] = "person"  # neither a WordNet id nor a question id
    data["nodes"].append({"id": "q:lonely", "name": "x", "question": "X?", "parents": [], "colour": 1})
    errors = errors_of(data)
    assert len(errors) >= 4
    joined = "\n".join(errors)
    for fragment in ("'name' is missing", "'q:animal'", "'person' is neither", "'q:lonely'", "colour"):
        assert fragment in joined


def test_leaf_must_be_a_wordnet_concept_and_leaf_must_not_have_children():
    data = small()
    data["nodes"].append({"id": "q:thing", "name": "thing", "question": "A thing?", "leaf": True})
    data["nodes"][1]["leaf"] = True
    data["nodes"].append(
        {"id": "n02085374", "name": "toy dog", "question": "Toy dog?", "parents": ["n02084071"], "leaf": True}
    )
    errors = errors_of(data)
    assert any("'q:thing'" in e and "WordNet id" in e for e in errors)
    assert any("'n02084071'" in e and "marked leaf but has children" in e for e in errors)


def test_unreadable_file_is_refused(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(FixtureError, match="broken.json"):
        load_fixture(path)
