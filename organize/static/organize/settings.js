// Consensus and gold settings of a dataset (GET/PATCH datasets/{id}/consensus-settings and gold-settings) and
// the gold CSV import (POST datasets/{id}/gold/import), with every refused line listed.
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
  settingsForm(form).catch((err) => { form.querySelector(".error").textContent = err.message; });
}
refreshGold().catch((err) => { document.getElementById("gold-count").textContent = err.message; });
