// The settings that had only an API: pay per stage (cost-settings), worker instructions per stage
// (instructions), example images (examples), tasks per study-link or MTurk session (bundle-sizes) and the
// priority of waiting tasks (task-priorities). Every form shows the API's refusal (a 400 names the field).
import { api, cookie, el } from "./common.js";
import { instructionsNodes } from "../shared/instructions.js";

const app = document.getElementById("work-settings");
const base = app.dataset.api;
const id = app.dataset.dataset;

function reporter(form) {
  const error = form.querySelector("[role=alert]");
  const status = form.querySelector("[role=status]");
  return {
    clear() { error.textContent = ""; status.textContent = ""; },
    saved(text = `Saved at ${new Date().toLocaleTimeString()}.`) { status.textContent = text; },
    failed(err) { error.textContent = err.message; },
  };
}

let stages = []; // [{kind, title, text, updated_at}] from the instructions endpoint: the stage names everywhere
let classes = [];
const stageTitle = (kind) => (stages.find((s) => s.kind === kind) || { title: kind }).title;

// --- pay per stage --------------------------------------------------------------------------------------------
const payForm = document.getElementById("pay-form");

function showPay(settings) {
  payForm.elements.currency.value = settings.currency;
  payForm.elements.default_reward.value = settings.default_reward;
  payForm.elements.fee_fraction.value = settings.fee_fraction;
  document.querySelector("#pay-rewards tbody").replaceChildren(...stages.map((stage) => {
    const input = el("input", { type: "number", step: "0.0001", min: "0", name: `reward:${stage.kind}`,
      "aria-label": `Reward per answer: ${stage.title}`, placeholder: "default" });
    if (stage.kind in settings.rewards) input.value = String(settings.rewards[stage.kind]);
    return el("tr", { "data-stage": stage.kind }, el("td", { text: `${stage.title} (${stage.kind})` }), el("td", {}, input));
  }));
}

payForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const report = reporter(payForm);
  report.clear();
  const rewards = {};
  for (const input of payForm.querySelectorAll("input[name^='reward:']")) {
    if (input.value !== "") rewards[input.name.slice("reward:".length)] = Number(input.value);
  }
  const body = {
    currency: payForm.elements.currency.value.trim(),
    default_reward: payForm.elements.default_reward.value,
    fee_fraction: Number(payForm.elements.fee_fraction.value),
    rewards,
  };
  try {
    showPay(await api(base, `datasets/${id}/cost-settings`, { method: "PATCH", body }));
    report.saved();
  } catch (err) {
    report.failed(err);
  }
});

// --- worker instructions --------------------------------------------------------------------------------------
const instructionsForm = document.getElementById("instructions-form");
const kindSelect = document.getElementById("instructions-kind");
const textArea = document.getElementById("instructions-text");
let maxChars = 5000;

function showInstructionsOf(kind) {
  const stage = stages.find((s) => s.kind === kind);
  textArea.value = stage ? stage.text : "";
  preview();
}

function preview() {
  document.getElementById("instructions-preview").replaceChildren(instructionsNodes(textArea.value));
  document.getElementById("instructions-count").textContent = `${textArea.value.length} / ${maxChars} characters`;
}

async function loadInstructions() {
  const data = await api(base, `datasets/${id}/instructions`);
  stages = data.stages;
  maxChars = data.max_chars;
  const chosen = kindSelect.value;
  kindSelect.replaceChildren(...stages.map((s) => el("option", { value: s.kind,
    text: `${s.title}${s.text ? " · written" : ""}` })));
  if (chosen) kindSelect.value = chosen;
  showInstructionsOf(kindSelect.value);
}

kindSelect.addEventListener("change", () => showInstructionsOf(kindSelect.value));
textArea.addEventListener("input", preview);
instructionsForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const report = reporter(instructionsForm);
  report.clear();
  const kind = kindSelect.value;
  try {
    const data = await api(base, `datasets/${id}/instructions`, { method: "PATCH", body: { kind, text: textArea.value } });
    stages = data.stages;
    await loadInstructions();
    report.saved(textArea.value ? `Saved: workers see these instructions on every ${stageTitle(kind)} task.`
      : `Removed the instructions of ${stageTitle(kind)}.`);
  } catch (err) {
    report.failed(err);
  }
});

// --- example images -------------------------------------------------------------------------------------------
const exampleForm = document.getElementById("example-form");

async function refreshExamples() {
  const page = await api(base, `datasets/${id}/examples`);
  const items = page.results ?? page;
  document.querySelector("#example-list tbody").replaceChildren(...items.map((e) => {
    const remove = e.state === "shown" ? el("button", { type: "button", text: "Stop showing" }) : "";
    if (remove) {
      remove.addEventListener("click", async () => {
        const report = reporter(exampleForm);
        report.clear();
        try {
          await api(base, `datasets/${id}/examples/${e.id}/remove`, { method: "POST" });
          report.saved("The example is no longer shown.");
          await refreshExamples();
        } catch (err) {
          report.failed(err);
        }
      });
    }
    const thumb = el("img", { src: e.url, alt: e.caption || `Example of ${e.concept}`, width: "80", loading: "lazy" });
    return el("tr", { "data-example": String(e.id) }, el("td", {}, thumb), el("td", { text: e.concept }),
      el("td", { text: e.kind }), el("td", { text: e.polarity === "positive" ? "what counts" : "what does not count" }),
      el("td", { text: e.caption }), el("td", { text: e.state }), el("td", {}, remove));
  }));
}

exampleForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const report = reporter(exampleForm);
  report.clear();
  const body = new FormData(exampleForm);
  try {
    const response = await fetch(`${base}datasets/${id}/examples`, {
      method: "POST", body, credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": cookie("csrftoken") },
    });
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      const named = data && typeof data === "object"
        ? Object.entries(data).map(([k, v]) => `${k}: ${[].concat(v).join(" ")}`).join("; ")
        : `The server answered ${response.status}.`;
      throw new Error(named);
    }
    report.saved(`Added: workers see it on every ${data.kind} task of ${data.concept}.`);
    exampleForm.elements.file.value = "";
    exampleForm.elements.caption.value = "";
    await refreshExamples();
  } catch (err) {
    report.failed(err);
  }
});

// --- tasks per session ----------------------------------------------------------------------------------------
const sessionsForm = document.getElementById("sessions-form");

function showSessions(data) {
  document.querySelector("#session-sizes tbody").replaceChildren(...data.kinds.map((row) => {
    const input = el("input", { type: "number", min: "1", max: String(data.max_size), name: row.kind,
      "aria-label": `Tasks per session: ${row.kind}`, placeholder: `${data.default_size} (default)` });
    if (!row.default) input.value = String(row.size);
    return el("tr", { "data-kind": row.kind }, el("td", { text: row.kind }),
      el("td", { text: row.study_link ? `/study/${row.study_link}/` : "none" }), el("td", {}, input));
  }));
}

sessionsForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const report = reporter(sessionsForm);
  report.clear();
  const sizes = {};
  for (const input of sessionsForm.querySelectorAll("tbody input")) {
    sizes[input.name] = input.value === "" ? null : Number(input.value);
  }
  try {
    showSessions(await api(base, `datasets/${id}/bundle-sizes`, { method: "PATCH", body: { sizes } }));
    report.saved();
  } catch (err) {
    report.failed(err);
  }
});

// --- task priorities ------------------------------------------------------------------------------------------
function showPriorities(data) {
  document.querySelector("#priority-groups tbody").replaceChildren(...data.groups.map((g) => {
    const range = g.min_priority === g.max_priority ? String(g.min_priority) : `${g.min_priority} to ${g.max_priority}`;
    return el("tr", { "data-stage": g.stage, "data-concept": g.concept }, el("td", { text: stageTitle(g.stage) }),
      el("td", { text: g.concept ? `${g.concept_name} (${g.concept})` : "" }),
      el("td", { class: "num", text: String(g.tasks) }), el("td", { class: "num", text: range }));
  }));
  if (!data.groups.length) {
    document.querySelector("#priority-groups tbody").append(el("tr", {}, el("td", { colspan: "4", text: "No task is waiting." })));
  }
}

document.getElementById("priority-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const error = document.getElementById("priority-error");
  const status = document.getElementById("priority-status");
  error.textContent = "";
  status.textContent = "";
  const body = { change: Number.parseInt(form.elements.change.value, 10), stage: form.elements.stage.value,
    concept: form.elements.concept.value };
  try {
    const data = await api(base, `datasets/${id}/task-priorities`, { method: "POST", body });
    showPriorities(data);
    status.textContent = `${data.changed} waiting task${data.changed === 1 ? "" : "s"} moved ` +
      `${body.change > 0 ? "up" : "down"} by ${Math.abs(body.change)}.`;
  } catch (err) {
    error.textContent = err.message;
  }
});

// --- loading --------------------------------------------------------------------------------------------------
async function loadClasses() {
  const data = await api(base, `datasets/${id}/concepts`);
  classes = [...data.selected].sort((a, b) => a.name.localeCompare(b.name));
  const options = () => classes.map((c) => el("option", { value: c.wnid, text: `${c.name} (${c.wnid})` }));
  document.querySelector("#example-form select[name=concept]").replaceChildren(...options());
  document.getElementById("priority-concept").replaceChildren(el("option", { value: "", text: "every class" }), ...options());
}

async function start() {
  await loadInstructions();
  document.getElementById("priority-stage").replaceChildren(el("option", { value: "", text: "every stage" }),
    ...stages.map((s) => el("option", { value: s.kind, text: s.title })));
  const tasks = [
    api(base, `datasets/${id}/cost-settings`).then(showPay).catch((err) => reporter(payForm).failed(err)),
    loadClasses().catch((err) => reporter(exampleForm).failed(err)),
    refreshExamples().catch((err) => reporter(exampleForm).failed(err)),
    api(base, `datasets/${id}/bundle-sizes`).then(showSessions).catch((err) => reporter(sessionsForm).failed(err)),
    api(base, `datasets/${id}/task-priorities`).then(showPriorities)
      .catch((err) => { document.getElementById("priority-error").textContent = err.message; }),
  ];
  await Promise.all(tasks);
  app.dataset.ready = "true";
}

start().catch((err) => reporter(instructionsForm).failed(err));
