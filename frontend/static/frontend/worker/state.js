// The worker page's state in one object, and the names of its states. The page's modules (worker.js, the
// delivery queue, the lease ahead, undo) keep nothing of their own between events: what the page holds and
// what it is doing is here, each part changed by the module that owns it.

// Whether the page takes work. SIGNED_OUT lasts until the worker signs in again: nothing is leased, taken or
// sent meanwhile, and the answers kept in the outbox are sent after signing in.
export const Page = Object.freeze({ RUNNING: "running", SIGNED_OUT: "signed-out" });

// What the page is waiting for that keeps the keys from acting (answers, skips and undos wait until it ends).
export const Doing = Object.freeze({
  NOTHING: "nothing",
  SKIPPING: "skipping", // the task on screen is being handed back to the queue
  STORING: "storing", // an answer is stored before the next task shows (training, or `?prefetch=off`)
  UNDOING: "undoing", // the last answer is being taken back
});

// How far the task on screen has got: its image is being decoded and painted (a key says "still loading"),
// then it has been seen for less than MIN_LOOK_MS (a key is a bounce, ignored), then it can be answered.
export const Shown = Object.freeze({ PAINTING: "painting", LOOKING: "looking", ANSWERABLE: "answerable" });

// What an answer brought back for the next lease (`submit?next=true`) that no lease has taken yet.
export const Brought = Object.freeze({
  NOTHING: "nothing", // the next lease asks tasks/next
  LEASE: "lease", // the lease after next (`brought.assignment`): the next lease takes it
  NO_TASK: "no-task", // the server had no task then: the next lease finds none without asking
});

// The task leased ahead of the one on screen (one ahead, never more).
export const Ahead = Object.freeze({
  NONE: "none",
  LEASING: "leasing", // `ahead.promise`: the answer being sent first, then the lease, its kind's module, its image
  READY: "ready", // `ahead.promise` has settled: a task ready to show, none (null), or a failure next() retries
});

export const state = {
  page: Page.RUNNING,
  doing: Doing.NOTHING,
  // The task on screen: { assignment, question, phase (Shown), cleanup, stopClock }, or null.
  shown: null,
  // Leases this worker holds that are not on screen yet, shown first: resumed after a reload, or the task that
  // was on screen when an undo brought its answered task back.
  held: [],
  brought: { is: Brought.NOTHING },
  ahead: { is: Ahead.NONE },
  // How many leases the page asked tasks/next for itself: an answer that asked for the lease after next sees
  // from it whether the page leased its own while the answer was on its way.
  ownLeases: 0,
  // The outbox being sent: a promise of true (all stored) or false (signed out), or null when nothing is sent.
  sending: null,
  retryNow: null, // ends the wait before the outbox's next attempt ("Try again now")
  // The answer that can still be taken back: { assignment, question, label, until, timer }, or null.
  undoable: null,
  retryTimer: null, // the next look for a task, after none was waiting or leasing failed
};

// Whether a key or button may act now: signed in, and nothing under way that the action would race.
export const free = () => state.page === Page.RUNNING && state.doing === Doing.NOTHING;
