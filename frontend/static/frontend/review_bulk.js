// The reviewer page's "decide many" panel: list the items waiting (optionally only those like the item shown:
// same kind, question and class), select some or all in view, and take one decision on them through
// POST review/decide, which decides each item on its own and says per item what happened.

import { api } from "../shared/api.js";

const app = document.getElementById("review-app");
const base = app.dataset.api;
const dataset = app.dataset.dataset;
const filter = document.getElementById("bulk-filter");
const table = document.getElementById("bulk-items");
const body = table.querySelector("tbody");
const all = document.getElementById("bulk-all");
const decisionSelect = document.getElementById("bulk-decision");
const reasonInput = document.getElementById("bulk-reason");
const decideButton = document.getElementById("bulk-decide");
const statusLine = document.getElementById("bulk-status");

let shown = null; // the item the single-item view shows
let listed = []; // the items in the table

document.addEventListener("review:item", (event) => { shown = event.detail; });

function say(message, isError = false) {
  statusLine.textContent = message;
  statusLine.classList.toggle("error", isError);
}

function question(item) {
  const context = item.context;
  const text = context && context.question ? context.question : item.kind.replace("_", "-");
  const classes = [item.box_a && item.box_a.concept.name, item.box_b && item.box_b.concept.name].filter(Boolean);
  return classes.length && !(context && context.question) ? `${text} (${classes.join(" / ")})` : text;
}

// "Like the item shown": what the reviewer would answer the same way.
function signature(item) {
  const context = item.context || {};
  return JSON.stringify([item.kind, context.kind || "", question(item), item.decisions.map((d) => d.value)]);
}

function selected() {
  return listed.filter((item) => body.querySelector(`input[data-item="${item.id}"]`)?.checked);
}

// The decisions every selected item accepts (one decision is taken on all of them).
function refreshDecisions() {
  const chosen = selected();
  const keep = decisionSelect.value;
  let common = null;
  for (const item of chosen) {
    const values = item.decisions.map((d) => [d.value, d.label]);
    common = common === null ? values : common.filter(([v]) => values.some(([w]) => w === v));
  }
  decisionSelect.replaceChildren(...(common || []).map(([value, label]) => {
    const option = document.createElement("option");
    option.value = value;
    option.textContent = label;
    return option;
  }));
  if ([...decisionSelect.options].some((o) => o.value === keep)) decisionSelect.value = keep;
  decideButton.disabled = chosen.length === 0 || decisionSelect.options.length === 0;
  decideButton.textContent = chosen.length ? `Decide ${chosen.length} selected` : "Decide selected";
  all.checked = chosen.length > 0 && chosen.length === listed.length;
  if (chosen.length && !decisionSelect.options.length) say("The selected items have no decision in common: select fewer kinds.", true);
}

function row(item) {
  const tr = document.createElement("tr");
  tr.dataset.item = String(item.id);
  const box = document.createElement("input");
  box.type = "checkbox";
  box.dataset.item = String(item.id);
  box.setAttribute("aria-label", `Select item ${item.id}`);
  box.addEventListener("change", refreshDecisions);
  const cells = [box, String(item.id)];
  if (item.image) {
    const img = document.createElement("img");
    img.src = item.image.url;
    img.alt = `Image ${item.image.id} of item ${item.id}`;
    img.height = 48;
    img.loading = "lazy";
    cells.push(img);
  } else {
    cells.push("—");
  }
  cells.push(question(item), "");
  for (const content of cells) {
    const td = document.createElement("td");
    td.append(content);
    tr.append(td);
  }
  tr.lastChild.className = "result";
  return tr;
}

async function list() {
  const data = Object.fromEntries(new FormData(filter).entries());
  const params = new URLSearchParams();
  if (dataset) params.set("dataset", dataset);
  if (data.kinds) params.set("kinds", data.kinds);
  try {
    const page = await api(base, `review/items?${params}`);
    listed = page.results;
    if (data.like) {
      if (!shown) {
        say("No item is shown to compare with: listing every item.");
      } else {
        const like = signature(shown);
        listed = listed.filter((item) => signature(item) === like);
      }
    }
    body.replaceChildren(...listed.map(row));
    table.hidden = listed.length === 0;
    say(listed.length ? `${listed.length} items listed${page.count > page.results.length ? ` (the first ${page.results.length} of ${page.count} waiting)` : ""}.` : "No item is waiting.");
    refreshDecisions();
  } catch (error) {
    say(`Could not list the items: ${error.message}`, true);
  }
}

filter.addEventListener("submit", (event) => {
  event.preventDefault();
  list();
});

all.addEventListener("change", () => {
  for (const box of body.querySelectorAll("input[type=checkbox]")) box.checked = all.checked;
  refreshDecisions();
});

const STATUS_TEXT = { decided: "decided", held: "held for a second decision", already_decided: "already decided", refused: "not decided" };

decideButton.addEventListener("click", async () => {
  const chosen = selected();
  if (!chosen.length || !decisionSelect.value) return;
  decideButton.disabled = true;
  const label = decisionSelect.selectedOptions[0].textContent;
  try {
    const result = await api(base, "review/decide", {
      method: "POST",
      body: { items: chosen.map((item) => item.id), decision: decisionSelect.value, reason: reasonInput.value.trim() },
    });
    const done = [];
    for (const outcome of result.results) {
      const tr = body.querySelector(`tr[data-item="${outcome.item}"]`);
      if (!tr) continue;
      tr.querySelector(".result").textContent = STATUS_TEXT[outcome.status] + (outcome.detail ? `: ${outcome.detail}` : "");
      tr.dataset.status = outcome.status;
      const box = tr.querySelector("input[type=checkbox]");
      box.checked = false;
      if (outcome.status !== "refused") {
        box.disabled = true;
        done.push(outcome.item);
      }
    }
    listed = listed.filter((item) => !done.includes(item.id));
    say(`${label}: ${result.decided} decided, ${result.refused} not decided` + (result.refused ? " (see each row)." : "."), result.refused > 0);
    document.dispatchEvent(new CustomEvent("review:decided-many", { detail: { ids: done, count: result.results.filter((o) => o.status === "decided" || o.status === "held").length } }));
  } catch (error) {
    say(`Nothing was decided: ${error.message}`, true);
  } finally {
    refreshDecisions();
  }
});
