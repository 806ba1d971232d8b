"""VOC AP against a line-by-line transcription of the devkit rule (VOCevaldet.m) on hand-made cases."""

import numpy as np
import pytest

from benchmark.metrics.data import Detections, GroundTruth
from benchmark.metrics.files import load_predictions
from benchmark.metrics.voc import average_precision, evaluate_voc07, evaluate_voc12
from benchmark.metrics.voc_xml import read_voc_xml


def matlab_colon(a, d, b):
    """Matlab's ``a:d:b`` as MathWorks describes it: the first half a + k*d, the second half b - k*d."""
    n = int(round((b - a) / d))
    out = [0.0] * (n + 1)
    for k in range(n // 2 + 1):
        out[k] = a + k * d
        out[n - k] = b - k * d
    if n % 2 == 0:
        out[n // 2] = (a + b) / 2
    return out


def devkit_reference(gt_by_image, dets, use_07, plus_one):
    """gt_by_image: {image: [(x1, y1, x2, y2, difficult), ...]}; dets: [(image, score, x1, y1, x2, y2)]."""
    one = 1.0 if plus_one else 0.0
    npos = sum(1 for objs in gt_by_image.values() for o in objs if not o[4])
    detected = {i: [False] * len(objs) for i, objs in gt_by_image.items()}
    order = sorted(range(len(dets)), key=lambda k: -dets[k][1])  # stable, like Matlab's sort
    tp, fp = [], []
    for k in order:
        image, _, *bb = dets[k]
        ovmax, jmax = -np.inf, -1
        for j, (gx1, gy1, gx2, gy2, _) in enumerate(gt_by_image.get(image, [])):
            iw = min(bb[2], gx2) - max(bb[0], gx1) + one
            ih = min(bb[3], gy2) - max(bb[1], gy1) + one
            if iw > 0 and ih > 0:
                ua = (
                    (bb[2] - bb[0] + one) * (bb[3] - bb[1] + one)
                    + (gx2 - gx1 + one) * (gy2 - gy1 + one)
                    - iw * ih
                )
                ov = iw * ih / ua
                if ov > ovmax:
                    ovmax, jmax = ov, j
        if ovmax >= 0.5:
            if gt_by_image[image][jmax][4]:
                tp.append(0)
                fp.append(0)
            elif not detected[image][jmax]:
                detected[image][jmax] = True
                tp.append(1)
                fp.append(0)
            else:
                tp.append(0)
                fp.append(1)
        else:
            tp.append(0)
            fp.append(1)
    tp, fp = np.cumsum(tp), np.cumsum(fp)
    rec = tp / npos
    prec = tp / np.maximum(tp + fp, np.finfo(float).tiny)
    if use_07:
        ap = 0.0
        for t in matlab_colon(0, 0.1, 1):  # for t=0:0.1:1
            p = prec[rec >= t]
            ap = ap + (p.max() if p.size else 0.0) / 11
        return ap
    mrec = np.r_[0, rec, 1]
    mpre = np.r_[0, prec, 0]
    for i in range(len(mpre) - 2, -1, -1):
        mpre[i] = max(mpre[i], mpre[i + 1])
    i = np.flatnonzero(mrec[1:] != mrec[:-1])
    return float(np.sum((mrec[i + 1] - mrec[i]) * mpre[i + 1]))


def as_arrays(gt_by_image, dets, plus_one):
    rows = [(i, *o) for i, objs in gt_by_image.items() for o in objs]
    gt = GroundTruth(
        image_ids=sorted(gt_by_image),
        category_ids=[1],
        box_image=[r[0] for r in rows],
        box_category=[1] * len(rows),
        boxes=[[r[1], r[2], r[3] - r[1], r[4] - r[2]] for r in rows],
        difficult=[r[5] for r in rows],
        category_names={1: "cat"},
        pixel_inclusive=plus_one,
    )
    d = Detections(
        image=[x[0] for x in dets],
        category=[1] * len(dets),
        boxes=[[x[2], x[3], x[4] - x[2], x[5] - x[3]] for x in dets],
        scores=[x[1] for x in dets],
    )
    return gt, d


HAND_MADE = {
    # duplicate detection of one object, a difficult object hit, a miss, a false alarm between them
    "duplicates_and_difficult": (
        {1: [(10, 10, 50, 50, 0), (60, 60, 90, 90, 1)], 2: [(0, 0, 20, 20, 0), (30, 30, 70, 70, 0)]},
        [
            (1, 0.9, 10, 10, 50, 50),
            (1, 0.8, 12, 12, 50, 50),
            (1, 0.7, 60, 60, 90, 90),
            (2, 0.6, 100, 100, 120, 120),
            (2, 0.5, 0, 0, 19, 21),
            (2, 0.4, 31, 29, 70, 72),
        ],
    ),
    # the best-overlapping truth is already taken: the devkit counts a false positive, no fallback
    "best_truth_taken": (
        {1: [(0, 0, 40, 40, 0), (0, 0, 40, 44, 0)]},
        [(1, 0.9, 0, 0, 40, 40), (1, 0.8, 0, 0, 40, 41)],
    ),
    # IoU exactly at the threshold with the +1 convention differs from continuous coordinates
    "threshold_edge": (
        {1: [(0, 0, 9, 9, 0)], 2: [(0, 0, 99, 99, 0)]},
        [(1, 0.9, 0, 0, 9, 4), (2, 0.3, 0, 0, 99, 49), (2, 0.2, 0, 0, 99, 99)],
    ),
    "no_detections": ({1: [(0, 0, 9, 9, 0)]}, []),
}


@pytest.mark.parametrize("case", sorted(HAND_MADE))
@pytest.mark.parametrize("plus_one", [False, True])
def test_voc_ap_matches_devkit_rule_on_hand_made_cases(case, plus_one):
    gt_by_image, dets = HAND_MADE[case]
    gt, d = as_arrays(gt_by_image, dets, plus_one)
    for fn, use_07 in ((evaluate_voc07, True), (evaluate_voc12, False)):
        assert fn(gt, d)["AP_per_class"]["cat"] == pytest.approx(
            devkit_reference(gt_by_image, dets, use_07, plus_one), abs=1e-12
        )


def test_voc_ap_matches_devkit_rule_on_random_sets():
    rng = np.random.default_rng(5)
    for _ in range(5):
        gt_by_image, dets = {}, []
        for image in range(15):
            objs = []
            for _ in range(int(rng.integers(0, 4))):
                x1, y1 = rng.integers(0, 80, 2)
                objs.append(
                    (x1, y1, x1 + rng.integers(3, 40), y1 + rng.integers(3, 40), int(rng.random() < 0.2))
                )
            gt_by_image[image] = objs
            for o in objs:
                for _ in range(int(rng.integers(0, 3))):
                    j = rng.integers(-4, 5, 4)
                    dets.append(
                        (
                            image,
                            float(rng.integers(0, 10)) / 10,
                            o[0] + j[0],
                            o[1] + j[1],
                            o[2] + j[2],
                            o[3] + j[3],
                        )
                    )
        gt, d = as_arrays(gt_by_image, dets, True)
        assert evaluate_voc07(gt, d)["mAP"] == pytest.approx(
            devkit_reference(gt_by_image, dets, True, True), abs=1e-12
        )
        assert evaluate_voc12(gt, d)["mAP"] == pytest.approx(
            devkit_reference(gt_by_image, dets, False, True), abs=1e-12
        )


def test_eleven_point_and_all_point_ap_differ_as_the_devkits_define():
    # one truth of two found at the top, then a false positive, then the second: rec .5 @ p 1, rec 1 @ p 2/3
    tp = np.array([1, 0, 1], bool)
    fp = ~tp
    assert average_precision(tp, fp, 2, eleven_point=False) == pytest.approx(0.5 + 0.5 * 2 / 3)
    assert average_precision(tp, fp, 2, eleven_point=True) == pytest.approx((6 * 1 + 5 * 2 / 3) / 11)


def test_classes_with_only_difficult_truth_stay_out_of_the_mean():
    gt = GroundTruth(
        [1],
        [1, 2],
        [1, 1],
        [1, 2],
        [[0, 0, 10, 10], [20, 20, 10, 10]],
        difficult=[False, True],
        category_names={1: "a", 2: "b"},
    )
    d = Detections([1], [1], [[0, 0, 10, 10]], [0.5])
    out = evaluate_voc12(gt, d)
    assert out == {"mAP": 1.0, "AP_per_class": {"a": 1.0}}


def test_voc_xml_reader_keeps_difficult_flag_and_pixel_convention():
    xml = """<annotation><size><width>100</width><height>80</height></size>
      <object><name>dog</name><difficult>1</difficult><bndbox><xmin>1</xmin><ymin>2</ymin><xmax>10</xmax>
      <ymax>20</ymax></bndbox></object>
      <object><name>cat</name><bndbox><xmin>5</xmin><ymin>5</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>
    </annotation>"""
    gt = read_voc_xml([(7, xml)], ["cat", "dog"])
    assert gt.pixel_inclusive
    assert gt.difficult.tolist() == [True, False]
    assert gt.box_category.tolist() == [2, 1]
    assert gt.boxes.tolist() == [[1, 2, 9, 18], [5, 5, 0, 0]]
    # a one-pixel box is found by a one-pixel detection only under the +1 convention
    d = Detections([7], [1], [[5, 5, 0, 0]], [1.0])
    assert evaluate_voc12(gt, d)["AP_per_class"]["cat"] == 1.0


def test_eleven_point_levels_are_the_devkits_matlab_colon_values():
    # 3 of 5 objects found at precision 1: recall 3/5 reaches Matlab's level 0.6 (1 - 4*0.1, the double 0.6),
    # which np.linspace's 0.6000000000000001 would miss (6/11 instead of 7/11).
    tp = np.array([1, 1, 1], bool)
    assert average_precision(tp, ~tp, 5, eleven_point=True) == sum([1.0 / 11] * 7)
    # 3 of 10: recall 3/10 does not reach Matlab's level 0.3, which is 3*0.1 = 0.30000000000000004.
    assert average_precision(tp, ~tp, 10, eleven_point=True) == sum([1.0 / 11] * 3)


@pytest.mark.parametrize("plus_one", [False, True])
def test_iou_exactly_one_half_counts_as_a_hit_as_in_the_devkit(plus_one):
    one = 1 if plus_one else 0
    # truth 10 x 10 (pixels, or units); the detection covers its top half: IoU exactly 0.5 either way
    gt, d = as_arrays({1: [(0, 0, 10 - one, 10 - one, 0)]}, [(1, 0.9, 0, 0, 10 - one, 5 - one)], plus_one)
    assert float(d.boxes[0, 3] + one) * 10 / 100 == 0.5
    assert evaluate_voc12(gt, d)["mAP"] == 1.0
    assert evaluate_voc07(gt, d)["mAP"] == pytest.approx(1.0)  # 11 times 1/11, added up as the devkit does


def voc_export_truth(gt_by_image, width, height):
    xml = []
    for image, objs in gt_by_image.items():
        body = "".join(
            f"<object><name>cat</name><difficult>{o[4]}</difficult><bndbox><xmin>{o[0]}</xmin>"
            f"<ymin>{o[1]}</ymin><xmax>{o[2]}</xmax><ymax>{o[3]}</ymax></bndbox></object>"
            for o in objs
        )
        xml.append(
            (
                image,
                f"<annotation><size><width>{width}</width><height>{height}</height></size>{body}</annotation>",
            )
        )
    return read_voc_xml(xml, ["cat"])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_voc_equals_the_devkit_on_raw_boxes_past_the_border(seed):
    """Devkit-style truth (1-based inclusive integer corners, some at the border), float detections of which
    about 20% reach past the border or have negative coordinates, tied scores: read as `evaluate` reads them
    and scored raw, as VOCevaldet scores them."""
    width, height = 120, 90
    rng = np.random.default_rng(seed)
    gt_by_image, dets = {}, []
    for image in range(1, 31):
        objs = []
        for _ in range(int(rng.integers(0, 5))):
            w, h = int(rng.integers(2, 70)), int(rng.integers(2, 60))
            x1 = 1 if rng.random() < 0.3 else int(rng.integers(1, width - w + 1))
            y1 = 1 if rng.random() < 0.3 else int(rng.integers(1, height - h + 1))
            objs.append((x1, y1, min(x1 + w, width), min(y1 + h, height), int(rng.random() < 0.15)))
        gt_by_image[image] = objs
        for o in objs:
            for _ in range(int(rng.integers(0, 4))):
                j = rng.normal(0, 0.15, 4) * (o[2] - o[0] + 1)
                dets.append((image, o[0] + j[0], o[1] + j[1], o[2] + j[2], o[3] + j[3]))
        for _ in range(int(rng.integers(0, 3))):
            x1, y1 = rng.uniform(1, width - 5), rng.uniform(1, height - 5)
            dets.append((image, x1, y1, x1 + rng.uniform(2, 60), y1 + rng.uniform(2, 50)))
    rows = []
    for image, x1, y1, x2, y2 in dets:
        x1, x2 = min(x1, x2), max(x1, x2)
        y1, y2 = min(y1, y2), max(y1, y2)
        if rng.random() < 0.2:  # pushed past an edge, negative coordinates included
            shift = rng.uniform(1, 25)
            x1, x2 = (x1 - x1 - shift, x2 - x1 - shift) if rng.random() < 0.5 else (x1, width + shift)
        else:
            x1, y1 = min(max(x1, 1), width - 1), min(max(y1, 1), height - 1)
            x2, y2 = min(max(x2, x1 + 1), width), min(max(y2, y1 + 1), height)
        rows.append(
            (image, float(rng.integers(0, 20)) / 20, round(x1, 2), round(y1, 2), round(x2, 2), round(y2, 2))
        )
    gt = voc_export_truth(gt_by_image, width, height)
    text = "".join(f"{i} 1 {s} {x1} {y1} {x2} {y2}\n" for i, s, x1, y1, x2, y2 in rows)
    d = load_predictions("voc12", text, gt)
    assert d.past_border > 0.1 * len(rows) and np.any(d.boxes[:, 0] < 0)
    for fn, use_07 in ((evaluate_voc07, True), (evaluate_voc12, False)):
        assert fn(gt, d)["mAP"] == pytest.approx(devkit_reference(gt_by_image, rows, use_07, True), abs=1e-12)
