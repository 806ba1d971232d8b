// The Quality page: calibration tables, precision from gold, the worker-accuracy histogram, votes needed per
// synset and the review load per synset, drawn as SVG from GET datasets/{id}/quality; each plot's numbers are in
// the table beside it.
import { api, el } from "./common.js";
import { barChart, heatmap } from "./charts.js";

const app = document.getElementById("quality-app");
const base = app.dataset.api;
const id = app.dataset.dataset;
const num = (text) => el("td", { class: "num", text: String(text) });
const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`);
const interval = (s) => (s.value === null ? "–" : `${pct(s.value)} (${pct(s.low)}–${pct(s.high)})`);
const DIFFICULTY_BARS = 40;

async function showTable(ref) {
  const status = document.getElementById("calibration-status");
  const plot = document.getElementById("calibration-plot");
  try {
    const table = await api(base, `concepts/${encodeURIComponent(ref.wnid)}/calibration?kind=${ref.kind}`);
    status.textContent = `${ref.kind} · ${ref.name} (${ref.wnid}): ${table.n_images} calibration images, ` +
      `${table.n_votes} votes, prior ${table.prior.toFixed(2)}, ${table.method}`;
    plot.replaceChildren(heatmap(table.probabilities, { title: `P(positive) of ${ref.name}` }));
    const rows = [];
    table.probabilities.forEach((row, a) => row.forEach((p, b) => {
      if (p !== null) rows.push(el("tr", {}, num(a), num(b), num(p.toFixed(4))));
    }));
    document.querySelector("#calibration-table tbody").replaceChildren(...rows);
  } catch (err) {
    status.textContent = err.message;
    plot.replaceChildren();
  }
}

function showCalibration(refs) {
  const choice = document.getElementById("calibration-choice");
  if (!refs.length) {
    document.getElementById("calibration-status").textContent = "No calibration table yet for this dataset's questions.";
    choice.disabled = true;
    return;
  }
  choice.replaceChildren(...refs.map((r, i) => el("option", { value: String(i), text: `${r.kind} · ${r.name} (${r.wnid})` })));
  choice.addEventListener("change", () => showTable(refs[Number(choice.value)]));
  showTable(refs[0]);
}

function showPrecision(rows, accuracy) {
  document.getElementById("precision-plot").replaceChildren(barChart(
    rows.filter((r) => r.precision.value !== null).map((r) => ({ label: r.kind, ...r.precision })),
    { title: "Precision estimated from gold", max: 1, format: (v) => v.toFixed(1) }));
  document.querySelector("#precision tbody").replaceChildren(...rows.map((r) => el("tr", { "data-kind": r.kind },
    el("td", { text: r.kind }), num(r.accepted), num(r.accepted_gold_yes), num(interval(r.precision)),
    num(r.rejected), num(r.rejected_gold_no), num(interval(r.negative_predictive_value)))));
  document.querySelector("#gold-accuracy tbody").replaceChildren(...accuracy.map((r) => el("tr", {},
    el("td", { text: r.kind }), num(r.answers), num(r.correct),
    num(interval({ value: r.accuracy, low: r.low, high: r.high })))));
}

function showHistogram(bins) {
  const label = (b) => `${b.low.toFixed(1)}–${b.high.toFixed(1)}`;
  document.getElementById("histogram-plot").replaceChildren(barChart(
    bins.map((b) => ({ label: label(b), value: b.workers })), { title: "Workers by accuracy", yLabel: "workers" }));
  document.querySelector("#histogram tbody").replaceChildren(...bins.map((b) => el("tr", {},
    el("td", { text: label(b) }), num(b.workers))));
}

function synsetRow(r, votes = true) {
  return el("tr", { "data-wnid": r.wnid }, el("td", { text: r.kind }), el("td", { text: `${r.name} (${r.wnid})` }),
    num(r.questions), ...(votes ? [num(r.votes)] : []), num(r.votes_per_question.toFixed(2)),
    num(`${r.review} (${pct(r.review_share)})`));
}

function showDifficulty(synsets, hardest) {
  const top = [...synsets].sort((x, y) => y.votes_per_question - x.votes_per_question).slice(0, DIFFICULTY_BARS);
  document.getElementById("difficulty-plot").replaceChildren(barChart(
    top.map((r) => ({ label: `${r.name} · ${r.kind}`, value: r.votes_per_question })),
    { title: "Votes per decided question", yLabel: "votes", format: (v) => v.toFixed(1) }));
  document.querySelector("#hardest tbody").replaceChildren(...hardest.map((r) => synsetRow(r, false)));
  document.querySelector("#synsets tbody").replaceChildren(...synsets.map((r) => synsetRow(r)));
}

function showReviewLoad(rows) {
  document.getElementById("review-load-plot").replaceChildren(barChart(
    rows.slice(0, DIFFICULTY_BARS).map((r) => ({ label: r.name, value: r.review_per_100_images })),
    { title: "Reviewer items per 100 images", yLabel: "items", format: (v) => v.toFixed(1) }));
  document.querySelector("#review-load tbody").replaceChildren(...rows.map((r) => el("tr", { "data-wnid": r.wnid },
    el("td", { text: `${r.name} (${r.wnid})` }), num(r.images), num(r.votes_per_image.toFixed(2)),
    num(r.review_open), num(r.review_decided), num(r.review_per_100_images.toFixed(2)))));
}

async function load() {
  const status = document.getElementById("quality-status");
  try {
    const q = await api(base, `datasets/${id}/quality`);
    const decided = q.synsets.reduce((n, r) => n + r.questions, 0);
    status.textContent = `${decided} decided questions over ${q.synsets.length} (kind, synset) pairs · ` +
      `${q.worker_accuracy.reduce((n, b) => n + b.workers, 0)} workers with gold answers`;
    showCalibration(q.calibration_tables);
    showPrecision(q.gold_precision, q.gold_answer_accuracy);
    showHistogram(q.worker_accuracy);
    showDifficulty(q.synsets, q.hardest);
    showReviewLoad(q.review_load);
  } catch (err) {
    status.textContent = `Quality figures unavailable: ${err.message}`;
  }
}

load();
