// The worker page: resume the tasks this worker already holds (after a reload) or lease the next, show each with
// its kind's renderer, take an answer only once its image has been on screen a moment, submit it, repeat.
// An answer not yet stored stays in sessionStorage until it is: across a reload and a trip to sign in again.

import { api, stored, submitAnswer, tabStorage } from "./api.js";
import { leaseCountdown } from "./lease.js";

// An answer sooner than this after the image appeared is a key bounce or a second press meant for the task
// before, not a judgement of this image.
const MIN_LOOK_MS = 500;

const app = document.getElementById("task-app");
const base = app.dataset.api;
const kinds = app.dataset.kinds;
const loginUrl = app.dataset.login;
const statusLine = document.getElementById("status");
const body = document.getElementById("task-body");
const answered = document.getElementById("answered");
const trainingNote = document.getElementById("training");
const feedbackBox = document.getElementById("last-answer");
const leaseLine = document.getElementById("lease");
const skipButton = document.getElementById("skip");
const skippedCounter = document.getElementById("skipped");
const shortcuts = document.getElementById("shortcuts");
const renderers = new Map();
const waiting = []; // assignments this worker holds that are not on screen yet (resumed after a reload)

let current = null; // { assignment, cleanup, stopClock, seenAt, answerable } of the task on screen
let busy = false;
let retryTimer = null;

async function rendererFor(kind) {
  if (!renderers.has(kind)) {
    if (!/^[a-z0-9_]+$/.test(kind)) throw new Error(`This page cannot show tasks of kind ${kind}.`);
    renderers.set(kind, await import(`./kinds/${kind}.js`));
  }
  return renderers.get(kind);
}

function show(message, isError = false, action = null) {
  statusLine.replaceChildren(message);
  if (action) statusLine.append(" ", action);
  statusLine.classList.toggle("error", isError);
}

function actionButton(label, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "link";
  b.textContent = label;
  b.addEventListener("click", onClick);
  return b;
}

function signInLink() {
  const link = document.createElement("a");
  link.href = `${loginUrl}?next=${encodeURIComponent(window.location.pathname + window.location.search)}`;
  link.textContent = "Sign in again";
  return link;
}

const signedOut = (error) => error.status === 401 || error.status === 403;

function leave() {
  if (current) {
    if (current.cleanup) current.cleanup();
    current.stopClock();
  }
  current = null;
  body.replaceChildren();
  delete body.dataset.assignment;
  delete body.dataset.answerable;
  leaseLine.hidden = true;
  trainingNote.hidden = true;
  skipButton.hidden = true;
}

async function next() {
  clearTimeout(retryTimer);
  leave();
  if (waiting.length) return present(waiting.shift());
  show("Loading the next task…");
  let assignment;
  try {
    assignment = await api(base, "tasks/next" + (kinds ? `?kinds=${encodeURIComponent(kinds)}` : ""));
  } catch (error) {
    if (signedOut(error)) {
      // The session ended (or this account lost the worker role): sign in again, then come back here.
      window.location.assign(signInLink().href);
      return;
    }
    show(`Could not load a task: ${error.message}`, true);
    retryTimer = setTimeout(next, 10000);
    return;
  }
  if (!assignment) {
    show("No tasks are waiting right now. This page checks again every 10 seconds.");
    retryTimer = setTimeout(next, 10000);
    return;
  }
  return present(assignment);
}

async function present(assignment) {
  let renderer;
  try {
    renderer = await rendererFor(assignment.task.kind);
  } catch (error) {
    // Say so instead of "Loading…" forever, and hand the task back rather than sit on its lease.
    show(`This task cannot be shown here: ${error.message}`, true);
    api(base, `assignments/${assignment.id}/release`, { method: "POST" }).catch(() => {});
    return;
  }
  const entry = { assignment, cleanup: null, seenAt: null, answerable: false, stopClock: () => {} };
  current = entry;
  body.dataset.assignment = String(assignment.id);
  body.setAttribute("aria-busy", "true");
  entry.cleanup = renderer.render(body, assignment, (answer) => take(entry, answer));
  // The status line is the screen reader's live region: it reads the question itself, not the task kind.
  const heading = body.querySelector("h1");
  entry.question = heading ? heading.textContent : assignment.task.title;
  show(entry.question);
  announceTraining(assignment.training);
  entry.stopClock = leaseCountdown(leaseLine, body, base, assignment, () => expired(entry));
  skipButton.hidden = false;
  whenSeen(entry);
}

// The task can be answered once its image is decoded and painted (no image: at once).
function whenSeen(entry) {
  const seen = () =>
    requestAnimationFrame(() => {
      if (current !== entry) return;
      entry.seenAt = performance.now();
      body.removeAttribute("aria-busy");
      show(entry.question);
      setTimeout(() => {
        if (current !== entry) return;
        entry.answerable = true;
        body.dataset.answerable = "true";
      }, MIN_LOOK_MS);
    });
  const img = body.querySelector("img");
  if (!img) return seen();
  img.decode().then(seen, () => {
    if (current !== entry) return;
    show("The image of this task could not be loaded.", true, actionButton("Next task", () => skip(entry)));
  });
}

function announceTraining(training) {
  trainingNote.hidden = !training;
  if (training) {
    trainingNote.textContent = `Training question ${training.number} of ${training.size}. These show how the task ` +
      "works before the real ones: after a wrong answer this page shows the right one.";
  }
}

function take(entry, answer) {
  if (entry !== current || busy) return;
  if (entry.seenAt === null) {
    show("The image is still loading: answer once you have seen it.");
    return;
  }
  if (!entry.answerable) return; // seen for less than MIN_LOOK_MS
  const pending = { assignment: entry.assignment.id, answer, training: Boolean(entry.assignment.training) };
  tabStorage.set(stored.pending, JSON.stringify(pending));
  send(pending).then((outcome) => outcome !== "kept" && next());
}

// Send the answer in hand. Returns "stored", "dropped" (refused for good: the lease ended, or the task is not
// this worker's) or "kept" (the page keeps it and says how to get it stored).
async function send(pending) {
  busy = true;
  body.classList.add("submitting");
  try {
    const result = await submitAnswer(base, pending.assignment, pending.answer);
    forget(pending);
    answered.textContent = String(Number(answered.textContent) + 1);
    showFeedback(pending, result.feedback);
    return "stored";
  } catch (error) {
    if (signedOut(error)) {
      show("You are signed out, so your answer is not saved yet. It is kept here and sent once you sign in.", true,
        signInLink());
      return "kept";
    }
    if (error.status && error.status < 500) {
      forget(pending);
      show(`Your answer was not saved: ${error.message}`, true);
      await new Promise((resolve) => setTimeout(resolve, 2500));
      return "dropped";
    }
    show(`Your answer was not saved yet: ${error.message}`, true, actionButton("Try again", () => retry(pending)));
    return "kept";
  } finally {
    busy = false;
    body.classList.remove("submitting");
  }
}

async function retry(pending) {
  if (busy) return;
  if ((await send(pending)) !== "kept") next();
}

function forget(pending) {
  tabStorage.delete(stored.pending);
  tabStorage.delete(stored.draft(pending.assignment));
}

function showFeedback(pending, feedback) {
  feedbackBox.classList.toggle("wrong", Boolean(feedback));
  feedbackBox.hidden = !(feedback || pending.training);
  if (feedback) {
    const expected = feedback.expected && typeof feedback.expected.answer === "boolean"
      ? (feedback.expected.answer ? "Yes" : "No") : JSON.stringify(feedback.expected);
    feedbackBox.textContent = `Not quite: the right answer to the last question was ${expected}. ${feedback.explanation}`;
  } else if (pending.training) {
    feedbackBox.textContent = "Right: your answer to the last training question was correct.";
  }
}

function expired(entry) {
  if (current !== entry) return;
  show("The time for this task ran out, so it went back to the queue.", true, actionButton("Next task", next));
}

// Can't tell (or the image does not load): the task goes back to the queue for another worker.
async function skip(entry) {
  if (current !== entry || busy) return;
  busy = true;
  try {
    await api(base, `assignments/${entry.assignment.id}/release`, { method: "POST" });
    skippedCounter.textContent = String(Number(skippedCounter.textContent) + 1);
  } catch (error) {
    // A lease that already ended needs no release; the task is gone from this worker either way.
  } finally {
    busy = false;
  }
  tabStorage.delete(stored.draft(entry.assignment.id));
  next();
}

skipButton.addEventListener("click", () => current && skip(current));
// The shortcut list opens as a dialog beside the task; while it is open the task's keys do nothing
// (binary_vote.onShortcut checks for an open dialog), and Esc or ? closes it.
function showShortcuts() {
  shortcuts.show();
  shortcuts.querySelector("button").focus();
}
document.getElementById("help").addEventListener("click", showShortcuts);
// Page-wide keys, beside each kind's own: S skips, ? lists the keys, Esc closes the list. Same rules as the
// kinds' shortcuts: not while typing, not with a modifier (Shift excepted: "?" needs it), never on auto-repeat.
document.addEventListener("keydown", (event) => {
  if (event.target && ["INPUT", "TEXTAREA"].includes(event.target.tagName)) return;
  if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
  if (shortcuts.open) {
    if (event.key === "Escape" || event.key === "?") {
      event.preventDefault();
      shortcuts.close();
    }
    return;
  }
  if (event.key === "?") {
    event.preventDefault();
    showShortcuts();
  } else if ((event.key === "s" || event.key === "S") && current) {
    event.preventDefault();
    skip(current);
  }
});

async function start() {
  const pending = JSON.parse(tabStorage.get(stored.pending) || "null");
  if (pending) {
    show("Sending the answer you gave before…");
    if ((await send(pending)) === "kept") return;
  }
  try {
    const held = await api(base, "assignments?held=true");
    waiting.push(...held.results);
  } catch (error) {
    if (signedOut(error)) return window.location.assign(signInLink().href);
  }
  next();
}

start();
