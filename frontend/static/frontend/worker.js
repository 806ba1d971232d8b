// The worker page: resume the tasks this worker already holds (after a reload) or lease the next, show each with
// its kind's renderer, take an answer only once its image has been on screen a moment, submit it, repeat.
// While a task is on screen the next one is leased and its image decoded (one task ahead, never more), so an
// answer brings the next task from memory; the answer goes to the server in the background, in order, with its
// Idempotency-Key, retried until it is stored, and brings back the lease after next in the same request
// (`submit?next=true`: one round trip per task). Answers not yet stored stay in sessionStorage until they are:
// across a network outage, a reload and a trip to sign in again. The last yes/no answer can be taken back for a
// few seconds (Undo, U or Ctrl+Z): the task comes back on screen and the one shown waits its turn.

import { api, stored, submitAnswer, tabStorage } from "../shared/api.js";
import { showExamples } from "./examples.js";
import { helpInstructions, showInstructions } from "../shared/instructions.js";
import { forgetImage, preload } from "../shared/images.js";
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
const unsaved = document.getElementById("unsaved");
const shortcuts = document.getElementById("shortcuts");
const helpSection = document.getElementById("help-instructions"); // the help sheet's instructions of the task shown
const undoBar = document.getElementById("undo-bar");
const undoText = document.getElementById("undo-text");
const undoButton = document.getElementById("undo");
const undoMs = 1000 * Number(app.dataset.undoSeconds || 0);
const renderers = new Map();
const waiting = []; // assignments this worker holds that are not on screen yet (resumed after a reload)
// `?prefetch=off` shows the page as it was before prefetching (store the answer, then lease the next): the
// latency bench measures both.
const prefetching = new URLSearchParams(window.location.search).get("prefetch") !== "off";

let current = null; // { assignment, cleanup, stopClock, seenAt, answerable } of the task on screen
let ahead = null; // the promise of the task leased one ahead (an assignment, or null when none was waiting)
let busy = false; // a skip, or (without prefetching, and for training) an answer, is on its way
let halted = false; // signed out: nothing more is leased or taken until the worker signs in again
let retryTimer = null;
let lastAnswer = null; // { assignment, question, label, timer } of the answer that can still be taken back
// The lease the last answer brought back (`next`) that nobody has taken yet; null: the server had no task then;
// undefined: none is waiting (the next lease is asked for with tasks/next).
let handed;

async function rendererFor(kind) {
  if (!renderers.has(kind)) {
    if (!/^[a-z0-9_]+$/.test(kind)) throw new Error(`This page cannot show tasks of kind ${kind}.`);
    renderers.set(kind, await import(`./kinds/${kind}.js`));
  }
  return renderers.get(kind);
}

// Why tasks may have stopped coming: a failed qualification (and when to try again) or a block in a dataset.
const standingList = document.getElementById("standing");
async function showStanding() {
  try {
    const standing = await api(base, "me/standing");
    const lines = [...standing.qualifications_failed, ...standing.blocked].map((s) => {
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
  if (current) {
    if (current.cleanup) current.cleanup();
    current.stopClock();
  }
  current = null;
  body.replaceChildren();
  delete body.dataset.assignment;
  delete body.dataset.answerable;
  delete body.dataset.shown;
  leaseLine.hidden = true;
  trainingNote.hidden = true;
  skipButton.hidden = true;
}

const kindsQuery = kinds ? `kinds=${encodeURIComponent(kinds)}` : "";
const nextPath = () => "tasks/next" + (kinds ? `?${kindsQuery}` : "");
const chainedQuery = "next=true" + (kinds ? `&${kindsQuery}` : "");

// Hand a lease this page will not show back to the queue (one that already ended needs nothing).
function giveBack(assignment) {
  api(base, `assignments/${assignment.id}/release`, { method: "POST" }).catch(() => {});
}

// How many leases the page asked tasks/next for itself: an answer that asked for the lease after next sees from
// it whether the page leased its own while the answer was on its way.
let ownLeases = 0;

// The next lease: the one an answer brought back, else a new one from tasks/next.
function lease() {
  if (handed === undefined) {
    ownLeases += 1;
    return api(base, nextPath());
  }
  const assignment = handed;
  handed = undefined;
  return Promise.resolve(assignment);
}

// An answer brought back the lease after next: it waits for prefetch() (or next()). One brought back before
// the last was taken waits its turn with the others this worker holds.
function hand(assignment) {
  if (handed) waiting.push(handed);
  handed = assignment;
}

// The lease an answer brought back, unless the page leased its own while that answer was on its way (an answer
// slower than answerFirst waits): then it is one more than the one ahead the page holds, so it goes back to the
// queue at once instead of waiting on this worker's lease; and a `null` (no task then) says nothing any more.
function handOrReturn(assignment, leasedMeanwhile) {
  if (!leasedMeanwhile) return hand(assignment);
  if (assignment) giveBack(assignment);
}

// Lease the task after the one on screen and get it ready to show: its kind's module loaded, its image decoded.
// One ahead is enough (an answer takes longer than a lease and an image load); it is an ordinary lease, so a
// reload gives it back with the others this worker holds (`assignments?held=true`), and one that is not
// answered goes back to the queue when its lease ends. The answer being sent goes first (or after a second, if
// the network is slow to take it). Training questions are not leased ahead: which one comes next depends on
// the answer to this one.
function prefetch() {
  if (!prefetching || halted || ahead || (current && current.assignment.training)) return;
  if (waiting.length) {
    ready(waiting[0]).catch(() => {});
    return;
  }
  const slot = { settled: false };
  slot.promise = answerFirst()
    .then(lease)
    .then(async (assignment) => {
      if (assignment) await ready(assignment).catch(() => {}); // shown anyway: present() reports the problem
      return assignment;
    })
    .finally(() => (slot.settled = true));
  slot.promise.catch(() => {}); // a failed lease ahead is retried by next(), which reports it
  ahead = slot;
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// Before leasing: the answer being sent (it may make new tasks, or change what this worker is offered), unless
// the network is slow to take it.
const answerFirst = () => (delivering ? Promise.race([delivering, pause(1000)]) : Promise.resolve());

async function ready(assignment) {
  await rendererFor(assignment.task.kind);
  if (assignment.task.image) await preload(assignment.task.image.url);
}

// A task leased ahead is shown only with enough of its lease left to answer it; else it goes back.
function fresh(assignment) {
  const length = Date.parse(assignment.expires_at) - Date.parse(assignment.leased_at);
  if (Date.parse(assignment.expires_at) - Date.now() > Math.min(10000, length / 2)) return true;
  giveBack(assignment);
  if (assignment.task.image) forgetImage(assignment.task.image.url);
  return false;
}

async function next() {
  clearTimeout(retryTimer);
  leave();
  if (halted) return;
  if (waiting.length) return present(waiting.shift());
  let assignment;
  if (ahead) {
    const slot = ahead;
    ahead = null;
    if (!slot.settled) show("Loading the next task…");
    assignment = await slot.promise.catch(() => null);
    if (halted) return;
    if (assignment && fresh(assignment)) return present(assignment);
  }
  show("Loading the next task…");
  try {
    await answerFirst();
    if (halted) return;
    assignment = await lease();
  } catch (error) {
    if (signedOut(error)) {
      // The session ended (or this account lost the worker role): sign in again, then come back here.
      // Answers not stored yet are kept in this tab and sent after signing in.
      window.location.assign(signInLink().href);
      return;
    }
    show(`Could not load a task: ${error.message}`, true);
    retryTimer = setTimeout(next, 5000);
    return;
  }
  if (!assignment) {
    show("No tasks are waiting right now. This page checks again every 10 seconds.");
    showStanding();
    retryTimer = setTimeout(next, 10000);
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
    giveBack(assignment);
    return;
  }
  const entry = { assignment, cleanup: null, seenAt: null, answerable: false, stopClock: () => {} };
  current = entry;
  body.dataset.assignment = String(assignment.id);
  body.setAttribute("aria-busy", "true");
  entry.cleanup = renderer.render(body, assignment, (answer) => take(entry, answer));
  showExamples(body, assignment.task);
  showInstructions(body, assignment.task);
  helpInstructions(helpSection, assignment.task);
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
      body.dataset.shown = String(entry.assignment.id);
      show(entry.question);
      prefetch();
      setTimeout(() => {
        if (current !== entry) return;
        entry.answerable = true;
        body.dataset.answerable = "true";
      }, MIN_LOOK_MS);
    });
  const img = body.querySelector("img.task-image"); // not an example image: those may load later
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
  if (entry !== current || busy || halted) return;
  if (entry.seenAt === null) {
    show("The image is still loading: answer once you have seen it.");
    return;
  }
  if (!entry.answerable) return; // seen for less than MIN_LOOK_MS
  const pending = { assignment: entry.assignment.id, answer, training: Boolean(entry.assignment.training) };
  // The answer brings back the lease after next when the page will want one ahead: it will unless this was a
  // training question (the next one depends on the answer) or resumed tasks are still waiting to be shown.
  pending.next = prefetching && !pending.training && waiting.length <= 1;
  outboxPut(pending);
  offerUndo(pending, entry.question);
  if (prefetching && !pending.training) {
    next(); // the task leased ahead, from memory (first: the answer asks for the lease after next once it is taken)
    deliver(); // in the background
    return;
  }
  // Training feedback belongs to this answer, and the next training question depends on it: store it first.
  busy = true;
  body.classList.add("submitting");
  deliver().then((delivered) => {
    busy = false;
    body.classList.remove("submitting");
    if (delivered) next();
  });
}

// The outbox: answers taken and not yet stored, oldest first, kept in tabStorage.
function outbox() {
  const kept = JSON.parse(tabStorage.get(stored.pending) || "[]");
  return Array.isArray(kept) ? kept : [kept]; // one answer, as kept before there was an outbox
}

function outboxPut(pending) {
  tabStorage.set(stored.pending, JSON.stringify([...outbox(), pending]));
}

function outboxDrop(pending) {
  const left = outbox().filter((p) => p.assignment !== pending.assignment);
  if (left.length) tabStorage.set(stored.pending, JSON.stringify(left));
  else tabStorage.delete(stored.pending);
  tabStorage.delete(stored.draft(pending.assignment));
}

let delivering = null;
let retryNow = null; // ends the wait before the next attempt ("Try again now")

// Send the outbox, one answer at a time and in order, until it is empty (resolves true) or the worker is signed
// out (resolves false: the answers stay kept until after signing in). A network or server error is retried
// after 1, 2, 4, then every 8 s, with "Try again now" to skip the wait; a refusal (the lease ended, not yours)
// drops that answer and says why. The same Idempotency-Key goes with every attempt of one answer,
// so an attempt whose reply was lost is stored once.
function deliver() {
  if (!delivering) delivering = drain().finally(() => (delivering = null));
  return delivering;
}

// Whether the answer about to be sent should bring back the lease after next, decided when it is sent, not when
// it was taken: only the last answer kept asks (after an outage several are sent at once, and each bringing one
// back would leave the page holding more than one ahead), and only while the page has none ahead and is not
// getting one (none handed back, no lease ahead under way: once the network is back the page's own lease ahead
// may already be on its way, and the two would race).
function wantsLeaseAhead(pending) {
  const kept = outbox();
  const last = kept[kept.length - 1];
  return Boolean(last && last.assignment === pending.assignment && handed === undefined && ahead === null);
}

async function drain() {
  let failures = 0;
  for (let pending = outbox()[0]; pending; pending = outbox()[0]) {
    try {
      const chained = pending.next && wantsLeaseAhead(pending);
      const query = chained ? chainedQuery : "";
      const leasedBefore = ownLeases;
      const result = await submitAnswer(base, pending.assignment, pending.answer, { attempts: 1, query });
      outboxDrop(pending);
      if (chained) handOrReturn(result.next, ownLeases !== leasedBefore);
      failures = 0;
      answered.textContent = String(Number(answered.textContent) + 1);
      showFeedback(pending, result.feedback);
      if (!unsaved.classList.contains("refused")) unsaved.hidden = true;
    } catch (error) {
      if (signedOut(error)) {
        halt();
        return false;
      }
      if (error.status && error.status < 500) {
        outboxDrop(pending);
        showUnsaved(`An answer was not saved: ${error.message}`, true);
        continue;
      }
      failures += 1;
      const count = outbox().length;
      showUnsaved(
        (count === 1 ? "Your last answer is not saved yet" : `${count} answers are not saved yet`) +
          ` (${error.message}). ${count === 1 ? "It is" : "They are"} kept here and sent again in a moment.`,
        false,
        actionButton("Try again now", () => retryNow && retryNow()),
      );
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, Math.min(1000 * 2 ** (failures - 1), 8000));
        retryNow = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      retryNow = null;
    }
  }
  return true;
}

function showUnsaved(message, refused, action = null) {
  unsaved.replaceChildren(message);
  if (action) unsaved.append(" ", action);
  unsaved.classList.toggle("refused", refused);
  unsaved.hidden = false;
}

// Signed out (the session expired, or ended in another tab): stop here and offer to sign in again. The tasks
// on screen and leased ahead stay this worker's; after signing in the kept answers are sent and they come back.
function halt() {
  halted = true;
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

// Only a yes/no answer outside training can be taken back (the server says so for anything else, too); the
// offer ends a little before the server's window, which starts when the answer is stored, not taken.
function offerUndo(pending, question) {
  clearTimeout(lastAnswer && lastAnswer.timer);
  lastAnswer = null;
  undoBar.hidden = true;
  if (pending.training || !undoMs || !pending.answer || typeof pending.answer.answer !== "boolean") return;
  const label = pending.answer.answer ? "Yes" : "No";
  const until = Date.now() + undoMs;
  lastAnswer = { assignment: pending.assignment, question, label, until, timer: setTimeout(() => offerUndo({}), undoMs) };
  undoText.textContent = `You answered ${label} to “${question}”.`;
  undoButton.hidden = false;
  undoBar.hidden = false;
}

function undoSaid(message) {
  undoText.textContent = message;
  undoButton.hidden = true;
  undoBar.hidden = false;
  setTimeout(() => {
    if (!lastAnswer && undoButton.hidden) undoBar.hidden = true;
  }, 6000);
}

// Take the last answer back: once it is stored (the server decides whether it still may), the task it answered
// is leased to this worker again and shown; the task on screen goes first in line after it.
async function undo() {
  const target = lastAnswer;
  if (!target || busy || halted) return;
  clearTimeout(target.timer);
  lastAnswer = null;
  busy = true;
  undoButton.hidden = true;
  undoText.textContent = "Taking your answer back…";
  try {
    if (!(await deliver())) return;
    const lease = await api(base, `assignments/${target.assignment}/undo`, { method: "POST" });
    answered.textContent = String(Math.max(0, Number(answered.textContent) - 1));
    if (current) waiting.unshift(current.assignment);
    leave();
    clearTimeout(retryTimer);
    undoSaid(`Your ${target.label} is taken back: answer again.`);
    busy = false;
    return present(lease);
  } catch (error) {
    if (signedOut(error)) return halt();
    const left = target.until - Date.now();
    if ((!error.status || error.status >= 500) && left > 0) {
      // The server may not have heard (or its reply was lost): offer it again, a retry is answered the same.
      lastAnswer = { ...target, timer: setTimeout(() => offerUndo({}), left) };
      undoText.textContent = `Could not take your answer back (${error.message}).`;
      undoButton.hidden = false;
      return;
    }
    undoSaid(`Your answer stands: ${error.message}`);
  } finally {
    busy = false;
  }
}

function expired(entry) {
  if (current !== entry) return;
  delete body.dataset.answerable;
  show("The time for this task ran out, so it went back to the queue.", true, actionButton("Next task", next));
}

// Can't tell (or the image does not load): the task goes back to the queue for another worker.
async function skip(entry) {
  if (current !== entry || busy || halted) return;
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
undoButton.addEventListener("click", undo);
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
  const ctrlZ = (event.ctrlKey || event.metaKey) && !event.altKey && (event.key === "z" || event.key === "Z");
  if (ctrlZ && !shortcuts.open && !event.repeat) {
    if (lastAnswer) event.preventDefault(); // nothing to take back: the browser's own undo
    undo();
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
  } else if ((event.key === "s" || event.key === "S") && current) {
    event.preventDefault();
    skip(current);
  } else if ((event.key === "u" || event.key === "U") && lastAnswer) {
    event.preventDefault();
    undo();
  }
});

async function start() {
  if (outbox().length) {
    show("Sending the answers you gave before…");
    if (!(await deliver())) return;
  }
  try {
    const held = await api(base, "assignments?held=true");
    waiting.push(...held.results);
    handed = undefined; // a lease the answers sent just now brought back is one of those held

  } catch (error) {
    if (signedOut(error)) return window.location.assign(signInLink().href);
  }
  next();
}

start();
