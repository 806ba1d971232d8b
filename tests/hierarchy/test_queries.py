"""Query expansion (hierarchy/queries.py) on hand-made concepts, and the candidate_queries command."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from hierarchy.models import Concept, ConceptEdge
from hierarchy.queries import (
    PAIR,
    PARENT,
    SCENE,
    SYNONYM,
    TRANSLATION,
    ConceptTerms,
    concept_queries,
    lemmas,
    pairwise_queries,
    parent_words,
    scene_queries,
    translation_table,
)

WHIPPET = ConceptTerms("n02091134", "whippet", "a small slender dog of greyhound type developed in England")
GREYHOUND = ConceptTerms("n02090622", "greyhound", "a tall slender dog of an ancient breed noted for speed")
HOUND = ConceptTerms("n02087551", "hound, hound dog", "any of several breeds of dog used for hunting")
DOG = ConceptTerms("n02084071", "dog, domestic dog, Canis familiaris", "a member of the genus Canis")


def texts(queries):
    return [q.text for q in queries]


def test_whippet_gets_the_parent_words_its_gloss_uses():
    queries = concept_queries(WHIPPET, [GREYHOUND, HOUND, DOG])
    assert texts(queries) == ["whippet", "whippet greyhound", "whippet dog"]
    assert [q.kind for q in queries] == [SYNONYM, PARENT, PARENT]


def test_a_concept_without_parents_gets_its_synonyms_only():
    dog = concept_queries(DOG)
    assert texts(dog) == ["dog", "domestic dog", "Canis familiaris"]
    assert {q.kind for q in dog} == {SYNONYM}


def test_a_concept_without_a_gloss_adds_no_parent_words():
    bare = ConceptTerms("n1", "whippet")
    assert texts(concept_queries(bare, [GREYHOUND, DOG])) == ["whippet"]


def test_parent_words_absent_from_the_gloss_are_not_appended():
    assert parent_words(ConceptTerms("n1", "tabby", "a cat with a striped coat"), [DOG, HOUND]) == ()


def test_every_synonym_is_expanded_and_a_word_the_synonym_holds_is_not_repeated():
    concept = ConceptTerms("n1", "hound dog, coonhound", "a dog trained to hunt raccoons")
    queries = concept_queries(concept, [DOG])
    assert texts(queries) == ["hound dog", "coonhound", "coonhound dog"]


def test_translations_are_added_by_language_and_repeats_dropped():
    queries = concept_queries(WHIPPET, [DOG], {"fr": ["lévrier whippet"], "de": ["Whippet", "Windhund"]})
    translated = [(q.text, q.language) for q in queries if q.kind == TRANSLATION]
    assert translated == [("Windhund", "de"), ("lévrier whippet", "fr")]  # "Whippet" repeats the synonym


def test_lemmas_split_the_wordnet_list_with_underscores_as_spaces():
    assert lemmas("great_white_shark, white shark,  , Great white shark") == (
        "great white shark",
        "white shark",
    )


def test_scene_queries_are_deduplicated_and_the_default_list_holds_the_papers_examples():
    assert texts(scene_queries(["kitchen", " Kitchen ", "Australian zoo"])) == ["kitchen", "Australian zoo"]
    defaults = texts(scene_queries())
    assert "kitchenette" in defaults and "Australian zoo" in defaults
    assert {q.kind for q in scene_queries()} == {SCENE}


def test_pairwise_queries_pair_siblings_and_named_pairs_only():
    classes = [
        ConceptTerms("t", "tiger, Panthera tigris"),
        ConceptTerms("l", "lion"),
        ConceptTerms("c", "car, auto"),
        ConceptTerms("b", "bicycle"),
    ]
    parents = {"t": ["q:cat"], "l": ["q:cat"], "c": ["q:vehicle"], "b": ["q:vehicle"]}
    pairs = pairwise_queries(classes, parents, extra_pairs=[("l", "b"), ("b", "l"), ("l", "missing")])
    assert [(q.wnid, q.text, q.kind) for q in pairs] == [
        ("t+l", "tiger lion", PAIR),
        ("c+b", "car bicycle", PAIR),
        ("l+b", "lion bicycle", PAIR),
    ]
    assert len(pairwise_queries(classes, parents, limit=1)) == 1


def test_translation_table_parses_and_names_a_bad_line():
    table = translation_table(["wnid\tlanguage\tterm\n", "n1\tde\tHund\n", "# note\n", "n1\tde\tRüde\n"])
    assert table == {"n1": {"de": ["Hund", "Rüde"]}}
    with pytest.raises(ValueError, match="line 2"):
        translation_table(["n1\tde\tHund\n", "n1 de Hund\n"])


@pytest.fixture
def whippet_tree(db):
    made = {
        t.wnid: Concept.objects.create(wnid=t.wnid, name=t.name, gloss=t.gloss)
        for t in (WHIPPET, GREYHOUND, HOUND, DOG)
    }
    for child, parent in ((WHIPPET, GREYHOUND), (GREYHOUND, HOUND), (HOUND, DOG)):
        ConceptEdge.objects.create(child=made[child.wnid], parent=made[parent.wnid])
    return made


def test_command_walks_the_stored_ancestors_and_prints_json(whippet_tree, tmp_path, capsys):
    table = tmp_path / "t.tsv"
    table.write_text("n02091134\tit\tlevriero whippet\n", encoding="utf-8")
    call_command(
        "candidate_queries", "--concept", WHIPPET.wnid, "--translations", str(table), "--format", "json"
    )
    rows = json.loads(capsys.readouterr().out)
    assert [(r["query"], r["kind"]) for r in rows] == [
        ("whippet", "synonym"),
        ("whippet greyhound", "parent"),
        ("whippet dog", "parent"),
        ("levriero whippet", "translation"),
    ]


def test_command_csv_has_a_header_and_one_line_per_query(whippet_tree, capsys):
    call_command("candidate_queries", "--concept", WHIPPET.wnid, "--format", "csv")
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].strip() == "wnid,query,kind,language"
    assert len(lines) == 4


def test_command_refuses_an_unknown_concept_and_a_bad_table(whippet_tree, tmp_path):
    with pytest.raises(CommandError, match="no concept 'n99999999'"):
        call_command("candidate_queries", "--concept", "n99999999")
    bad = tmp_path / "bad.tsv"
    bad.write_text("n02091134 de Hund\n", encoding="utf-8")
    with pytest.raises(CommandError, match="line 1"):
        call_command("candidate_queries", "--concept", WHIPPET.wnid, "--translations", str(bad))


def test_command_prints_scene_and_pair_queries_of_a_loaded_hierarchy(db, capsys):
    from hierarchy.fixture import load_fixture
    from hierarchy.services import hierarchy_load

    hierarchy_load(load_fixture("fixtures/hierarchies/voc20.json"))
    call_command(
        "candidate_queries", "--hierarchy", "PASCAL VOC 20", "--format", "json", "--pairs-limit", "5"
    )
    rows = json.loads(capsys.readouterr().out)
    kinds = [r["kind"] for r in rows]
    assert kinds.count("pair") == 5 and "scene" in kinds


AIRPLANE_GLOSS = "an aircraft that has a fixed wing and is powered by propellers or jets"


def test_det200_airplane_is_searched_by_every_lemma_of_its_synset(db, capsys):
    from hierarchy.fixture import load_fixture
    from hierarchy.services import hierarchy_load

    hierarchy_load(load_fixture("fixtures/hierarchies/ilsvrc_det200.json"))
    call_command("candidate_queries", "--concept", "n02691156", "--format", "json")
    rows = json.loads(capsys.readouterr().out)
    assert [(r["query"], r["kind"]) for r in rows] == [
        ("airplane", "synonym"),
        ("aeroplane", "synonym"),
        ("plane", "synonym"),
    ]


def test_lemmas_reach_a_concept_a_dataset_uses_without_renaming_it(db):
    from hierarchy.fixture import load_fixture
    from hierarchy.services import hierarchy_load
    from tests import factories

    used = Concept.objects.create(wnid="n02691156", name="airplane", gloss=AIRPLANE_GLOSS)
    factories.DatasetFactory().concepts.add(used)
    hierarchy_load(load_fixture("fixtures/hierarchies/ilsvrc_det200.json"))  # no ConceptConflict
    used.refresh_from_db()
    assert (used.name, used.lemmas) == ("airplane", ["aeroplane", "plane"])
