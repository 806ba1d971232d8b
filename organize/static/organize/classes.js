// Classes of a dataset: upload a hierarchy file (every refusal listed), pick the classes among its leaves.
import { api, el } from "./common.js";

const app = document.getElementById("classes-app");
const base = app.dataset.api;
const id = app.dataset.dataset;
const select = document.getElementById("hierarchy");

async function loadHierarchies(selectId) {
  const page = await api(base, "hierarchies/");
  const items = page.results ?? page;
  select.replaceChildren(...items.map((h) => el("option", { value: h.id, text: `${h.name} ${h.version} (${h.leaves} classes)` })));
  if (selectId) select.value = String(selectId);
  if (items.length) await loadChoices();
}

async function loadChoices() {
  const data = await api(base, `datasets/${id}/concepts?hierarchy=${select.value}`);
  const chosen = new Set(data.selected.map((c) => c.wnid));
  document.getElementById("choices").replaceChildren(...data.choices.map((c) => {
    const box = el("input", { type: "checkbox", name: "concepts", value: c.wnid });
    box.checked = chosen.has(c.wnid);
    return el("label", { title: c.gloss }, box, el("span", { text: `${c.name} (${c.wnid})` }));
  }));
}

document.getElementById("hierarchy-file").addEventListener("change", async (event) => {
  const status = document.getElementById("upload-status");
  const errors = document.getElementById("upload-errors");
  errors.replaceChildren();
  const file = event.target.files[0];
  if (!file) return;
  let body;
  try {
    body = JSON.parse(await file.text());
  } catch (err) {
    errors.append(el("li", { text: `${file.name} is not JSON: ${err.message}` }));
    return;
  }
  try {
    const result = await api(base, "hierarchy-uploads", { method: "POST", body });
    status.textContent = `${result.created ? "Loaded" : "Already loaded"}: ${result.name} ${result.version}, ` +
      `${result.nodes} questions, ${result.leaves} classes`;
    await loadHierarchies(result.hierarchy);
  } catch (err) {
    status.textContent = `${file.name} was refused:`;
    const list = (err.body && err.body.errors) || [err.message];
    errors.replaceChildren(...list.map((text) => el("li", { text })));
  }
  event.target.value = "";
});

select.addEventListener("change", loadChoices);
document.getElementById("pick").addEventListener("submit", async (event) => {
  event.preventDefault();
  const wnids = Array.from(document.querySelectorAll("#choices input:checked"), (box) => box.value);
  const error = document.getElementById("pick-error");
  error.textContent = "";
  try {
    const data = await api(base, `datasets/${id}/concepts`, { method: "PUT", body: { concepts: wnids } });
    document.getElementById("pick-status").textContent = `${data.selected.length} classes selected`;
  } catch (err) {
    error.textContent = err.message;
  }
});

loadHierarchies().catch((err) => { document.getElementById("pick-error").textContent = err.message; });
