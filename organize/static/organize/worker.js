// A worker's history in the dataset: answers per stage, gold accuracy, blocks and unblocks with their reasons,
// the latest answers (GET datasets/{id}/people/{worker}).
import { api, el } from "./common.js";

const app = document.getElementById("worker-app");
const base = app.dataset.api;
const id = app.dataset.dataset;
const num = (text) => el("td", { class: "num", text: String(text) });
const when = (t) => new Date(t).toLocaleString();

function rows(selector, items, row, empty) {
  const cols = document.querySelectorAll(`${selector} thead th`).length;
  document.querySelector(`${selector} tbody`).replaceChildren(
    ...(items.length ? items.map(row) : [el("tr", {}, el("td", { colspan: String(cols), text: empty }))]));
}

function show(h) {
  document.getElementById("worker-name").textContent = h.username;
  document.getElementById("worker-status").textContent = `${h.source} worker since ${when(h.joined)} · ` +
    `${h.stages.reduce((n, s) => n + s.answers, 0)} answers in this dataset`;
  rows("#stages", h.stages, (s) => el("tr", {}, el("td", { text: s.stage }), num(s.answers), num(Math.round(s.worker_seconds))), "No answers yet.");
  rows("#gold-scores", h.gold_scores, (g) => el("tr", { "data-kind": g.kind }, el("td", { text: g.kind }), num(g.answered), num(g.correct),
    num(g.mean.toFixed(3)), num(g.lower.toFixed(3)), el("td", { text: g.qualified ? "yes" : "no" })), "No gold answers yet.");
  const blocks = [
    ...h.block_actions.map((b) => ({ at: b.created_at, what: b.blocked ? "blocked" : "unblocked", by: b.actor, reason: b.reason })),
    ...h.gold_blocks.map((b) => ({ at: b.created_at, what: "blocked by gold answers", by: "gold",
      reason: `${b.correct} of ${b.answered} right (${b.kind})` })),
  ].sort((x, y) => (x.at < y.at ? 1 : -1));
  rows("#blocks", blocks, (b) => el("tr", {}, el("td", { text: when(b.at) }), el("td", { text: b.what }),
    el("td", { text: b.by }), el("td", { text: b.reason })), "Never blocked.");
  rows("#recent", h.recent, (a) => el("tr", {}, el("td", { text: when(a.submitted_at) }), el("td", { text: a.stage }),
    el("td", { text: a.concept ?? "" }), num(a.image ?? ""), el("td", {}, el("code", { text: JSON.stringify(a.answer) })),
    num(a.seconds === null ? "" : a.seconds.toFixed(1)),
    el("td", { text: a.gold_correct === null ? "" : a.gold_correct ? "right" : "wrong" })), "No answers yet.");
}

api(base, `datasets/${id}/people/${app.dataset.worker}`).then(show).catch((err) => {
  document.getElementById("worker-status").textContent = err.message;
});
