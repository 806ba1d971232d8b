// The reviewer page: lease the next review item, draw its boxes on the image, decide with the keyboard,
// take the next item at once; the queue overview on the side shows counts per kind. The last decision can be
// taken back (U) for a few minutes; skipped items come back once nothing else is left.

import { api, postOnce } from "../shared/api.js";

const app = document.getElementById("review-app");
const base = app.dataset.api;
const dataset = app.dataset.dataset;
const statusLine = document.getElementById("status");
const itemBox = document.getElementById("item");
const title = document.getElementById("item-title");
const detail = document.getElementById("item-detail");
const heldNote = document.getElementById("item-held");
const stage = document.getElementById("stage");
const stageImage = document.getElementById("stage-image");
const choices = document.getElementById("choices");
const reasonInput = document.getElementById("reason");
const decidedCounter = document.getElementById("decided");
const countsBody = document.querySelector("#queue-counts tbody");
const undoBar = document.getElementById("undo-bar");
const undoText = document.getElementById("undo-text");
const undoButton = document.getElementById("undo");

const KIND_TITLES = {
  duplicate: "Are these two boxes the same object?",
  cross_class: "Two boxes of different classes overlap. Which labels are right?",
  ambiguous: "The crowd could not settle this item.",
};
const KIND_NAMES = { duplicate: "Duplicates", cross_class: "Cross-class", ambiguous: "Ambiguous" };

let current = null;
let busy = false;
let retryTimer = null;
let lastDecision = null; // { id, itemId, label } of this reviewer's latest decision, while it can be taken back
const skipped = [];

function show(message, isError = false) {
  statusLine.textContent = message;
  statusLine.classList.toggle("error", isError);
}

function query(extra = {}) {
  const params = new URLSearchParams();
  if (dataset) params.set("dataset", dataset);
  for (const [key, value] of Object.entries(extra)) if (value) params.set(key, value);
  const text = params.toString();
  return text ? `?${text}` : "";
}

async function refreshSummary() {
  try {
    const { counts } = await api(base, "review/summary" + query());
    countsBody.replaceChildren(
      ...Object.entries(counts).map(([kind, byState]) => {
        const row = document.createElement("tr");
        row.dataset.kind = kind;
        for (const text of [KIND_NAMES[kind] || kind, byState.open, byState.leased, byState.decided]) {
          const cell = document.createElement("td");
          cell.textContent = String(text);
          row.append(cell);
        }
        return row;
      }),
    );
  } catch (error) {
    // The overview is a convenience: the queue itself keeps working without it.
  }
}

function choiceLabel(item, choice) {
  if (choice.value === "relabel_a" && item.box_b) return `Relabel A as ${item.box_b.concept.name}`;
  if (choice.value === "relabel_b" && item.box_a) return `Relabel B as ${item.box_a.concept.name}`;
  return choice.label;
}

function drawBox(image, box, letter, className = letter.toLowerCase()) {
  // Percentages of the original image size, so the boxes follow the image however the page scales it.
  const el = document.createElement("div");
  el.className = `box ${className}`;
  el.dataset.box = String(box.id);
  el.style.left = `${(100 * box.x1) / image.width}%`;
  el.style.top = `${(100 * box.y1) / image.height}%`;
  el.style.width = `${(100 * (box.x2 - box.x1)) / image.width}%`;
  el.style.height = `${(100 * (box.y2 - box.y1)) / image.height}%`;
  const label = document.createElement("span");
  label.className = "box-label";
  label.textContent = `${letter} · ${box.concept.name}`;
  el.append(label);
  stage.append(el);
}

function render(item) {
  current = item;
  stage.querySelectorAll(".box").forEach((el) => el.remove());
  // An ambiguous item says what the reviewer answers (the crowd's question, or the box job's) and shows the
  // crowd's votes and the other boxes: everything needed to decide without leaving the page.
  const context = item.context;
  title.textContent = context && context.question ? context.question : KIND_TITLES[item.kind] || item.kind;
  const parts = [];
  if (item.iou !== null) parts.push(`IoU ${item.iou.toFixed(2)}`);
  if (item.confusable) parts.push("a listed confusable pair of classes");
  if (context && context.votes) parts.push(`crowd: ${context.votes.yes} yes, ${context.votes.no} no`);
  if (item.reason) parts.push(item.reason);
  if (item.subject && !context) parts.push(`about ${JSON.stringify(item.subject)}`);
  detail.textContent = parts.join(" · ");
  // A decision against a clear crowd lean waits for a second, agreeing one: say so before the keys are pressed.
  const held = context && context.held;
  heldNote.hidden = !held;
  heldNote.textContent = held ? held.message : "";
  if (item.image) {
    stage.hidden = false;
    stageImage.src = item.image.url;
    stageImage.alt = `The image of item ${item.id}, with ${[item.box_a && "box A", item.box_b && "box B"]
      .filter(Boolean).join(" and ") || "its boxes"} drawn on it`;
    stageImage.width = item.image.width;
    stageImage.height = item.image.height;
    if (item.box_a) drawBox(item.image, item.box_a, "A");
    if (item.box_b) drawBox(item.image, item.box_b, "B");
    const others = context ? context.boxes.filter((box) => !item.box_a || box.id !== item.box_a.id) : [];
    others.forEach((box, n) => drawBox(item.image, box, String(n + 1), "b"));
  } else {
    stage.hidden = true;
  }
  choices.replaceChildren(
    ...item.decisions.map((choice) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "choice";
      button.dataset.decision = choice.value;
      const key = document.createElement("kbd");
      key.textContent = choice.key;
      button.append(key, choiceLabel(item, choice));
      button.addEventListener("click", () => decide(choice.value));
      return button;
    }),
  );
  reasonInput.value = "";
  itemBox.hidden = false;
  itemBox.dataset.item = String(item.id);
  show(`Item ${item.id}: ${KIND_NAMES[item.kind] || item.kind}`);
  document.dispatchEvent(new CustomEvent("review:item", { detail: item }));
}

async function next() {
  clearTimeout(retryTimer);
  current = null;
  let item;
  try {
    item = await api(base, "review/next" + query({ skip: skipped.join(",") }));
  } catch (error) {
    itemBox.hidden = true;
    show(`Could not load an item: ${error.message}`, true);
    retryTimer = setTimeout(next, 10000);
    return;
  }
  refreshSummary();
  if (!item && skipped.length) {
    // Nothing left but what this reviewer skipped: those come back now, rather than "the queue is empty".
    skipped.length = 0;
    return next();
  }
  if (!item) {
    itemBox.hidden = true;
    show("The review queue is empty. This page checks again every 15 seconds.");
    retryTimer = setTimeout(next, 15000);
    return;
  }
  render(item);
}

async function decide(decision) {
  if (busy || !current) return;
  busy = true;
  itemBox.classList.add("submitting");
  const item = current;
  try {
    const saved = await postOnce(base, `review/items/${item.id}/decide`, {
      decision,
      reason: reasonInput.value.trim(),
    });
    decidedCounter.textContent = String(Number(decidedCounter.textContent) + 1);
    const choice = item.decisions.find((c) => c.value === decision);
    // A decision its pipeline has acted on is final: no undo is offered for it.
    offerUndo(saved.undo_refused ? null : { id: saved.id, itemId: item.id, label: choice ? choiceLabel(item, choice) : decision });
    await next();
  } catch (error) {
    show(`The decision was not saved: ${error.message}`, true);
    if (error.status === 409) setTimeout(next, 1500);
  } finally {
    busy = false;
    itemBox.classList.remove("submitting");
  }
}

function offerUndo(decision) {
  lastDecision = decision;
  undoBar.hidden = !decision;
  if (decision) undoText.textContent = `Item ${decision.itemId} decided: ${decision.label}.`;
}

// Take back this reviewer's latest decision: the item comes back to them to decide again.
async function undo() {
  if (busy || !lastDecision) return;
  busy = true;
  const decision = lastDecision;
  try {
    await api(base, `review/decisions/${decision.id}/undo`, { method: "POST", body: { reason: "taken back by the reviewer" } });
    offerUndo(null);
    decidedCounter.textContent = String(Math.max(0, Number(decidedCounter.textContent) - 1));
    const item = await api(base, "review/next" + query({ skip: String(current ? current.id : "") }));
    if (item) render(item);
    refreshSummary(); // the item is in review again, no longer decided
    show(`Decision on item ${decision.itemId} taken back: decide it again.`);
  } catch (error) {
    show(`The decision could not be taken back: ${error.message}`, true);
    offerUndo(null);
  } finally {
    busy = false;
  }
}

async function skip() {
  if (busy || !current) return;
  busy = true;
  const item = current;
  skipped.push(item.id);
  try {
    await api(base, `review/items/${item.id}/release`, { method: "POST" });
  } catch (error) {
    // Skipping a lease that already ended is harmless: take the next item anyway.
  } finally {
    busy = false;
  }
  await next();
}

// Enter in the reason field keeps the reason and gives the keys back to the decisions (digits typed there are
// part of the reason).
reasonInput.addEventListener("keydown", (event) => {
  if (event.key !== "Enter") return;
  event.preventDefault();
  const first = choices.querySelector("button");
  if (first) first.focus();
  show("Reason noted: press the number of your decision.");
});
undoButton.addEventListener("click", undo);

// Items decided from the "decide many" panel: the counter counts them, and the item shown, if among them, is
// replaced by the next one.
document.addEventListener("review:decided-many", async (event) => {
  const { ids, count } = event.detail;
  decidedCounter.textContent = String(Number(decidedCounter.textContent) + count);
  if (current && ids.includes(current.id) && !busy) await next();
  else refreshSummary();
});

document.addEventListener("keydown", (event) => {
  if (event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement) return;
  if (event.target instanceof Element && event.target.closest("#bulk")) return; // keys there belong to the panel
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if ((event.key === "u" || event.key === "U") && lastDecision) {
    event.preventDefault();
    undo();
    return;
  }
  if (!current) return;
  if (event.key === "s" || event.key === "S") {
    event.preventDefault();
    skip();
    return;
  }
  const choice = current.decisions.find((c) => c.key === event.key);
  if (choice) {
    event.preventDefault();
    decide(choice.value);
  }
});

refreshSummary();
next();
