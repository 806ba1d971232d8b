// Classes of a dataset: upload a hierarchy file (every refusal listed), pick the classes among its leaves,
// browse the hierarchy's tree, edit the confusable pairs among the dataset's classes.
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
  if (items.length) await Promise.all([loadChoices(), loadTree()]);
}

// A DAG shown as a tree: a node with several parents is listed under each (its subtree is drawn once per
// parent, which a question hierarchy keeps small).
async function loadTree() {
  const [tree, concepts] = await Promise.all([api(base, `hierarchies/${select.value}/tree`), api(base, `datasets/${id}/concepts`)]);
  const mine = new Set(concepts.selected.map((c) => c.wnid));
  const children = new Map();
  const roots = [];
  for (const node of tree.nodes) {
    if (!node.parents.length) roots.push(node);
    for (const parent of node.parents) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(node);
    }
  }
  const item = (node, depth) => {
    const label = `${node.name} (${node.node})${mine.has(node.wnid) ? " ✓" : ""}`;
    const kids = children.get(node.node) || [];
    const li = el("li", { "data-node": node.node, title: node.gloss || node.question });
    if (!kids.length || depth > 12) {
      li.append(el("span", { class: node.leaf ? "leaf" : "", text: label }));
      return li;
    }
    const details = el("details", {}, el("summary", { text: `${label} · ${node.question}` }),
      el("ul", {}, ...kids.map((k) => item(k, depth + 1))));
    if (depth === 0) details.open = true;
    li.append(details);
    return li;
  };
  document.getElementById("tree").replaceChildren(...roots.map((r) => item(r, 0)));
  document.getElementById("tree-status").textContent = `${tree.name} ${tree.version}: ${tree.nodes.length} nodes, ` +
    `${tree.nodes.filter((n) => n.leaf).length} classes`;
}

async function loadPairs() {
  const [pairs, concepts] = await Promise.all([api(base, `datasets/${id}/confusable-pairs`), api(base, `datasets/${id}/concepts`)]);
  const options = () => concepts.selected.map((c) => el("option", { value: c.wnid, text: `${c.name} (${c.wnid})` }));
  const form = document.getElementById("pair-form");
  form.elements.a.replaceChildren(...options());
  form.elements.b.replaceChildren(...options());
  document.querySelector("#pairs tbody").replaceChildren(...pairs.map((p) => {
    const remove = el("button", { type: "button", text: "Remove" });
    remove.addEventListener("click", async () => {
      const error = document.getElementById("pair-error");
      error.textContent = "";
      if (!window.confirm(`Remove the pair ${p.a_name} / ${p.b_name}?`)) return;
      try {
        await api(base, `datasets/${id}/confusable-pairs/${p.id}`, { method: "DELETE" });
        await loadPairs();
      } catch (err) {
        error.textContent = err.message;
      }
    });
    return el("tr", { "data-pair": p.id }, el("td", { text: `${p.a_name} (${p.a})` }), el("td", { text: `${p.b_name} (${p.b})` }),
      el("td", { text: p.note }), el("td", {}, remove));
  }));
}

document.getElementById("pair-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const error = document.getElementById("pair-error");
  error.textContent = "";
  try {
    await api(base, `datasets/${id}/confusable-pairs`, { method: "POST",
      body: { a: form.elements.a.value, b: form.elements.b.value, note: form.elements.note.value } });
    form.elements.note.value = "";
    await loadPairs();
  } catch (err) {
    error.textContent = err.message;
  }
});

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

select.addEventListener("change", () => Promise.all([loadChoices(), loadTree()]));
document.getElementById("pick").addEventListener("submit", async (event) => {
  event.preventDefault();
  const wnids = Array.from(document.querySelectorAll("#choices input:checked"), (box) => box.value);
  const error = document.getElementById("pick-error");
  error.textContent = "";
  try {
    const data = await api(base, `datasets/${id}/concepts`, { method: "PUT", body: { concepts: wnids } });
    document.getElementById("pick-status").textContent = `${data.selected.length} classes selected`;
    await Promise.all([loadTree(), loadPairs()]);
  } catch (err) {
    error.textContent = err.message;
  }
});

loadHierarchies().catch((err) => { document.getElementById("pick-error").textContent = err.message; });
loadPairs().catch((err) => { document.getElementById("pair-error").textContent = err.message; });
