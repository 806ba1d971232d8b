// A provider session's page (MTurk assignment, study link): answer the bundle's items one after another with
// the worker page's own task modules, then hand back what the provider wants (a code, a redirect, or the
// MTurk form posted to the allow-listed submit URL the server chose).

import { api, submitAnswer } from "../shared/api.js";
import { showInstructions } from "../shared/instructions.js";

const app = document.getElementById("bundle-app");
const base = app.dataset.api;
const auth = { Authorization: `Bundle ${app.dataset.session}` };
const statusLine = document.getElementById("status");
const body = document.getElementById("task-body");
const progress = document.getElementById("progress");
const renderers = new Map();
let cleanup = null;
let busy = false;

async function rendererFor(kind) {
  if (!renderers.has(kind)) {
    if (!/^[a-z0-9_]+$/.test(kind)) throw new Error(`This page cannot show tasks of kind ${kind}.`);
    renderers.set(kind, await import(`./kinds/${kind}.js`));
  }
  return renderers.get(kind);
}

function show(message, isError = false) {
  statusLine.textContent = message;
  statusLine.classList.toggle("error", isError);
}

function finish(completion) {
  body.innerHTML = "";
  if (completion.submit_to) {
    show("All done. Sending your work to Mechanical Turk…");
    const form = document.createElement("form");
    form.id = "provider-submit";
    form.method = "POST";
    form.action = completion.submit_to;
    for (const [name, value] of Object.entries(completion.fields)) {
      const input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      input.value = value;
      form.append(input);
    }
    body.append(form);
    form.submit();
    return;
  }
  if (completion.redirect) {
    show("All done. Taking you back to the study…");
    window.location.assign(completion.redirect);
    return;
  }
  if (completion.code) {
    show("All done. Your completion code:");
    const code = document.createElement("p");
    code.id = "completion-code";
    code.className = "question";
    code.textContent = completion.code;
    body.append(code);
    return;
  }
  show("All done. Thank you!");
}

function render(step) {
  const { bundle } = step;
  progress.textContent = `${bundle.answered} / ${bundle.size}`;
  if (step.completion) {
    finish(step.completion);
    return false;
  }
  return true;
}

async function next() {
  if (cleanup) cleanup();
  cleanup = null;
  body.innerHTML = "";
  let step;
  try {
    step = await api(base, "bundle/next", { headers: auth });
  } catch (error) {
    show(`Could not load a task: ${error.message}`, true);
    if (error.status !== 401 && error.status !== 403) setTimeout(next, 10000);
    return;
  }
  if (!render(step)) return;
  if (!step.assignment) {
    show("No task is waiting for you right now. This page checks again every 10 seconds.");
    setTimeout(next, 10000);
    return;
  }
  const { assignment } = step;
  try {
    const renderer = await rendererFor(assignment.task.kind);
    show(assignment.task.title);
    body.dataset.assignment = assignment.id;
    cleanup = renderer.render(body, assignment, (answer) => submit(assignment, answer));
    showInstructions(body, assignment.task);
  } catch (error) {
    show(`This task cannot be shown here: ${error.message}`, true);
  }
}

async function submit(assignment, answer) {
  if (busy) return;
  busy = true;
  body.classList.add("submitting");
  try {
    const step = await submitAnswer(base, assignment.id, answer, {
      path: `bundle/assignments/${assignment.id}/submit`,
      headers: auth,
    });
    if (render(step)) await next();
  } catch (error) {
    show(`Your answer was not saved: ${error.message}`, true);
    if (error.status === 409) setTimeout(next, 1500);
  } finally {
    busy = false;
    body.classList.remove("submitting");
  }
}

next();
