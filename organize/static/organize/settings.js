// Consensus, gold and box settings of a dataset (GET/PATCH datasets/{id}/consensus-settings, gold-settings and
// box-settings: every form.settings of the page), the
// warning when they need more distinct workers than the crowd has (GET crowd-check, on the form's values as they
// are typed) with the presets that fill both forms (GET settings-presets), and the gold CSV import (POST
// datasets/{id}/gold/import), with every refused line listed.
import { api, el } from "./common.js";

const app = document.getElementById("settings-app");
const base = app.dataset.api;
const id = app.dataset.dataset;

function fill(form, values) {
  for (const input of form.querySelectorAll("[name]")) {
    if (!(input.name in values)) continue;
    if (input.type === "checkbox") input.checked = Boolean(values[input.name]);
    else input.value = String(values[input.name]);
  }
}

function read(form) {
  const body = {};
  for (const input of form.querySelectorAll("[name]")) {
    const type = input.dataset.type;
    if (type === "bool") body[input.name] = input.checked;
    else if (type === "int") body[input.name] = Number.parseInt(input.value, 10);
    else if (type === "float") body[input.name] = Number(input.value);
    else body[input.name] = input.value;
  }
  return body;
}

// Does the crowd fit? The consensus form's calibration votes and vote cap, checked against the dataset's crowd.
const consensusForm = document.getElementById("consensus-form");
let checkTimer = null;

async function checkCrowd() {
  const votes = consensusForm.elements.calibration_votes.value;
  const cap = consensusForm.elements.vote_cap.value;
  const query = new URLSearchParams();
  if (votes) query.set("calibration_votes", votes);
  if (cap) query.set("vote_cap", cap);
  const list = document.getElementById("crowd-warnings");
  const summary = document.getElementById("crowd-summary");
  try {
    const check = await api(base, `datasets/${id}/crowd-check?${query}`);
    const c = check.crowd;
    summary.textContent = `${c.joined} worker${c.joined === 1 ? "" : "s"} can vote in this dataset` +
      (c.qualification_required ? ` (${c.qualified} qualified so far)` : "") +
      `; these settings need up to ${Math.max(check.calibration_votes, check.vote_cap)} per question.`;
    list.replaceChildren(...check.warnings.map((w) => el("li", { "data-warning": w.code, text: w.message })));
  } catch (err) {
    list.replaceChildren(el("li", { text: err.message }));
  }
}

function checkSoon() {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(checkCrowd, 300);
}

async function loadPresets() {
  const { presets } = await api(base, `datasets/${id}/settings-presets`);
  document.getElementById("presets").replaceChildren(...presets.map((preset) => {
    const button = el("button", { type: "button", text: `Fill in: ${preset.title}` });
    button.addEventListener("click", () => {
      fill(consensusForm, preset.consensus);
      fill(document.getElementById("gold-form"), preset.gold);
      document.getElementById("preset-status").textContent = `Filled in "${preset.title}" ` +
        `(needs ${preset.needs_workers} workers per question). Not saved yet: check the values, then save ` +
        "the consensus and the gold settings.";
      checkCrowd();
    });
    return el("div", { class: "preset", "data-preset": preset.name }, el("strong", { text: preset.title }),
      el("p", { text: preset.description }), button);
  }));
}

async function settingsForm(form) {
  const path = `datasets/${id}/${form.dataset.endpoint}`;
  const error = form.querySelector(".error");
  const status = form.querySelector(".status");
  fill(form, await api(base, path));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    error.textContent = "";
    status.textContent = "";
    try {
      fill(form, await api(base, path, { method: "PATCH", body: read(form) }));
      status.textContent = `Saved at ${new Date().toLocaleTimeString()}.`;
      if (form === consensusForm) checkCrowd();
    } catch (err) {
      error.textContent = err.message;
    }
  });
}

async function refreshGold() {
  const page = await api(base, `datasets/${id}/gold`);
  const items = page.results ?? page;
  document.getElementById("gold-count").textContent = `${page.count ?? items.length} gold items`;
  document.querySelector("#gold-items tbody").replaceChildren(...items.map((g) => el("tr", {},
    el("td", { text: g.kind }), el("td", { text: g.concept }), el("td", { class: "num", text: String(g.image) }),
    el("td", { class: "num", text: g.box === null ? "" : String(g.box) }), el("td", { text: g.answer ? "yes" : "no" }),
    el("td", { text: g.source }))));
}

document.getElementById("gold-import").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const errors = document.getElementById("gold-import-errors");
  const status = document.getElementById("gold-import-status");
  errors.replaceChildren();
  status.textContent = "";
  const file = form.elements.file.files[0];
  const csv = file ? await file.text() : form.elements.csv.value;
  if (!csv.trim()) {
    errors.append(el("li", { text: "Choose a CSV file or paste its text." }));
    return;
  }
  try {
    const result = await api(base, `datasets/${id}/gold/import`, { method: "POST", body: { csv } });
    status.textContent = `${result.created} gold items imported.`;
    form.reset();
    await refreshGold();
  } catch (err) {
    const listed = err.body && err.body.errors;
    const lines = Array.isArray(listed) ? listed : [err.message];
    errors.replaceChildren(...lines.map((line) => el("li", { text: line })));
  }
});

for (const form of document.querySelectorAll("form.settings")) {
  const loaded = settingsForm(form).catch((err) => { form.querySelector(".error").textContent = err.message; });
  if (form === consensusForm) loaded.then(checkCrowd);
}
consensusForm.elements.calibration_votes.addEventListener("input", checkSoon);
consensusForm.elements.vote_cap.addEventListener("input", checkSoon);
loadPresets().catch((err) => { document.getElementById("preset-status").textContent = err.message; });
refreshGold().catch((err) => { document.getElementById("gold-count").textContent = err.message; });
