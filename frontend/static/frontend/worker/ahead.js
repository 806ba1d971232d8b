// The lease ahead: while a task is on screen the next one is leased and made ready (its kind's module loaded, its
// image decoded), so an answer brings it from memory. One ahead is enough (an answer takes longer than a lease
// and an image load), and the page asks for no more: a second one ahead would keep a task from other workers for
// nothing (the one exception, a lease a slow answer brings back, is kept rather than lost: `broughtBack`). It
// is an ordinary lease, so a reload gives it back with the others this worker holds (`assignments?held=true`),
// and one that is not answered goes back to the queue when its lease ends. Its states (`state.brought`,
// `state.ahead`) are named in state.js.

import { api } from "../../shared/api.js";
import { forgetImage } from "../../shared/images.js";
import { ready } from "./renderers.js";
import { Ahead, Brought, Page, state } from "./state.js";

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Before leasing: the answer being sent (it may make new tasks, or change what this worker is offered), unless
// the network is slow to take it.
export const answerFirst = () => (state.sending ? Promise.race([state.sending, pause(1000)]) : Promise.resolve());

// `prefetching` off shows the page as it was before the lease ahead (store the answer, then lease the next).
export function leaseAhead({ base, kinds, prefetching }) {
  const kindsQuery = kinds ? `kinds=${encodeURIComponent(kinds)}` : "";
  const nextPath = "tasks/next" + (kinds ? `?${kindsQuery}` : "");
  // The query of a submit that asks for the lease after next.
  const chainedQuery = "next=true" + (kinds ? `&${kindsQuery}` : "");

  // Hand a lease this page will not show back to the queue (one that already ended needs nothing).
  function giveBack(assignment) {
    api(base, `assignments/${assignment.id}/release`, { method: "POST" }).catch(() => {});
  }

  // The next lease: the one an answer brought back, else a new one from tasks/next.
  function lease() {
    const brought = state.brought;
    if (brought.is === Brought.NOTHING) {
      state.ownLeases += 1;
      return api(base, nextPath);
    }
    state.brought = { is: Brought.NOTHING };
    return Promise.resolve(brought.is === Brought.LEASE ? brought.assignment : null);
  }

  // Whether an answer sent now should bring back the lease after next: only while the page has none ahead and
  // is not getting one (none brought back, no lease ahead under way: the two would race).
  const wanted = () => state.brought.is === Brought.NOTHING && state.ahead.is === Ahead.NONE;

  // What an answer that asked for the lease after next brought back (`next`: a lease, or null when the server
  // had no task): the next lease takes it. One brought back before the last was taken waits its turn with the
  // others this worker holds. So does one that arrives after the page leased its own while that answer was on
  // its way (an answer slower than answerFirst waits): the page then holds one more than the one ahead until the
  // worker reaches it, and that is the lesser cost. Given back, it would be lost to this worker for good (the
  // queue never offers a worker a task they already had), and a lone worker, or a question that wants a vote
  // from each of a small team, would wait for that task forever. A null says nothing any more then.
  function broughtBack(assignment, leasedMeanwhile) {
    if (leasedMeanwhile) {
      if (assignment) state.held.push(assignment);
      return;
    }
    if (state.brought.is === Brought.LEASE) state.held.push(state.brought.assignment);
    state.brought = assignment ? { is: Brought.LEASE, assignment } : { is: Brought.NO_TASK };
  }

  // Lease the task after the one on screen and get it ready to show, after the answer being sent (or after a
  // second, if the network is slow to take it). Training questions are not leased ahead: which one comes next
  // depends on the answer to this one. A held lease is next: only its image is decoded ahead.
  function prefetch() {
    if (!prefetching || state.page === Page.SIGNED_OUT || state.ahead.is !== Ahead.NONE) return;
    if (state.shown && state.shown.assignment.training) return;
    if (state.held.length) {
      ready(state.held[0]).catch(() => {});
      return;
    }
    const slot = { is: Ahead.LEASING };
    slot.promise = answerFirst()
      .then(lease)
      .then(async (assignment) => {
        if (assignment) await ready(assignment).catch(() => {}); // shown anyway: present() reports the problem
        return assignment;
      })
      .finally(() => (slot.is = Ahead.READY));
    slot.promise.catch(() => {}); // a failed lease ahead is retried by next(), which reports it
    state.ahead = slot;
  }

  // The task ahead for the screen ({ is, promise }), or null when none is ahead; the page has none ahead after.
  function take() {
    const slot = state.ahead;
    state.ahead = { is: Ahead.NONE };
    return slot.is === Ahead.NONE ? null : slot;
  }

  // A task leased ahead is shown only with enough of its lease left to answer it (at least half, at most 10 s);
  // else it goes back.
  function fresh(assignment) {
    const length = Date.parse(assignment.expires_at) - Date.parse(assignment.leased_at);
    if (Date.parse(assignment.expires_at) - Date.now() > Math.min(10000, length / 2)) return true;
    giveBack(assignment);
    if (assignment.task.image) forgetImage(assignment.task.image.url);
    return false;
  }

  return { chainedQuery, giveBack, lease, wanted, broughtBack, prefetch, take, fresh };
}
