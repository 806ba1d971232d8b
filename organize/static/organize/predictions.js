// A dataset's model predictions: importing a predictions file (POST datasets/{id}/prediction-sets, multipart),
// listing each refused row's problem, and the dataset's prediction sets (GET datasets/{id}/prediction-sets).
import { api, ApiError, cookie, el } from "./common.js";

const app = document.getElementById("predictions-app");
const base = app.dataset.api;
const id = app.dataset.dataset;

function num(value) {
  return el("td", { class: "num", text: String(value) });
}

async function upload(form) {
  const body = new FormData(form);
  const response = await fetch(`${base}datasets/${id}/prediction-sets/`, {
    method: "POST", body, credentials: "same-origin",
    headers: { Accept: "application/json", "X-CSRFToken": cookie("csrftoken") },
  });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) throw new ApiError(response.status, data);
  return { created: response.status === 201, set: data };
}

function showProblems(body) {
  const box = document.getElementById("problems-box");
  const problems = body && Array.isArray(body.problems) ? body.problems : [];
  box.hidden = !problems.length;
  if (!problems.length) return;
  document.getElementById("problems-title").textContent = body.problem_count > problems.length
    ? `Problems (the first ${problems.length} of ${body.problem_count})` : `Problems (${problems.length})`;
  document.querySelector("#problems tbody").replaceChildren(...problems.map((p) => el("tr", {},
    el("td", {}, el("code", { text: p.where })), el("td", { text: p.code }), el("td", { text: p.reason }))));
}

async function refreshSets() {
  const sets = await api(base, `datasets/${id}/prediction-sets/`);
  document.getElementById("sets-status").textContent = sets.length
    ? `${sets.length} prediction set${sets.length === 1 ? "" : "s"}` : "No predictions yet.";
  document.querySelector("#sets tbody").replaceChildren(...sets.map((s) => el("tr", { "data-set": String(s.id) },
    el("td", { text: s.name }), el("td", { text: [s.model_name, s.model_version].filter(Boolean).join(" ") || "–" }),
    el("td", { text: s.source }), el("td", { text: s.created_by || "–" }),
    el("td", { text: new Date(s.created_at).toLocaleString() }), num(s.box_count), num(s.score_count))));
}

document.getElementById("predictions-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const error = document.getElementById("predictions-error");
  const status = document.getElementById("predictions-status");
  const file = document.getElementById("predictions-file").files[0];
  if (!file) return;
  error.textContent = "";
  showProblems(null);
  status.textContent = `Checking ${file.name}…`;
  try {
    const { created, set } = await upload(form);
    status.textContent = created
      ? `${set.name}: ${set.box_count} boxes and ${set.score_count} class scores stored.`
      : `This file was imported before as “${set.name}”; nothing stored twice.`;
    form.reset();
    await refreshSets();
  } catch (err) {
    status.textContent = "";
    error.textContent = err.body && err.body.problems ? err.body.detail : err.message;
    showProblems(err.body);
  }
});

refreshSets().catch((err) => { document.getElementById("sets-status").textContent = err.message; });
