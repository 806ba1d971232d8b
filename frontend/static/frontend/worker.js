// The worker page: resume the tasks this worker already holds (after a reload) or lease the next, show each with
// its kind's renderer, take an answer only once its image has been on screen a moment, submit it, repeat. This
// module is the page's loop and wiring; its state is one object (worker/state.js), and the parts that run beside
// the loop have their own modules: the task leased ahead (worker/ahead.js), the delivery queue that stores the
// answers in the background (worker/delivery.js) and undo (worker/undo.js).

import { api, stored, tabStorage } from "../shared/api.js";
import { helpInstructions, showInstructions } from "../shared/instructions.js";
import { showExamples } from "./examples.js";
import { leaseCountdown } from "./lease.js";
import { answerFirst, leaseAhead } from "./worker/ahead.js";
import { deliveryQueue, outbox, outboxPut } from "./worker/delivery.js";
import { rendererFor } from "./worker/renderers.js";
import { Ahead, Brought, Doing, free, Page, Shown, state } from "./worker/state.js";
import { answerUndo } from "./worker/undo.js";

// An answer sooner than this after the image appeared is a key bounce or a second press meant for the task
// before, not a judgement of this image.
const MIN_LOOK_MS = 500;

const app = document.getElementById("task-app");
const base = app.dataset.api;
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
const helpSection = document.getElementById("help-instructions"); // the help sheet's instructions of the task shown
const standingList = document.getElementById("standing");
// `?prefetch=off` shows the page as it was before prefetching (store the answer, then lease the next): the
// latency bench measures both.
const prefetching = new URLSearchParams(window.location.search).get("prefetch") !== "off";

const ahead = leaseAhead({ base, kinds: app.dataset.kinds, prefetching });
const delivery = deliveryQueue({
  base,
  ahead,
  unsaved: document.getElementById("unsaved"),
  onStored: (pending, result) => {
    answered.textContent = String(Number(answered.textContent) + 1);
    showFeedback(pending, result.feedback);
  },
  onSignedOut: halt,
  actionButton,
});
const undo = answerUndo({
  base,
  undoMs: 1000 * Number(app.dataset.undoSeconds || 0),
  bar: document.getElementById("undo-bar"),
  text: document.getElementById("undo-text"),
  button: document.getElementById("undo"),
  deliver: delivery.deliver,
  // The task taken back comes on screen; the one that was showing goes first in line after it.
  onTakenBack: (lease) => {
    answered.textContent = String(Math.max(0, Number(answered.textContent) - 1));
    if (state.shown) state.held.unshift(state.shown.assignment);
    leave();
    clearTimeout(state.retryTimer);
    return present(lease);
  },
  onSignedOut: halt,
});

// Why tasks may have stopped coming: a failed qualification (and when to try again), a block in a dataset, or
// a question kind offered less for the worker's standing on it.
async function showStanding() {
  try {
    const standing = await api(base, "me/standing");
    const lines = [...standing.qualifications_failed, ...standing.blocked, ...standing.held_back].map((s) => {
      const item = document.createElement("li");
      item.textContent = s.message;
      return item;
    });
    standingList.replaceChildren(...lines);
    standingList.hidden = !lines.length;
  } catch (error) {
    // A convenience: the queue keeps being asked whether or not this answers.
  }
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
  const shown = state.shown;
  if (shown) {
    if (shown.cleanup) shown.cleanup();
    shown.stopClock();
  }
  state.shown = null;
  body.replaceChildren();
  delete body.dataset.assignment;
  delete body.dataset.answerable;
  delete body.dataset.shown;
  leaseLine.hidden = true;
  trainingNote.hidden = true;
  skipButton.hidden = true;
}

// The next task on screen: a held one first, else the one leased ahead (if it is still fresh), else a new lease.
async function next() {
  clearTimeout(state.retryTimer);
  leave();
  if (state.page === Page.SIGNED_OUT) return;
  if (state.held.length) return present(state.held.shift());
  let assignment;
  const slot = ahead.take();
  if (slot) {
    if (slot.is === Ahead.LEASING) show("Loading the next task…");
    assignment = await slot.promise.catch(() => null);
    if (state.page === Page.SIGNED_OUT) return;
    if (assignment && ahead.fresh(assignment)) return present(assignment);
  }
  show("Loading the next task…");
  try {
    await answerFirst();
    if (state.page === Page.SIGNED_OUT) return;
    assignment = await ahead.lease();
  } catch (error) {
    if (signedOut(error)) {
      // The session ended (or this account lost the worker role): sign in again, then come back here.
      // Answers not stored yet are kept in this tab and sent after signing in.
      window.location.assign(signInLink().href);
      return;
    }
    show(`Could not load a task: ${error.message}`, true);
    state.retryTimer = setTimeout(next, 5000);
    return;
  }
  if (!assignment) {
    show("No tasks are waiting right now. This page checks again every 10 seconds.");
    showStanding();
    state.retryTimer = setTimeout(next, 10000);
    return;
  }
  standingList.hidden = true;
  return present(assignment);
}

async function present(assignment) {
  let renderer;
  try {
    renderer = await rendererFor(assignment.task.kind);
  } catch (error) {
    // Say so instead of "Loading…" forever, and hand the task back rather than sit on its lease.
    show(`This task cannot be shown here: ${error.message}`, true);
    ahead.giveBack(assignment);
    return;
  }
  const shown = { assignment, phase: Shown.PAINTING, cleanup: null, stopClock: () => {} };
  state.shown = shown;
  body.dataset.assignment = String(assignment.id);
  body.setAttribute("aria-busy", "true");
  shown.cleanup = renderer.render(body, assignment, (answer) => take(shown, answer));
  showExamples(body, assignment.task);
  showInstructions(body, assignment.task);
  helpInstructions(helpSection, assignment.task);
  // The status line is the screen reader's live region: it reads the question itself, not the task kind.
  const heading = body.querySelector("h1");
  shown.question = heading ? heading.textContent : assignment.task.title;
  show(shown.question);
  announceTraining(assignment.training);
  shown.stopClock = leaseCountdown(leaseLine, body, base, assignment, () => expired(shown));
  skipButton.hidden = false;
  whenSeen(shown);
}

// The task can be answered once its image is decoded and painted (no image: at once), and MIN_LOOK_MS after.
function whenSeen(shown) {
  const seen = () =>
    requestAnimationFrame(() => {
      if (state.shown !== shown) return;
      shown.phase = Shown.LOOKING;
      body.removeAttribute("aria-busy");
      body.dataset.shown = String(shown.assignment.id);
      show(shown.question);
      ahead.prefetch();
      setTimeout(() => {
        if (state.shown !== shown) return;
        shown.phase = Shown.ANSWERABLE;
        body.dataset.answerable = "true";
      }, MIN_LOOK_MS);
    });
  const img = body.querySelector("img.task-image"); // not an example image: those may load later
  if (!img) return seen();
  img.decode().then(seen, () => {
    if (state.shown !== shown) return;
    show("The image of this task could not be loaded.", true, actionButton("Next task", () => skip(shown)));
  });
}

function announceTraining(training) {
  trainingNote.hidden = !training;
  if (training) {
    trainingNote.textContent = `Training question ${training.number} of ${training.size}. These show how the task ` +
      "works before the real ones: after a wrong answer this page shows the right one.";
  }
}

function take(shown, answer) {
  if (shown !== state.shown || !free()) return;
  if (shown.phase === Shown.PAINTING) {
    show("The image is still loading: answer once you have seen it.");
    return;
  }
  if (shown.phase !== Shown.ANSWERABLE) return; // seen for less than MIN_LOOK_MS
  const pending = { assignment: shown.assignment.id, answer, training: Boolean(shown.assignment.training) };
  // The answer brings back the lease after next when the page will want one ahead: it will unless this was a
  // training question (the next one depends on the answer) or held tasks are still waiting to be shown.
  pending.next = prefetching && !pending.training && state.held.length <= 1;
  outboxPut(pending);
  undo.offer(pending, shown.question);
  if (prefetching && !pending.training) {
    next(); // the task leased ahead, from memory (first: the answer asks for the lease after next once it is taken)
    delivery.deliver(); // in the background
    return;
  }
  // Training feedback belongs to this answer, and the next training question depends on it: store it first.
  state.doing = Doing.STORING;
  body.classList.add("submitting");
  delivery.deliver().then((delivered) => {
    state.doing = Doing.NOTHING;
    body.classList.remove("submitting");
    if (delivered) next();
  });
}

// Signed out (the session expired, or ended in another tab): stop here and offer to sign in again. The tasks
// on screen and leased ahead stay this worker's; after signing in the kept answers are sent and they come back.
function halt() {
  state.page = Page.SIGNED_OUT;
  leave();
  show("You are signed out, so your answer is not saved yet. It is kept here and sent once you sign in.", true,
    signInLink());
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

function expired(shown) {
  if (state.shown !== shown) return;
  delete body.dataset.answerable;
  show("The time for this task ran out, so it went back to the queue.", true, actionButton("Next task", next));
}

// Can't tell (or the image does not load): the task goes back to the queue for another worker.
async function skip(shown) {
  if (state.shown !== shown || !free()) return;
  state.doing = Doing.SKIPPING;
  try {
    await api(base, `assignments/${shown.assignment.id}/release`, { method: "POST" });
    skippedCounter.textContent = String(Number(skippedCounter.textContent) + 1);
  } catch (error) {
    // A lease that already ended needs no release; the task is gone from this worker either way.
  } finally {
    state.doing = Doing.NOTHING;
  }
  tabStorage.delete(stored.draft(shown.assignment.id));
  next();
}

skipButton.addEventListener("click", () => state.shown && skip(state.shown));
document.getElementById("undo").addEventListener("click", undo.undo);
// The shortcut list opens as a dialog beside the task; while it is open the task's keys do nothing
// (binary_vote.onShortcut checks for an open dialog), and Esc or ? closes it.
function showShortcuts() {
  shortcuts.show();
  shortcuts.querySelector("button").focus();
}
document.getElementById("help").addEventListener("click", showShortcuts);
// Page-wide keys, beside each kind's own: S skips, ? lists the keys, Esc closes the list, U or Ctrl+Z undoes.
// Same rules as the kinds' shortcuts: not while typing, not with a modifier (Shift excepted: "?" needs it),
// never on auto-repeat.
document.addEventListener("keydown", (event) => {
  if (event.target && ["INPUT", "TEXTAREA"].includes(event.target.tagName)) return;
  const ctrlZ = (event.ctrlKey || event.metaKey) && !event.altKey && (event.key === "z" || event.key === "Z");
  if (ctrlZ && !shortcuts.open && !event.repeat) {
    if (state.undoable) event.preventDefault(); // nothing to take back: the browser's own undo
    undo.undo();
    return;
  }
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
  } else if ((event.key === "s" || event.key === "S") && state.shown) {
    event.preventDefault();
    skip(state.shown);
  } else if ((event.key === "u" || event.key === "U") && state.undoable) {
    event.preventDefault();
    undo.undo();
  }
});

// First the answers kept from before (a reload, a trip to sign in), then the leases this worker still holds
// (`assignments?held=true`, oldest first: the task that was on screen, then the one leased ahead).
async function start() {
  if (outbox().length) {
    show("Sending the answers you gave before…");
    if (!(await delivery.deliver())) return;
  }
  try {
    const held = await api(base, "assignments?held=true");
    state.held.push(...held.results);
    state.brought = { is: Brought.NOTHING }; // a lease the answers sent just now brought back is one of those held
  } catch (error) {
    if (signedOut(error)) return window.location.assign(signInLink().href);
  }
  next();
}

start();
