// The worker page: lease the next task, show it with its kind's renderer, submit the answer, repeat.

import { api, submitAnswer } from "./api.js";

const app = document.getElementById("task-app");
const base = app.dataset.api;
const kinds = app.dataset.kinds;
const statusLine = document.getElementById("status");
const body = document.getElementById("task-body");
const answered = document.getElementById("answered");
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

async function next() {
  if (cleanup) cleanup();
  cleanup = null;
  body.innerHTML = "";
  show("Loading the next task…");
  let assignment;
  try {
    assignment = await api(base, "tasks/next" + (kinds ? `?kinds=${encodeURIComponent(kinds)}` : ""));
  } catch (error) {
    if (error.status === 401 || error.status === 403) {
      // The session ended (or this account lost the worker role): sign in again, then come back here.
      window.location.assign(`/accounts/login/?next=${encodeURIComponent(window.location.pathname + window.location.search)}`);
      return;
    }
    show(`Could not load a task: ${error.message}`, true);
    setTimeout(next, 10000);
    return;
  }
  if (!assignment) {
    show("No tasks are waiting right now. This page checks again every 10 seconds.");
    setTimeout(next, 10000);
    return;
  }
  try {
    const renderer = await rendererFor(assignment.task.kind);
    show(assignment.task.title);
    body.dataset.assignment = assignment.id;
    cleanup = renderer.render(body, assignment, (answer) => submit(assignment, answer));
  } catch (error) {
    // Say so instead of "Loading…" forever, and hand the task back rather than sit on its lease.
    show(`This task cannot be shown here: ${error.message}`, true);
    api(base, `assignments/${assignment.id}/release`, { method: "POST" }).catch(() => {});
  }
}

async function submit(assignment, answer) {
  if (busy) return;
  busy = true;
  body.classList.add("submitting");
  try {
    await submitAnswer(base, assignment.id, answer);
    answered.textContent = String(Number(answered.textContent) + 1);
    await next();
  } catch (error) {
    show(`Your answer was not saved: ${error.message}`, true);
    if (error.status === 409) setTimeout(next, 1500);
  } finally {
    busy = false;
    body.classList.remove("submitting");
  }
}

next();
