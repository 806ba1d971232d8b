// The lease countdown of the worker page: how long this worker still holds the task, a "More time" button near
// the end, and a quiet extension while the worker is visibly busy with the task (drawing takes a while), so a
// box being drawn is not lost to an expired lease.

import { api } from "../shared/api.js";

const SECOND = 1000;

function clock(ms) {
  const seconds = Math.max(0, Math.ceil(ms / SECOND));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

// Show the countdown of `assignment` in `element` until the returned stop() is called. `onExpired` runs once
// when the lease has run out. Activity inside `area` in the last part of the lease extends it.
export function leaseCountdown(element, area, base, assignment, onExpired) {
  // The server's clock decides; the browser's is assumed close (both NTP-synchronised).
  let deadline = Date.parse(assignment.expires_at);
  const length = deadline - Date.parse(assignment.leased_at);
  // The last third of the lease, at most one minute: when "More time" is offered and activity extends.
  const late = Math.min(60 * SECOND, length / 3);
  let extending = false;
  let stopped = false;

  const label = document.createElement("span");
  const more = document.createElement("button");
  more.type = "button";
  more.className = "link more-time";
  more.textContent = "More time";
  more.hidden = true;
  more.addEventListener("click", () => extend());
  element.replaceChildren(label, " ", more);
  element.hidden = false;

  async function extend() {
    if (extending || stopped) return;
    extending = true;
    try {
      const renewed = await api(base, `assignments/${assignment.id}/extend`, { method: "POST" });
      deadline = Date.parse(renewed.expires_at);
      tick();
    } catch (error) {
      // A lease that already ended cannot be extended: the expiry below says so.
    } finally {
      extending = false;
    }
  }

  function tick() {
    if (stopped) return;
    const left = deadline - Date.now();
    label.textContent = left > 0 ? `Time left on this task: ${clock(left)}` : "The time for this task ran out.";
    element.classList.toggle("late", left <= late);
    more.hidden = !(left > 0 && left <= late);
    if (left <= 0) {
      stop();
      onExpired();
    }
  }

  const onActivity = () => {
    const left = deadline - Date.now();
    if (left > 0 && left <= late) extend();
  };
  area.addEventListener("pointerdown", onActivity);
  document.addEventListener("keydown", onActivity);
  const timer = setInterval(tick, SECOND);
  tick();

  function stop() {
    stopped = true;
    clearInterval(timer);
    area.removeEventListener("pointerdown", onActivity);
    document.removeEventListener("keydown", onActivity);
  }
  return stop;
}
