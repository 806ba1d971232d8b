// One image of a dataset: the picture with its boxes, the votes and decisions of every question about it,
// Algorithm 1's answers, its final labels and its review items (GET datasets/{id}/images/{image}).
import { api, el } from "./common.js";
import { boxRect, imageStage } from "../shared/boxview.js";

const app = document.getElementById("image-app");
const base = app.dataset.api;
const id = app.dataset.dataset;
const imageId = app.dataset.image;
const num = (text) => el("td", { class: "num", text: String(text) });
const when = (t) => new Date(t).toLocaleString();

function rows(selector, items, row, empty) {
  const body = document.querySelector(`${selector} tbody`);
  const cols = document.querySelectorAll(`${selector} thead th`).length;
  body.replaceChildren(...(items.length ? items.map(row) : [el("tr", {}, el("td", { colspan: String(cols), text: empty }))]));
}

function show(image) {
  document.getElementById("image-status").textContent = `${image.original_name} · ${image.width}×${image.height}` +
    (image.near_duplicate_of ? ` · near-duplicate of image ${image.near_duplicate_of}` : "");
  const { svg } = imageStage(document.getElementById("image-stage"),
    { url: image.file_url, width: image.width, height: image.height }, image.original_name);
  for (const b of image.boxes) {
    if (b.state === "removed" || b.state === "rejected") continue;
    boxRect(svg, [b.x1, b.y1, b.x2, b.y2], b.state === "accepted" ? "judged" : "existing").setAttribute("data-box", b.id);
  }
  rows("#boxes", image.boxes, (b) => el("tr", { "data-box": b.id }, num(b.id), el("td", { text: `${b.concept_name} (${b.concept})` }),
    el("td", { text: [b.x1, b.y1, b.x2, b.y2].map((v) => v.toFixed(0)).join(", ") }), el("td", { text: b.state }),
    el("td", { text: b.drawn_by ?? "" }), el("td", { text: b.final ? "yes" : "" })), "No boxes.");
  rows("#questions", image.questions, (q) => el("tr", { "data-question": q.id }, num(q.id),
    el("td", { text: q.kind + (q.box ? ` (box ${q.box})` : "") + (q.role === "calibration" ? " · calibration" : "") }),
    el("td", { text: `${q.concept_name} (${q.concept})` }), el("td", { class: "state", text: q.state }),
    num(`${q.yes_count} / ${q.no_count}`), num(q.p === null ? "–" : q.p.toFixed(3)),
    el("td", { class: "votes", text: q.votes.map((v) => `${v.username}: ${v.answer ? "yes" : "no"}${v.voided ? ` (void: ${v.voided})` : ""}`).join("; ") }),
    el("td", { text: q.decisions.map((d) => `${d.decision} at ${d.yes_count}/${d.no_count}${d.reviewer ? ` by ${d.reviewer}` : ""} (${when(d.created_at)})`).join("; ") })),
  "No questions about this image.");
  rows("#labeling", image.labeling_answers, (a) => el("tr", {}, el("td", { text: a.node }), el("td", { text: a.question }),
    el("td", { text: a.present ? "yes" : "no" }), num(`${a.yes_votes} / ${a.no_votes}`)), "Not multi-labelled.");
  rows("#final-labels", image.final_labels, (f) => el("tr", { "data-concept": f.concept }, el("td", { text: `${f.concept_name} (${f.concept})` }),
    el("td", { text: f.present ? "present" : "absent" }), el("td", { text: f.source }),
    num(f.probability === null ? "–" : f.probability.toFixed(3)), num(f.box_count)), "No final label yet.");
  rows("#review-items", image.review_items, (r) => el("tr", {}, num(r.id), el("td", { text: r.kind }), el("td", { text: r.state }),
    el("td", { text: [r.box_a, r.box_b].filter((x) => x !== null).join(" / ") }),
    el("td", { text: r.decisions.map((d) => `${d.decision} by ${d.reviewer}${d.undoes ? " (undo)" : ""}`).join("; ") })),
  "No review items.");
}

// Exclude or include again: the button says which the next press does.
let excluded = false;
function showExclusion(excludedAt) {
  excluded = Boolean(excludedAt);
  document.getElementById("exclusion-status").textContent = excluded
    ? `Excluded since ${new Date(excludedAt).toLocaleString()}: its tasks wait and exports leave it out.`
    : "Included: its tasks are handed out and exports may write it.";
  document.getElementById("exclusion-toggle").textContent = excluded ? "Include this image again" : "Exclude this image";
}
document.getElementById("exclusion-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("exclusion-error");
  error.textContent = "";
  const reason = event.target.elements.reason.value;
  try {
    const body = await api(base, `datasets/${id}/images/${imageId}/${excluded ? "include" : "exclude"}`, { method: "POST", body: { reason } });
    showExclusion(body.excluded_at);
    event.target.elements.reason.value = "";
  } catch (err) {
    error.textContent = err.message;
  }
});

api(base, `datasets/${id}/images/${imageId}`).then((image) => { show(image); showExclusion(image.excluded_at); }).catch((err) => {
  document.getElementById("image-status").textContent = err.message;
});

document.getElementById("delete-image").addEventListener("click", async () => {
  const error = document.getElementById("delete-image-error");
  error.textContent = "";
  if (!window.confirm(`Delete image ${imageId} and its file? Only an image nobody has worked on can be deleted.`)) return;
  try {
    await api(base, `datasets/${id}/images/${imageId}/delete`, { method: "POST" });
    window.location.assign(`/organize/datasets/${id}/images/`);
  } catch (err) {
    error.textContent = err.message;
  }
});
