// People of a dataset: its workers (block or unblock with a reason) and the datasets each may work on, one-time
// invitation links naming those datasets (a token is shown once, never listed).
import { api, datasetPicker, el, formData, pickedDatasets } from "./common.js";

const app = document.getElementById("people-app");
const base = app.dataset.api;
const id = app.dataset.dataset;
const scopePicker = document.getElementById("invite-scope");
const EVERY = "every dataset (unscoped)";

// A worker's or an invitation's datasets in words: the names, and how many others (another organizer's) are not named.
function scopeText(datasets, others = 0) {
  if (!datasets.length && !others) return EVERY;
  const named = datasets.map((d) => d.name);
  if (others) named.push(`${others} other${others === 1 ? "" : "s"}`);
  return named.join(", ");
}

async function refreshWorkers() {
  const rows = await api(base, `datasets/${id}/people`);
  document.querySelector("#workers tbody").replaceChildren(...rows.map((w) => {
    const verb = w.blocked_by === "organizer" ? "unblock" : "block";
    const button = el("button", { type: "button", "data-worker": w.worker, text: verb === "block" ? "Block…" : "Unblock…" });
    button.disabled = w.blocked_by === "gold";
    button.addEventListener("click", () => changeStanding(w, verb));
    const standing = w.blocked ? `blocked (${w.blocked_by === "gold" ? "by gold answers" : "by an organizer"})` : "active";
    return el("tr", { "data-worker": w.worker },
      el("td", {}, el("a", { href: `/organize/datasets/${id}/people/${w.worker}/`, text: w.username })), el("td", { text: w.source }),
      el("td", { class: "scope-cell" }, el("span", { class: "scope", text: w.scoped ? scopeText(w.datasets, w.other_datasets) : EVERY }), " ",
        scopeButton(w)),
      el("td", { class: "num", text: String(w.answers) }), el("td", { class: "standing", text: standing }),
      el("td", { text: w.reason }), el("td", {}, button));
  }));
}

// The organizer's datasets (id -> name), filled by the invitation form's picker: the scope editor offers them.
let myDatasets = new Map();

function scopeButton(w) {
  const button = el("button", { type: "button", class: "scope-change", "aria-label": `Change the datasets of ${w.username}`, text: "Change…" });
  button.addEventListener("click", () => editScope(w, button.closest("tr")));
  return button;
}

// An inline form under the worker's row: tick the datasets (of yours) they may work on. Effective at their next
// lease; a lease they hold now may still be answered.
function editScope(w, row) {
  document.querySelector("#workers tr.scope-editor")?.remove();
  const mine = new Set(w.datasets.map((d) => d.id));
  const form = el("form", { class: "scope-form", "aria-label": `Datasets ${w.username} may work on` },
    el("fieldset", {}, el("legend", { text: `Datasets ${w.username} may work on` }),
      ...[...myDatasets].map(([dsId, name]) => el("label", { class: "check" },
        el("input", { type: "checkbox", name: "datasets", value: String(dsId), ...(mine.has(dsId) ? { checked: "" } : {}) }), ` ${name}`))),
    el("p", { class: "status", text: "Takes effect at their next task; a task they hold now may still be answered. Leave one ticked: a worker without any dataset could take tasks of every dataset." }),
    el("button", { type: "submit", text: "Save datasets" }), " ",
    el("button", { type: "button", class: "cancel", text: "Cancel" }));
  const editor = el("tr", { class: "scope-editor" }, el("td", { colspan: "7" }, form));
  form.querySelector(".cancel").addEventListener("click", () => editor.remove());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = document.getElementById("workers-error");
    error.textContent = "";
    const datasets = [...form.querySelectorAll("input:checked")].map((b) => Number(b.value));
    if (!datasets.length && !w.other_datasets) {
      error.textContent = "A scoped worker keeps at least one dataset: without any they could take tasks of every dataset. Block them to stop their work.";
      return;
    }
    try {
      await api(base, `datasets/${id}/people/${w.worker}/scope`, { method: "PUT", body: { datasets } });
      await refreshWorkers();
    } catch (err) {
      error.textContent = err.message;
    }
  });
  row.after(editor);
  form.querySelector("input")?.focus();
}

async function changeStanding(w, verb) {
  const error = document.getElementById("workers-error");
  error.textContent = "";
  const reason = window.prompt(`Reason to ${verb} ${w.username}:`);
  if (reason === null) return;
  try {
    await api(base, `datasets/${id}/people/${w.worker}/${verb}`, { method: "POST", body: { reason } });
    await refreshWorkers();
  } catch (err) {
    error.textContent = err.message;
  }
}

async function refresh() {
  const rows = await api(base, `datasets/${id}/invitations`);
  document.querySelector("#invitations tbody").replaceChildren(...rows.map((inv) => el("tr", { "data-invitation": inv.id },
    el("td", { text: inv.role }),
    el("td", { class: "scope", text: scopeText(inv.datasets) }),
    el("td", { text: inv.status }), el("td", { text: inv.created_by }),
    el("td", { text: new Date(inv.expires_at).toLocaleString() }), el("td", { text: inv.accepted_by ?? "" }))));
}

document.getElementById("invite").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("invite-error");
  error.textContent = "";
  const data = formData(event.target);
  const body = { role: data.role, expires_in_hours: Number(data.expires_in_hours) };
  body.datasets = pickedDatasets(scopePicker);
  try {
    const issued = await api(base, `datasets/${id}/invitations`, { method: "POST", body });
    document.getElementById("issued").hidden = false;
    document.getElementById("issued-url").value = issued.accept_url;
    document.getElementById("issued-expires").textContent = new Date(issued.expires_at).toLocaleString();
    await refresh();
    await refreshWorkers();
  } catch (err) {
    error.textContent = err.message;
  }
});


refresh();
refreshWorkers().catch((err) => { document.getElementById("workers-error").textContent = err.message; });
datasetPicker(base, scopePicker, [Number(id)]).then((names) => { myDatasets = names; }).catch((err) => { document.getElementById("invite-error").textContent = err.message; });
