// The delivery queue: answers taken and not yet stored wait in an outbox in tabStorage (this tab only: it
// survives a reload and a trip to sign in again) and are sent one at a time, in order, each with its own
// Idempotency-Key (the same on every attempt, so an attempt whose reply was lost is stored once). A network or
// server error keeps them with a line that says so and retries after 1, 2, 4, then every 8 s, "Try again now"
// skipping the wait; a refusal (the lease ended, not yours) drops that answer and says why.

import { stored, submitAnswer, tabStorage } from "../../shared/api.js";
import { state } from "./state.js";

// The outbox: { assignment, answer, training, next } of each answer taken and not yet stored, oldest first.
export function outbox() {
  const kept = JSON.parse(tabStorage.get(stored.pending) || "[]");
  return Array.isArray(kept) ? kept : [kept]; // one answer, as kept before there was an outbox
}

export function outboxPut(pending) {
  tabStorage.set(stored.pending, JSON.stringify([...outbox(), pending]));
}

function outboxDrop(pending) {
  const left = outbox().filter((p) => p.assignment !== pending.assignment);
  if (left.length) tabStorage.set(stored.pending, JSON.stringify(left));
  else tabStorage.delete(stored.pending);
  tabStorage.delete(stored.draft(pending.assignment));
}

// `ahead`: the lease ahead (ahead.js), which an answer may bring back; `unsaved`: the line about answers not
// stored; `onStored(pending, result)` and `onSignedOut()`: what the page does then; `actionButton(label,
// onClick)` makes the line's "Try again now".
export function deliveryQueue({ base, ahead, unsaved, onStored, onSignedOut, actionButton }) {
  // Send the outbox until it is empty (resolves true) or the worker is signed out (resolves false: the answers
  // stay kept until after signing in). One sending at a time: a second call joins the first.
  function deliver() {
    if (!state.sending) state.sending = drain().finally(() => (state.sending = null));
    return state.sending;
  }

  // Whether the answer about to be sent should bring back the lease after next, decided when it is sent, not
  // when it was taken: only the last answer kept asks (after an outage several are sent at once, and each
  // bringing one back would leave the page holding more than one ahead), and only while the lease ahead wants
  // one (once the network is back the page's own lease ahead may already be on its way).
  function chains(pending) {
    if (!pending.next) return false;
    const kept = outbox();
    const last = kept[kept.length - 1];
    return Boolean(last && last.assignment === pending.assignment && ahead.wanted());
  }

  async function drain() {
    let failures = 0;
    for (let pending = outbox()[0]; pending; pending = outbox()[0]) {
      try {
        const chained = chains(pending);
        const leasedBefore = state.ownLeases;
        const query = chained ? ahead.chainedQuery : "";
        const result = await submitAnswer(base, pending.assignment, pending.answer, { attempts: 1, query });
        outboxDrop(pending);
        if (chained) ahead.broughtBack(result.next, state.ownLeases !== leasedBefore);
        failures = 0;
        onStored(pending, result);
        if (!unsaved.classList.contains("refused")) unsaved.hidden = true;
      } catch (error) {
        if (error.status === 401 || error.status === 403) {
          onSignedOut();
          return false;
        }
        if (error.status && error.status < 500) {
          outboxDrop(pending);
          say(`An answer was not saved: ${error.message}`, true);
          continue;
        }
        failures += 1;
        const count = outbox().length;
        say(
          (count === 1 ? "Your last answer is not saved yet" : `${count} answers are not saved yet`) +
            ` (${error.message}). ${count === 1 ? "It is" : "They are"} kept here and sent again in a moment.`,
          false,
          actionButton("Try again now", () => state.retryNow && state.retryNow()),
        );
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, Math.min(1000 * 2 ** (failures - 1), 8000));
          state.retryNow = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        state.retryNow = null;
      }
    }
    return true;
  }

  function say(message, refused, action = null) {
    unsaved.replaceChildren(message);
    if (action) unsaved.append(" ", action);
    unsaved.classList.toggle("refused", refused);
    unsaved.hidden = false;
  }

  return { deliver };
}
