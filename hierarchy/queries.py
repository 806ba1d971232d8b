"""Search queries for collecting a concept's candidate images (ImageNet §3.1; ILSVRC §3.1.2 and §3.3.2). Pure:
takes concepts as plain records and returns the queries; organizers run them against their own search service.

- Synonyms: every lemma of the synset (a concept's name is its comma-separated WordNet lemma list).
- Parent words (ImageNet §3.1): a word of an ancestor synset appended to each synonym when that word also
  appears in the concept's own gloss ("whippet", gloss "a small slender dog of greyhound type" -> "whippet dog",
  "whippet greyhound"); a word every query already holds adds nothing.
- Translations: the concept's terms in other languages, when a translation table was loaded.
- Detection sets (ILSVRC §3.3.2): scene queries ("kitchenette", "Australian zoo") that find cluttered images with
  many objects, and pairwise queries ("tiger lion") of classes that share a parent, which find images holding both.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# Query kinds, as the command prints them and an import row's `query` provenance may carry them.
SYNONYM, PARENT, TRANSLATION, SCENE, PAIR = "synonym", "parent", "translation", "scene", "pair"

# Scene categories in the spirit of ILSVRC's detection queries (§3.3.2, scene names after SUN): places where
# many everyday objects are seen together. Organizers pass their own list to replace it.
DEFAULT_SCENES: tuple[str, ...] = (
    "kitchen",
    "kitchenette",
    "living room",
    "dining room",
    "bedroom",
    "bathroom",
    "office",
    "classroom",
    "garage",
    "workshop",
    "supermarket",
    "market stall",
    "restaurant",
    "cafe",
    "bar",
    "street",
    "crosswalk",
    "parking lot",
    "highway",
    "train station",
    "airport",
    "harbor",
    "beach",
    "park",
    "playground",
    "farm",
    "barn",
    "zoo",
    "Australian zoo",
    "aquarium",
    "forest",
    "lake shore",
    "garden",
    "picnic area",
    "stadium",
    "gym",
    "concert stage",
    "music studio",
    "campsite",
    "backyard",
)

_WORD = re.compile(r"[\w'-]+", re.UNICODE)


@dataclass(frozen=True)
class ConceptTerms:
    """What query expansion needs of a concept: its id, its lemma list ("dog, domestic dog"), its gloss and
    the synset's further lemmas (`synonyms`: a display name such as "airplane" lists one of three)."""

    wnid: str
    name: str
    gloss: str = ""
    synonyms: tuple[str, ...] = ()

    @property
    def lemmas(self) -> tuple[str, ...]:
        return lemmas(",".join((self.name, *self.synonyms)))


@dataclass(frozen=True)
class Query:
    """One search query and where it came from (`kind`, and the language of a translation)."""

    wnid: str
    text: str
    kind: str
    language: str = "en"

    def as_dict(self) -> dict[str, str]:
        return {"wnid": self.wnid, "query": self.text, "kind": self.kind, "language": self.language}


def lemmas(name: str) -> tuple[str, ...]:
    """The lemmas of a comma-separated WordNet word list, underscores as spaces, each once (case-insensitive)."""
    seen: dict[str, str] = {}
    for part in name.split(","):
        lemma = " ".join(part.replace("_", " ").split())
        if lemma and lemma.casefold() not in seen:
            seen[lemma.casefold()] = lemma
    return tuple(seen.values())


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


def parent_words(concept: ConceptTerms, ancestors: Sequence[ConceptTerms]) -> tuple[str, ...]:
    """Ancestor lemmas (whole lemmas, and the head word of a multi-word lemma) that appear in the concept's
    gloss, nearest ancestor first. ImageNet's rule: only a parent word the gloss itself uses disambiguates."""
    gloss = " ".join(concept.gloss.casefold().split())
    gloss_words = _words(gloss)
    found: dict[str, str] = {}
    for ancestor in ancestors:
        for lemma in ancestor.lemmas:
            candidates = [lemma]
            head = lemma.split()[-1]
            if head != lemma:
                candidates.append(head)
            for word in candidates:
                key = word.casefold()
                phrase_in_gloss = (
                    key in gloss_words if " " not in key else re.search(rf"\b{re.escape(key)}\b", gloss)
                )
                if phrase_in_gloss and key not in found:
                    found[key] = word
    return tuple(found.values())


def concept_queries(
    concept: ConceptTerms,
    ancestors: Sequence[ConceptTerms] = (),
    translations: Mapping[str, Sequence[str]] | None = None,
) -> list[Query]:
    """The search queries for one concept: its synonyms, each synonym with every parent word of
    `parent_words` (skipped when the synonym holds the word already), then its translations by language
    (`{"de": ["Windhund"]}`). Each text appears once, first kind wins."""
    out: list[Query] = []
    seen: set[str] = set()

    def add(text: str, kind: str, language: str = "en") -> None:
        text = " ".join(text.split())
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(Query(concept.wnid, text, kind, language))

    synonyms = concept.lemmas
    for synonym in synonyms:
        add(synonym, SYNONYM)
    for word in parent_words(concept, ancestors):
        for synonym in synonyms:
            if word.casefold() not in _words(synonym):
                add(f"{synonym} {word}", PARENT)
    for language, terms in sorted((translations or {}).items()):
        for term in terms:
            for lemma in lemmas(term):
                add(lemma, TRANSLATION, language)
    return out


def scene_queries(scenes: Iterable[str] = DEFAULT_SCENES) -> list[Query]:
    """Scene-level queries for a detection set (ILSVRC §3.3.2): one per scene name, not tied to a class."""
    seen: set[str] = set()
    out = []
    for scene in scenes:
        text = " ".join(scene.split())
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(Query("", text, SCENE))
    return out


def pairwise_queries(
    classes: Sequence[ConceptTerms],
    parents: Mapping[str, Iterable[str]],
    *,
    extra_pairs: Iterable[tuple[str, str]] = (),
    limit: int | None = None,
) -> list[Query]:
    """Pairwise queries for a detection set (ILSVRC §3.3.2, "tiger lion"): the first lemmas of two classes that
    share a parent (siblings are the pairs likely to be confused and seen together), plus `extra_pairs` of
    wnids an organizer names; classes in set order, each pair once. The query's wnid is "WNID1+WNID2"."""
    by_wnid = {c.wnid: c for c in classes}
    order = {c.wnid: i for i, c in enumerate(classes)}
    pairs: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()

    def add(a: str, b: str) -> None:
        if a == b or a not in by_wnid or b not in by_wnid:
            return
        key = (a, b) if order[a] < order[b] else (b, a)
        if key not in seen:
            seen.add(key)
            pairs.append(key)

    for a, b in itertools.combinations([c.wnid for c in classes], 2):
        if set(parents.get(a, ())) & set(parents.get(b, ())):
            add(a, b)
    for a, b in extra_pairs:
        add(a, b)
    out = []
    for a, b in pairs[:limit]:
        name_a, name_b = by_wnid[a].lemmas[:1] or (a,), by_wnid[b].lemmas[:1] or (b,)
        out.append(Query(f"{a}+{b}", f"{name_a[0]} {name_b[0]}", PAIR))
    return out


def translation_table(lines: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """Parse a translation table: tab-separated `wnid, language, term` lines (a header line starting with
    "wnid" and blank or #-comment lines are skipped) -> {wnid: {language: [terms]}}. ValueError names the first
    bad line."""
    table: dict[str, dict[str, list[str]]] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\n")
        if not line.strip() or line.startswith("#") or (number == 1 and line.lower().startswith("wnid")):
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not all(f.strip() for f in fields):
            raise ValueError(f"line {number}: expected 'wnid<TAB>language<TAB>term', got {line[:80]!r}")
        wnid, language, term = (f.strip() for f in fields)
        table.setdefault(wnid, {}).setdefault(language, []).append(term)
    return table
