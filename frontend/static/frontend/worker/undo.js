// Undo: after a yes/no answer a bar says what was answered, with "Undo" (U, Ctrl+Z) for a few seconds. Undo
// waits until the answer is stored; the server then takes it back (or says why it stands) and leases the task
// to this worker again, and the page shows it. An undo lost on the network is offered again while the window
// lasts (a retry is answered the same).

import { api } from "../../shared/api.js";
import { Doing, free, state } from "./state.js";

// `undoMs`: the server's window (the offer ends a little before it: the server counts from when the answer is
// stored, not taken); `bar`, `text`, `button`: the undo bar; `deliver`: sends the outbox (delivery.js);
// `onTakenBack(lease)`: the page shows the task given back; `onSignedOut()`.
export function answerUndo({ base, undoMs, bar, text, button, deliver, onTakenBack, onSignedOut }) {
  // Offer to take `pending` back. Only a yes/no answer outside training can be (the server says so for anything
  // else, too); any other answer ends the offer of the one before.
  function offer(pending, question) {
    clearTimeout(state.undoable && state.undoable.timer);
    state.undoable = null;
    bar.hidden = true;
    if (pending.training || !undoMs || !pending.answer || typeof pending.answer.answer !== "boolean") return;
    const label = pending.answer.answer ? "Yes" : "No";
    const until = Date.now() + undoMs;
    state.undoable = { assignment: pending.assignment, question, label, until, timer: setTimeout(withdraw, undoMs) };
    text.textContent = `You answered ${label} to “${question}”.`;
    button.hidden = false;
    bar.hidden = false;
  }

  const withdraw = () => offer({});

  function said(message) {
    text.textContent = message;
    button.hidden = true;
    bar.hidden = false;
    setTimeout(() => {
      if (!state.undoable && button.hidden) bar.hidden = true;
    }, 6000);
  }

  // Take the last answer back: once it is stored (the server decides whether it still may), the task it answered
  // is leased to this worker again and shown.
  async function undo() {
    const target = state.undoable;
    if (!target || !free()) return;
    clearTimeout(target.timer);
    state.undoable = null;
    state.doing = Doing.UNDOING;
    button.hidden = true;
    text.textContent = "Taking your answer back…";
    try {
      if (!(await deliver())) return;
      const lease = await api(base, `assignments/${target.assignment}/undo`, { method: "POST" });
      said(`Your ${target.label} is taken back: answer again.`);
      state.doing = Doing.NOTHING;
      return onTakenBack(lease);
    } catch (error) {
      if (error.status === 401 || error.status === 403) return onSignedOut();
      const left = target.until - Date.now();
      if ((!error.status || error.status >= 500) && left > 0) {
        // The server may not have heard (or its reply was lost): offer it again, a retry is answered the same.
        state.undoable = { ...target, timer: setTimeout(withdraw, left) };
        text.textContent = `Could not take your answer back (${error.message}).`;
        button.hidden = false;
        return;
      }
      said(`Your answer stands: ${error.message}`);
    } finally {
      state.doing = Doing.NOTHING;
    }
  }

  return { offer, undo };
}
