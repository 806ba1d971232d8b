"""Cost of full multi-label annotation: flat questions vs ILSVRC Algorithm 1 (§3.3.3) vs a correlation-aware order
vs Algorithm 1 guided by a model's image-level class scores (multilabel/model_scores.py).

Pure simulation (numpy): synthetic images whose present classes co-occur by scene, and a crowd whose every
question is decided by a sequential vote (stop when one answer leads by a margin). Prints questions and votes per
image, leaf accuracy, precision and recall, on ILSVRC DET 200 and PASCAL VOC 20, and the cost as K grows.

The simulated scorer gives every (image, class) a logit: N(0, 1) for an absent class, N(mu, 1) for a present one,
mu set so that a present class ranks among its image's top 5 with probability --top5 (0.8 by default); the score is
the logit's sigmoid, shifted so that an absent class scores about 0.002. Skips are calibrated on --calibration
images labelled by the same simulated crowd (breadth-first, no skips), as decided images of the dataset would be.

Run: python bench/multilabel_cost.py [--quick] [--images N] [--seed S] [--top5 0.8] [--calibration N]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from hierarchy.algorithm import (  # noqa: E402
    LabelingState,
    Order,
    QuestionDag,
    answer,
    breadth_first,
    candidates,
    present_leaves,
    run,
    start,
)
from hierarchy.fixture import load_fixture  # noqa: E402
from multilabel.cooccurrence import CooccurrenceModel, CorrelationOrder  # noqa: E402
from multilabel.model_scores import (  # noqa: E402
    ScoreCalibration,
    ScoreOrder,
    SkipRule,
    advance,
    calibration_fit,
    node_scores,
)
from multilabel.risk_budget import BudgetRule, RiskCalibration, advance_budget, risk_fit  # noqa: E402

FIXTURES = ROOT / "fixtures" / "hierarchies"

# fmt: off
# Scenes: groups of classes that appear together, with the chance that a person is also in the picture.
DET_SCENES: dict[str, tuple[float, float, list[str]]] = {
    # name: (scene weight, P(person), classes most-typical first)
    "street": (3.0, 0.7, ["car", "bus", "traffic light", "bicycle", "motorcycle", "backpack", "purse", "plastic bag", "cart", "unicycle", "dog"]),
    "kitchen": (2.0, 0.4, ["cup or mug", "bowl", "refrigerator", "stove", "microwave", "toaster", "coffee maker", "frying pan", "pitcher", "spatula", "ladle", "strainer", "dishwasher", "plate rack", "salt or pepper shaker", "can opener", "waffle iron", "water bottle"]),
    "dining": (1.5, 0.6, ["table", "chair", "wine bottle", "cup or mug", "bowl", "pizza", "hamburger", "hotdog", "burrito", "salt or pepper shaker", "corkscrew", "cocktail shaker", "guacamole", "pitcher"]),
    "fruit stand": (1.0, 0.3, ["apple", "orange", "banana", "lemon", "strawberry", "pineapple", "pomegranate", "fig", "bell pepper", "cucumber", "head cabbage", "artichoke", "mushroom"]),
    "snack": (0.6, 0.5, ["bagel", "pretzel", "popsicle", "cup or mug", "water bottle", "plastic bag"]),
    "living room": (2.0, 0.5, ["sofa", "tv or monitor", "lamp", "table", "remote control", "chair", "flower pot", "bookshelf", "domestic cat", "dog", "electric fan", "digital clock", "vacuum"]),
    "office": (1.5, 0.6, ["computer keyboard", "computer mouse", "laptop", "tv or monitor", "chair", "printer", "binder", "filing cabinet", "pencil box", "pencil sharpener", "ruler", "rubber eraser", "cup or mug", "digital clock"]),
    "bathroom": (0.8, 0.3, ["soap dispenser", "hair dryer", "lipstick", "perfume", "face powder", "cream", "hair spray", "washer"]),
    "nursery": (0.4, 0.8, ["baby bed", "diaper", "lamp", "chair"]),
    "concert": (1.5, 0.9, ["guitar", "microphone", "drum", "piano", "violin", "saxophone", "trumpet", "cello", "flute", "trombone", "french horn", "banjo", "accordion", "harp", "oboe", "harmonica", "maraca", "chime"]),
    "ball game": (1.5, 0.95, ["soccer ball", "basketball", "tennis ball", "racket", "volleyball", "baseball", "helmet", "rugby ball", "golf ball", "golfcart", "ping-pong ball", "croquet ball", "puck", "sunglasses"]),
    "gym": (0.6, 0.95, ["dumbbell", "punching bag", "balance beam", "horizontal bar", "water bottle"]),
    "beach": (1.0, 0.9, ["swimming trunks", "maillot", "bathing cap", "sunglasses", "watercraft", "hat with a wide brim", "brassiere", "miniskirt"]),
    "winter": (0.5, 0.8, ["ski", "snowmobile", "snowplow", "helmet", "sunglasses"]),
    "formal": (0.6, 1.0, ["tie", "bow tie", "wine bottle", "hat with a wide brim", "miniskirt"]),
    "workshop": (0.7, 0.6, ["hammer", "screwdriver", "power drill", "nail", "chain saw", "axe", "ruler", "helmet"]),
    "hospital": (0.5, 0.9, ["stethoscope", "syringe", "crutch", "stretcher", "neck brace", "band aid", "beaker"]),
    "farm": (1.2, 0.4, ["horse", "cattle", "sheep", "swine", "dog", "cart"]),
    "savanna": (1.2, 0.1, ["zebra", "elephant", "antelope", "lion", "hippopotamus", "camel"]),
    "zoo": (1.0, 0.4, ["monkey", "tiger", "bear", "giant panda", "red panda", "koala bear", "lion", "elephant", "seal"]),
    "woodland": (0.8, 0.1, ["squirrel", "fox", "rabbit", "bird", "skunk", "porcupine", "armadillo", "snake"]),
    "pets": (1.2, 0.5, ["dog", "domestic cat", "hamster", "rabbit", "goldfish", "bird", "turtle"]),
    "sea": (1.0, 0.3, ["whale", "seal", "ray", "jellyfish", "starfish", "lobster", "otter", "turtle", "watercraft", "goldfish"]),
    "garden": (1.0, 0.2, ["butterfly", "bee", "ladybug", "dragonfly", "ant", "snail", "frog", "lizard", "flower pot", "bird"]),
    "desert": (0.4, 0.1, ["scorpion", "lizard", "snake", "camel", "centipede", "tick", "isopod"]),
    "travel": (1.0, 0.7, ["airplane", "train", "backpack", "bus", "purse", "sunglasses", "iPod", "tape player"]),
    "portrait": (2.0, 1.0, []),
    "laundry": (0.3, 0.3, ["washer", "vacuum", "plastic bag", "electric fan", "milk can"]),
}
VOC_SCENES: dict[str, tuple[float, float, list[str]]] = {
    "street": (3.0, 0.7, ["car", "bus", "bicycle", "motorbike", "dog"]),
    "indoor": (3.0, 0.7, ["chair", "sofa", "tvmonitor", "diningtable", "pottedplant", "bottle", "cat", "dog"]),
    "farm": (1.5, 0.4, ["horse", "cow", "sheep", "dog", "bird"]),
    "travel": (1.5, 0.5, ["aeroplane", "train", "boat", "bus"]),
    "pets": (1.5, 0.4, ["cat", "dog", "bird", "sofa"]),
    "portrait": (2.0, 1.0, []),
}

# fmt: on


@dataclass(frozen=True)
class CrowdModel:
    """Per-vote accuracy and the vote margin a question needs. High-level questions are biased to "yes":
    two "yes" more than "no" accept, three more "no" are needed to reject (missing an object prunes a subtree)."""

    vote_accuracy: float = 0.93
    leaf_margin: int = 2
    high_yes_margin: int = 2
    high_no_margin: int = 3
    distractor_rate: float = 0.05  # a high-level question is truly "yes" for an object outside the classes
    max_votes: int = 9


def generate(
    rng: np.random.Generator, leaves: tuple[str, ...], names: dict[str, str], scenes, n_images: int
) -> np.ndarray:
    """Image x leaf presence matrix: one scene (a second one 10% of the time), 1 + Poisson(0.4) of its classes
    (typical first), a person at half the scene's rate, and 5% of images one random class as clutter. This gives
    about 1.7 classes per image, close to ILSVRC DET (about 1.5 classes and 2.8 objects per image)."""
    column = {names[leaf]: j for j, leaf in enumerate(leaves)}
    scene_list = list(scenes.values())
    weights = np.array([s[0] for s in scene_list])
    weights /= weights.sum()
    labels = np.zeros((n_images, len(leaves)), dtype=bool)
    for i in range(n_images):
        picked = [scene_list[rng.choice(len(scene_list), p=weights)]]
        if rng.random() < 0.1:
            picked.append(scene_list[rng.choice(len(scene_list), p=weights)])
        for _weight, p_person, classes in picked:
            members = [c for c in classes if c in column]
            if "person" in column and rng.random() < 0.5 * p_person:
                labels[i, column["person"]] = True
            if members:
                k = min(len(members), 1 + rng.poisson(0.4))
                zipf = 1.0 / np.arange(1, len(members) + 1)
                for c in rng.choice(len(members), size=k, replace=False, p=zipf / zipf.sum()):
                    labels[i, column[members[c]]] = True
        if rng.random() < 0.05:
            labels[i, rng.integers(len(leaves))] = True
    return labels


class SimulatedImage:
    """The truth for one image and the crowd that answers its questions."""

    def __init__(self, dag: QuestionDag, truth: set[str], crowd: CrowdModel, rng: np.random.Generator):
        self.dag, self.truth, self.crowd, self.rng = dag, truth, crowd, rng
        self.questions = 0
        self.votes = 0
        self.distractors: dict[str, bool] = {}

    def true_answer(self, node: str) -> bool:
        if self.dag.node(node).leaf:
            return node in self.truth
        if any(leaf in self.truth for leaf in self.dag.leaves_under(node)):
            return True
        # Drawn once per (image, node) so that the same distractor is seen whenever asked.
        if node not in self.distractors:
            self.distractors[node] = bool(self.rng.random() < self.crowd.distractor_rate)
        return self.distractors[node]

    def __call__(self, node: str) -> bool:
        crowd = self.crowd
        truth = self.true_answer(node)
        leaf = self.dag.node(node).leaf
        yes_margin = crowd.leaf_margin if leaf else crowd.high_yes_margin
        no_margin = crowd.leaf_margin if leaf else crowd.high_no_margin
        lead = votes = 0
        while -no_margin < lead < yes_margin and votes < crowd.max_votes:
            correct = self.rng.random() < crowd.vote_accuracy
            lead += 1 if correct == truth else -1
            votes += 1
        self.questions += 1
        self.votes += votes
        return lead > 0 if leaf else lead >= 0


def oracle_order(image: SimulatedImage) -> Order:
    """Knows the truth: asks present leaves first (their "yes" decides every ancestor), then the candidate
    "no" that prunes most. No order can do much better on this DAG: a lower bound for the comparison."""

    def order(state: LabelingState) -> str:
        open_nodes = [n for n in state.dag if n not in state.decisions]
        present = [n for n in open_nodes if state.dag.node(n).leaf and image.true_answer(n)]
        if present:
            return present[0]
        frontier = candidates(state)
        absent = [n for n in frontier if not image.true_answer(n)]
        if absent:
            return max(
                absent, key=lambda n: sum(1 for d in state.dag.descendants(n) if d not in state.decisions)
            )
        return frontier[0]

    return order


# The dataset's target miss rate for a skip: the reject error a crowd "no" on a leaf must meet
# (multilabel/asking.py LEAF_REJECT_ERROR, below the dataset's default 0.02).
SKIP_TARGET = 0.005
SCORE_SHIFT = 6.2  # sigmoid(0 - 6.2) ~ 0.002: an absent class's median score


def top5_rate(labels: np.ndarray, logits: np.ndarray) -> float:
    """The fraction of present (image, class) pairs whose class is among the image's 5 highest logits."""
    rank = (-logits).argsort(axis=1).argsort(axis=1)
    return float((rank[labels] < 5).mean()) if labels.any() else 1.0


def simulated_scores(rng: np.random.Generator, labels: np.ndarray, top5: float) -> tuple[np.ndarray, float]:
    """Scores in [0, 1] for every (image, class), and the top-5 accuracy they reach. mu (the present classes'
    mean logit) is bisected on a draw of the same noise so the top-5 accuracy is `top5`."""
    noise = rng.standard_normal(labels.shape)
    low, high = 0.0, 12.0
    for _ in range(40):
        mu = (low + high) / 2
        if top5_rate(labels, noise + mu * labels) < top5:
            low = mu
        else:
            high = mu
    logits = noise + high * labels
    return 1.0 / (1.0 + np.exp(-(logits - SCORE_SHIFT))), top5_rate(labels, logits)


def scored_run(
    dag: QuestionDag,
    image,
    scores: dict[str, float],
    calibration: ScoreCalibration | None,
    risk: RiskCalibration | None = None,
) -> tuple[LabelingState, int]:
    """Algorithm 1 in the score order, skipping what the calibrated rule allows (with `risk`, what the image's
    risk budget allows); returns the state and skips."""
    by_node = node_scores(dag, scores)
    order = ScoreOrder(by_node, calibration)
    if risk is not None:
        budget, spent, state, skipped = BudgetRule(scores, risk, SKIP_TARGET), 0.0, start(dag), 0
        while True:
            state, node, skips, spent = advance_budget(state, order, budget, spent)
            skipped += len(skips)
            if node is None:
                return state, skipped
            state = answer(state, node, image(node))
    rule = None if calibration is None else SkipRule(by_node, calibration, SKIP_TARGET)
    state, skipped = start(dag), 0
    while True:
        state, node, skips = advance(state, order, rule)
        skipped += len(skips)
        if node is None:
            return state, skipped
        state = answer(state, node, image(node))


@dataclass
class Row:
    method: str
    questions: float
    votes: float
    accuracy: float
    precision: float
    recall: float
    skips: float = 0.0


@dataclass(frozen=True)
class Scored:
    """Algorithm 1 guided by scores (images x leaves, DAG order), with skips when `calibration` is given."""

    scores: np.ndarray
    calibration: ScoreCalibration | None
    risk: RiskCalibration | None = None


def evaluate(method: str, dag: QuestionDag, labels: np.ndarray, order, crowd, seed: int) -> Row:
    """`order`: None for flat questions, an Order, a function image -> Order (the oracle), or Scored."""
    rng = np.random.default_rng(seed)
    leaves = dag.leaves
    questions = votes = skipped = 0
    predicted = np.zeros_like(labels)
    for i in range(labels.shape[0]):
        image = SimulatedImage(dag, {leaves[j] for j in np.flatnonzero(labels[i])}, crowd, rng)
        if order is None:  # flat: one question per leaf
            found = {leaf for leaf in leaves if image(leaf)}
        elif isinstance(order, Scored):
            scores = dict(zip(leaves, order.scores[i].tolist(), strict=True))
            state, skips = scored_run(dag, image, scores, order.calibration, order.risk)
            found, skipped = set(present_leaves(state)), skipped + skips
        else:
            chosen = order(image) if order is oracle_order else order
            state: LabelingState = run(start(dag), image, chosen)
            found = set(present_leaves(state))
        predicted[i] = [leaf in found for leaf in leaves]
        questions += image.questions
        votes += image.votes
    n = labels.shape[0]
    true_pos = float((predicted & labels).sum())
    return Row(
        method,
        questions / n,
        votes / n,
        float((predicted == labels).mean()),
        true_pos / max(1.0, float(predicted.sum())),
        true_pos / max(1.0, float(labels.sum())),
        skipped / n,
    )


def calibrated(
    dag: QuestionDag,
    labels: np.ndarray,
    scores: np.ndarray,
    crowd: CrowdModel,
    seed: int,
    truth: bool = False,
) -> tuple[ScoreCalibration, RiskCalibration]:
    """The calibrations a dataset would have after the crowd labelled these images (breadth-first, no skips);
    with `truth`, on their true labels (a crowd that never errs: what the rule could do with clean labels)."""
    rng = np.random.default_rng(seed)
    leaves = dag.leaves
    decided = []
    for i in range(labels.shape[0]):
        image = SimulatedImage(dag, {leaves[j] for j in np.flatnonzero(labels[i])}, crowd, rng)
        found = image.truth if truth else set(present_leaves(run(start(dag), image, breadth_first)))
        decided.append(
            (dict(zip(leaves, scores[i].tolist(), strict=True)), {leaf: leaf in found for leaf in leaves})
        )
    return calibration_fit(dag, decided), risk_fit(dag, decided)


def compare(
    title: str,
    dag: QuestionDag,
    names,
    scenes,
    n_images: int,
    n_train: int,
    seed: int,
    top5: float = 0.8,
    n_calibration: int = 400,
    truth_calibration: bool = False,
) -> list[Row]:
    rng = np.random.default_rng(seed)
    train = generate(rng, dag.leaves, names, scenes, n_train)
    test = generate(rng, dag.leaves, names, scenes, n_images)
    model = CooccurrenceModel.fit(dag, dag.leaves, train)
    crowd = CrowdModel()
    # The scorer and its calibration images draw from their own generators: the rows above stay as they were.
    score_rng = np.random.default_rng(seed + 1000)
    decided = generate(score_rng, dag.leaves, names, scenes, n_calibration)
    decided_scores, _ = simulated_scores(score_rng, decided, top5)
    test_scores, reached = simulated_scores(score_rng, test, top5)
    calibration, risk = calibrated(dag, decided, decided_scores, crowd, seed + 2000, truth_calibration)
    orders: list[tuple[str, object]] = [
        ("flat K questions", None),
        ("Algorithm 1, breadth-first", breadth_first),
        ("correlation: likely-no first", CorrelationOrder(model, shortcuts=False)),
        ("correlation + shortcuts", CorrelationOrder(model)),
        ("oracle order (lower bound)", oracle_order),
        ("scores: order only", Scored(test_scores, None)),
        ("scores: order + calibrated skips", Scored(test_scores, calibration)),
        ("scores: order + risk budget", Scored(test_scores, calibration, risk)),
    ]
    rows = [evaluate(name, dag, test, order, crowd, seed + 1) for name, order in orders]
    per_image = test.sum(axis=1)
    print(
        f"\n{title}: K={len(dag.leaves)} leaves, {len(dag) - len(dag.leaves)} questions, {n_images} test images "
        f"({per_image.mean():.2f} classes/image, {np.mean(per_image == 0):.0%} empty), {n_train} training images"
    )
    print(
        f"scorer: top-5 accuracy {reached:.1%} on the test images (asked {top5:.0%}); skips calibrated on "
        f"{n_calibration} {'truly ' if truth_calibration else 'crowd-'}labelled images, target miss rate {SKIP_TARGET}"
    )
    print(
        f"risk budget: {risk.classes_per_image:.2f} classes/image, budget {SKIP_TARGET * risk.classes_per_image:.4f} "
        "per image; P(present | feature) by bin, present/candidates and upper bound:"
    )
    for context, table in (("root", risk.root), ("child", risk.child)):
        cells = "  ".join(
            f"<{b.high:g}: {b.positives}/{b.observations} {b.bound:.4f}" for b in table if b.observations
        )
        print(f"  {context:5s} {cells}")
    print(
        f"{'method':32s} {'q/image':>8s} {'vs flat':>8s} {'vs BFS':>8s} {'votes/img':>9s} {'acc':>7s} {'prec':>6s} "
        f"{'recall':>6s} {'skips/img':>9s}"
    )
    flat, bfs = rows[0], rows[1]
    for r in rows:
        print(
            f"{r.method:32s} {r.questions:8.1f} {r.questions / flat.questions:8.1%} {r.questions / bfs.questions:8.1%} "
            f"{r.votes:9.1f} {r.accuracy:7.3%} {r.precision:6.1%} {r.recall:6.1%} {r.skips:9.1f}"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="100 test and 1000 training images")
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--top5", type=float, default=0.8, help="the simulated scorer's top-5 accuracy")
    parser.add_argument(
        "--calibration", type=int, default=400, help="crowd-labelled images calibrating skips"
    )
    parser.add_argument(
        "--truth-calibration", action="store_true", help="calibrate skips on true labels, not the crowd's"
    )
    parser.add_argument("--no-k-sweep", action="store_true", help="skip the cost-vs-K table")
    args = parser.parse_args()
    n_images = 100 if args.quick else args.images
    n_train = 1000 if args.quick else args.train
    began = time.perf_counter()

    det = load_fixture(FIXTURES / "ilsvrc_det200.json")
    det_dag = det.to_dag()
    det_names = {node.id: node.name for node in det.nodes}
    voc = load_fixture(FIXTURES / "voc20.json")
    voc_dag = voc.to_dag()
    voc_names = {node.id: node.name for node in voc.nodes}

    scorer = {
        "top5": args.top5,
        "n_calibration": args.calibration,
        "truth_calibration": args.truth_calibration,
    }
    rows = compare("ILSVRC DET 200", det_dag, det_names, DET_SCENES, n_images, n_train, args.seed, **scorer)
    voc_rows = compare(
        "PASCAL VOC 20", voc_dag, voc_names, VOC_SCENES, n_images, n_train, args.seed, **scorer
    )

    flat, bfs, _no_first, corr, _oracle, _ordered, _skipping, _budget = rows
    print(
        f"\nDET 200 targets: Algorithm 1 asks {bfs.questions / flat.questions:.1%} of flat (target <= 15%); "
        f"correlation order asks {1 - corr.questions / bfs.questions:.1%} fewer than breadth-first "
        f"(target >= 15%), accuracy {corr.accuracy:.3%} vs {bfs.accuracy:.3%}"
    )
    for title, (_f, b, *_rest, s) in (("DET 200", rows), ("VOC 20", voc_rows)):
        print(
            f"{title} scores + risk budget: {s.questions:.1f} questions/image vs {b.questions:.1f} breadth-first "
            f"({s.questions / b.questions:.1%}; target <= 50% on DET 200), precision {s.precision:.1%} vs "
            f"{b.precision:.1%}, recall {s.recall:.1%} vs {b.recall:.1%} (target >= 99%)"
        )
    if args.no_k_sweep:
        print(f"\n({time.perf_counter() - began:.0f} s)")
        return

    print("\nCost vs K (random class subsets of DET 200, sub-DAG keeps only questions above them):")
    print(
        f"{'K':>4s} {'flat':>6s} {'BFS q/img':>10s} {'corr q/img':>11s} {'BFS/flat':>9s} {'corr/BFS':>9s} {'recall BFS/corr':>16s}"
    )
    rng = np.random.default_rng(args.seed + 100)
    for k in (20, 50, 100, 200):
        chosen = set(rng.choice(det_dag.leaves, size=k, replace=False)) if k < 200 else set(det_dag.leaves)
        sub = det_dag.restricted_to(chosen)
        data_rng = np.random.default_rng(args.seed + k)
        train = generate(data_rng, sub.leaves, det_names, DET_SCENES, n_train)
        test = generate(data_rng, sub.leaves, det_names, DET_SCENES, n_images)
        model = CooccurrenceModel.fit(sub, sub.leaves, train)
        b = evaluate("bfs", sub, test, breadth_first, CrowdModel(), args.seed + 1)
        c = evaluate("corr", sub, test, CorrelationOrder(model), CrowdModel(), args.seed + 1)
        print(
            f"{k:4d} {k:6d} {b.questions:10.1f} {c.questions:11.1f} {b.questions / k:9.1%} "
            f"{c.questions / b.questions:9.1%} {b.recall:7.1%}/{c.recall:.1%}"
        )
    print(f"\n({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
