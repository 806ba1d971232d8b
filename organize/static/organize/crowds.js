// Crowds of a dataset: study links for external crowds (GET/POST/PATCH studies, filtered by dataset), their
// completions and code checks (GET studies/{id}/completions, POST studies/{id}/redeem), one at a time or many at
// once (POST studies/{id}/redeem-many: the rows selected, or a pasted list), each code with its outcome.
import { api, datasetPicker, el, formData, pickedDatasets } from "./common.js";

const app = document.getElementById("crowds-app");
const base = app.dataset.api;
const id = app.dataset.dataset;
const scopePicker = document.getElementById("link-scope");
let shown = null;
let datasetNames = new Map();

// The picker of the datasets a link's participants work on: this dataset is always among them.
async function loadPicker() {
  datasetNames = await datasetPicker(base, scopePicker, [Number(id)]);
  const own = scopePicker.querySelector(`.dataset-choices input[value="${id}"]`);
  if (own) own.disabled = true;
}

function absolute(path) {
  return new URL(path, window.location.origin).href;
}

async function setActive(link, active) {
  const status = document.getElementById("links-status");
  try {
    await api(base, `studies/${link.id}/`, { method: "PATCH", body: { active } });
    await refresh();
  } catch (err) {
    status.textContent = err.message;
  }
}

async function showCompletions(link) {
  shown = link;
  const rows = await api(base, `studies/${link.id}/completions`);
  document.getElementById("completions-box").hidden = false;
  document.getElementById("completions-title").textContent = `Completions of the ${link.kind} link (${rows.length})`;
  document.getElementById("completions-csv").href = `${base}studies/${link.id}/completions?export=csv`;
  document.querySelector("#completions tbody").replaceChildren(...rows.map((r) => el("tr", { "data-bundle": String(r.bundle) },
    el("td", {}, r.redeemed ? "" : selector(r)), el("td", { text: r.participant }), el("td", { class: "num", text: String(r.bundle) }),
    el("td", {}, el("code", { text: r.code })), el("td", { class: "num", text: `${r.answered} / ${r.size}${r.short ? " (short)" : ""}` }),
    el("td", { text: r.completed_at ? new Date(r.completed_at).toLocaleString() : "" }),
    el("td", { text: r.redeemed ? "yes" : "no" }), el("td", { text: r.recommendation }),
    el("td", { class: "outcome", text: outcomes.get(r.bundle) || "" }))));
  document.getElementById("select-completions").checked = false;
  selectionChanged();
}

const outcomes = new Map(); // bundle -> what the last batch said about it

function selector(row) {
  const box = el("input", { type: "checkbox", "aria-label": `Select ${row.participant}'s code` });
  box.dataset.participant = row.participant;
  box.dataset.code = row.code;
  box.addEventListener("change", selectionChanged);
  return box;
}

function selectedCodes() {
  return [...document.querySelectorAll("#completions tbody input[type=checkbox]:checked")]
    .map((box) => ({ participant: box.dataset.participant, code: box.dataset.code }));
}

function selectionChanged() {
  const n = selectedCodes().length;
  const button = document.getElementById("approve-selected");
  button.disabled = n === 0;
  button.textContent = n ? `Approve ${n} selected` : "Approve selected";
}

document.getElementById("select-completions").addEventListener("change", (event) => {
  for (const box of document.querySelectorAll("#completions tbody input[type=checkbox]")) box.checked = event.target.checked;
  selectionChanged();
});

const OUTCOME_TEXT = { redeemed: "accepted", already_redeemed: "accepted before", refused: "refused" };

async function redeemMany(codes) {
  const error = document.getElementById("redeem-error");
  const status = document.getElementById("redeem-status");
  error.textContent = "";
  status.textContent = "";
  const result = await api(base, `studies/${shown.id}/redeem-many`, { method: "POST", body: { codes } });
  outcomes.clear();
  for (const o of result.results) if (o.bundle !== null) outcomes.set(o.bundle, OUTCOME_TEXT[o.status]);
  const refused = result.results.filter((o) => o.status === "refused");
  status.textContent = `${result.redeemed} accepted, ${result.already_redeemed} accepted before, ${result.refused} refused.`;
  if (refused.length) error.textContent = refused.map((o) => `${o.participant} (${o.code}): ${o.detail}`).join("; ");
  await showCompletions(shown);
}

document.getElementById("approve-selected").addEventListener("click", () => {
  const codes = selectedCodes();
  if (codes.length) redeemMany(codes).catch((err) => { document.getElementById("redeem-error").textContent = err.message; });
});

document.getElementById("redeem-many-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const codes = [];
  for (const [n, raw] of event.target.elements.codes.value.split("\n").entries()) {
    const line = raw.trim();
    if (!line) continue;
    const [participant, code] = line.split(/[,;\t]/).map((part) => (part || "").trim());
    if (!participant || !code) {
      document.getElementById("redeem-error").textContent = `line ${n + 1} ("${line}"): expected participant,code`;
      return;
    }
    codes.push({ participant, code });
  }
  if (!codes.length) return;
  redeemMany(codes).then(() => event.target.reset())
    .catch((err) => { document.getElementById("redeem-error").textContent = err.message; });
});

async function refresh() {
  const page = await api(base, `studies/?dataset=${id}`);
  const links = page.results;
  document.getElementById("links-status").textContent = links.length
    ? `${links.length} link${links.length === 1 ? "" : "s"}` : "No study link yet.";
  document.querySelector("#links tbody").replaceChildren(...links.map((link) => {
    const url = `${absolute(link.url)}?${encodeURIComponent(link.participant_param)}={{participant id}}`;
    const toggle = el("button", { type: "button", text: link.active ? "Close link" : "Reopen link" });
    toggle.addEventListener("click", () => setActive(link, !link.active));
    const completions = el("button", { type: "button", text: "Completions" });
    completions.addEventListener("click", () => showCompletions(link).catch((err) => { document.getElementById("links-status").textContent = err.message; }));
    const scope = (link.datasets ?? []).map((d) => datasetNames.get(d) ?? `dataset ${d}`).join(", ");
    return el("tr", { "data-link": String(link.id) }, el("td", { text: link.kind }), el("td", { class: "scope", text: scope }),
      el("td", {}, el("code", { class: "link-url", text: url })),
      el("td", { class: "state", text: link.active ? "open" : "closed" }), el("td", {}, completions, " ", toggle));
  }));
}

document.getElementById("link-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("link-error");
  const status = document.getElementById("link-status");
  error.textContent = "";
  const { datasets: _ignored, ...fields } = formData(event.target);
  const body = { dataset: Number(id), ...fields, datasets: pickedDatasets(scopePicker) };
  try {
    const link = await api(base, "studies/", { method: "POST", body });
    status.textContent = `Created the ${link.kind} link.`;
    await refresh();
  } catch (err) {
    status.textContent = "";
    error.textContent = err.message;
  }
});

document.getElementById("redeem-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("redeem-error");
  const status = document.getElementById("redeem-status");
  error.textContent = "";
  status.textContent = "";
  try {
    const row = await api(base, `studies/${shown.id}/redeem`, { method: "POST", body: formData(event.target) });
    status.textContent = `Accepted: ${row.participant}'s code (bundle ${row.bundle}, ${row.recommendation}).`;
    event.target.reset();
    await showCompletions(shown);
  } catch (err) {
    error.textContent = err.message;
  }
});

loadPicker()
  .catch((err) => { document.getElementById("link-error").textContent = err.message; })
  .then(refresh)
  .catch((err) => { document.getElementById("links-status").textContent = err.message; });
