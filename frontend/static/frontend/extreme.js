// The DRAW page in extreme-clicking mode (Papadopoulos, Uijlings, Keller, Ferrari, ICCV 2017, "Extreme clicking
// for efficient object annotation"): the worker clicks the top-, bottom-, left- and right-most points of one
// object, in any order; the box is their bounds, and the four points are sent with it. A point is placed where
// the pointer is let go, so a finger or mouse can slide it before lifting; a placed point can be dragged again.
// Backspace (or "Undo point") removes the last one, Esc clears, Enter submits, N answers "nothing left".
// By keyboard: the drawing area is a tab stop; an arrow key shows a cursor in the middle of the image, arrows
// move it (Shift: ten times larger steps), Enter places a point at the cursor. Zoom, pan and image filters:
// drawview.js. The points being placed are kept in sessionStorage, so a reload finds them. Coordinates are
// original-image pixels (the SVG layer's viewBox), whatever size the image is shown at.

import { stored, tabStorage } from "../shared/api.js";
import { boxRect, clamp, conceptHeader, imageStage, svgElement } from "../shared/boxview.js";
import { zoomable } from "./drawview.js";
import { button, onShortcut, touchScreen } from "./kinds/binary_vote.js";

const POINT_SCREEN_PX = touchScreen ? 14 : 6; // the radius a finger or a mouse can take a point by
const KEY_STEP_SCREEN_PX = 2;
const ROLES = ["top", "bottom", "left", "right"];
const ROLE_WORDS = { top: "top-most", bottom: "bottom-most", left: "left-most", right: "right-most" };
const ARROWS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
// Every order of the four points: the first that makes each one the extreme in its direction names them.
const ORDERS = permutations([0, 1, 2, 3]);

export function renderExtreme(container, assignment, answer) {
  const { task } = assignment;
  const { payload, image } = task;
  const name = payload.concept.name;
  const minSide = payload.min_side || 4;
  const minDifference = payload.min_difference || 5;
  const existing = payload.boxes.map((b) => b.box);
  container.innerHTML = "";
  conceptHeader(container, `Click the four extreme points of one ${name}`, payload.concept, payload.instructions);
  container.append(howTo(name));

  const { stage, img, svg, toImage, perScreenPixel } = imageStage(container, image,
    `The image in which to click the extreme points of one ${name}`);
  svg.classList.add("drawable", "extreme");
  svg.setAttribute("tabindex", "0");
  svg.setAttribute("role", "application");
  svg.setAttribute("aria-roledescription", "drawing area");
  svg.setAttribute("aria-label", `Click the top, bottom, left and right-most points of one ${name}: arrow keys ` +
    "move a cursor, Enter places a point, Backspace removes the last one");
  const view = zoomable(stage, img, () => redraw());
  existing.forEach((box) => boxRect(svg, box, "existing"));

  const message = document.createElement("p");
  message.className = "draw-message";
  message.setAttribute("role", "status");
  const count = document.createElement("p");
  count.className = "point-count";
  const actions = document.createElement("div");
  actions.className = "answers";
  const submitButton = button("Submit box", "Enter", "yes", () => submit());
  const undoButton = button("Undo point", "Backspace", "clear", () => undo());
  const clearButton = button("Clear", "Esc", "clear", () => clear());
  const noneButton = button(`No ${name} left without a box`, "N", "no", () => answer({ none_left: true }));
  actions.append(submitButton, undoButton, clearButton, noneButton);
  container.append(count, message, actions);

  const draftKey = stored.draft(assignment.id);
  let points = restored(tabStorage.get(draftKey), image); // [[x, y], ...] in the order placed
  let cursor = null; // the keyboard's cursor, [x, y]
  let drag = null; // index of the point following the pointer
  const rect = boxRect(svg, [0, 0, 0, 0], "draft");
  const layer = svgElement("g", { class: "extreme-points" });
  const cross = svgElement("path", { class: "cursor" });
  cross.setAttribute("vector-effect", "non-scaling-stroke");
  svg.append(layer, cross);

  function redraw() {
    const roles = points.length === 4 ? rolesOf(points) : null;
    submitButton.disabled = points.length < 4;
    undoButton.disabled = points.length === 0;
    count.textContent = `Points: ${points.length} of 4`;
    const r = POINT_SCREEN_PX * perScreenPixel();
    layer.replaceChildren(...points.map((p, i) => {
      const role = roles ? ROLES.find((k) => roles[k] === i) : null;
      return svgElement("circle", { class: "extreme-point", cx: p[0], cy: p[1], r, "data-index": i,
        "data-role": role || "" });
    }));
    if (points.length >= 2) {
      const [x1, y1, x2, y2] = bounds(points);
      Object.entries({ x: x1, y: y1, width: x2 - x1, height: y2 - y1 }).forEach(([k, v]) => rect.setAttribute(k, v));
      rect.classList.toggle("incomplete", points.length < 4);
      rect.style.display = "";
    } else {
      rect.style.display = "none";
    }
    if (cursor && document.activeElement === svg) {
      const [x, y] = cursor;
      const s = 2 * r;
      cross.setAttribute("d", `M${x - s} ${y}H${x + s}M${x} ${y - s}V${y + s}`);
      cross.style.display = "";
    } else {
      cross.style.display = "none";
    }
  }

  function keep() {
    if (points.length === 0) tabStorage.delete(draftKey);
    else tabStorage.set(draftKey, JSON.stringify(points));
  }

  function say(text, isError = false) {
    message.textContent = text;
    message.classList.toggle("error", isError);
  }

  // After each change: what is placed, and what to do next.
  function progress() {
    if (points.length < 4) {
      say(points.length ? `Point ${points.length} of 4 placed at ${at(points[points.length - 1])}.` : "");
      return;
    }
    const why = problem();
    say(why || `Box ${describe(bounds(points))}. ${touchScreen ? "Tap Submit box" : "Press Enter"} to send it.`,
      Boolean(why));
  }

  // The checks the server makes too, said before anything is sent.
  function problem() {
    if (!rolesOf(points)) {
      return "These four points are not the top, bottom, left and right-most points of one object: each " +
        "point must be the furthest one in its direction. Undo a point and click again.";
    }
    const [x1, y1, x2, y2] = bounds(points);
    if (x2 - x1 < minSide || y2 - y1 < minSide) return `The box is too small: each side needs at least ${minSide} px.`;
    const b = [x1, y1, x2, y2];
    for (const [i, other] of existing.entries()) {
      const diff = Math.max(...other.map((v, k) => Math.abs(v - b[k])));
      if (diff < minDifference) return `This box repeats box ${i + 1}, which is already there: box another ${name}.`;
    }
    return null;
  }

  function place(point) {
    if (points.length >= 4) {
      say("All four points are placed: drag one to move it, or Backspace removes the last one.", true);
      return false;
    }
    points.push(point);
    keep();
    redraw();
    progress();
    return true;
  }

  function undo() {
    if (!points.length) return;
    points.pop();
    drag = null;
    keep();
    redraw();
    say(points.length ? `Removed the last point; ${points.length} of 4 placed.` : "Removed the last point.");
  }

  function clear() {
    points = [];
    drag = null;
    keep();
    redraw();
    say("");
  }

  function submit() {
    if (points.length < 4) {
      say(`Click all four extreme points first: ${points.length} of 4 placed.`, true);
      return;
    }
    const rounded = points.map(([x, y]) => [Math.round(x * 10) / 10, Math.round(y * 10) / 10]);
    const roles = rolesOf(rounded);
    const why = problem();
    if (why || !roles) {
      say(why || "These points are not the four extreme points of one object.", true);
      return;
    }
    const named = Object.fromEntries(ROLES.map((role) => [role, rounded[roles[role]]]));
    answer({ points: named, image: image.ref });
  }

  svg.addEventListener("pointerdown", (event) => {
    if (event.button !== undefined && event.button !== 0) return;
    event.preventDefault();
    const index = event.target.dataset ? event.target.dataset.index : undefined;
    if (index !== undefined) {
      drag = Number(index);
    } else if (place(toImage(event))) {
      drag = points.length - 1;
    } else {
      return;
    }
    svg.setPointerCapture(event.pointerId);
  });

  svg.addEventListener("pointermove", (event) => {
    if (drag === null) return;
    points[drag] = toImage(event);
    redraw();
  });

  const end = (event) => {
    if (drag === null) return;
    points[drag] = toImage(event);
    drag = null;
    if (svg.hasPointerCapture(event.pointerId)) svg.releasePointerCapture(event.pointerId);
    keep();
    redraw();
    progress();
  };
  svg.addEventListener("pointerup", end);
  svg.addEventListener("pointercancel", end);

  svg.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const arrow = ARROWS[event.key];
    if (arrow) {
      event.preventDefault();
      if (cursor === null) {
        cursor = [image.width / 2, image.height / 2];
      } else {
        const step = KEY_STEP_SCREEN_PX * (event.shiftKey ? 10 : 1) * perScreenPixel();
        cursor = [clamp(cursor[0] + arrow[0] * step, 0, image.width), clamp(cursor[1] + arrow[1] * step, 0, image.height)];
      }
      redraw();
      say(`Cursor at ${at(cursor)}; Enter places point ${Math.min(points.length + 1, 4)} of 4.`);
    } else if (event.key === "Enter" && points.length < 4) {
      // Placing a point, not submitting: the page's Enter shortcut submits once all four are placed.
      event.preventDefault();
      event.stopPropagation();
      if (cursor === null) {
        cursor = [image.width / 2, image.height / 2];
        redraw();
        say(`Cursor at ${at(cursor)}: arrow keys move it, Enter places a point.`);
        return;
      }
      place([...cursor]);
    }
  });
  svg.addEventListener("focus", redraw);
  svg.addEventListener("blur", redraw);

  redraw();
  if (points.length) progress();
  const shortcuts = onShortcut({ Enter: submit, Escape: clear, Backspace: undo, n: () => noneButton.click() });
  return () => {
    shortcuts();
    view.cleanup();
  };
}

// Which point is which: {top: index, bottom: index, left: index, right: index} such that each named point is
// the furthest of the four in its direction (one point may be extreme twice over, as the corner of a
// triangle), or null when no naming works. The server checks the same (annotation/geometry.py).
export function rolesOf(points) {
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  const want = {
    top: (i) => ys[i] === Math.min(...ys),
    bottom: (i) => ys[i] === Math.max(...ys),
    left: (i) => xs[i] === Math.min(...xs),
    right: (i) => xs[i] === Math.max(...xs),
  };
  for (const order of ORDERS) {
    if (ROLES.every((role, k) => want[role](order[k]))) {
      return Object.fromEntries(ROLES.map((role, k) => [role, order[k]]));
    }
  }
  return null;
}

function bounds(points) {
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

function permutations(items) {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

function at([x, y]) {
  return `${Math.round(x)}, ${Math.round(y)}`;
}

function describe([x1, y1, x2, y2]) {
  const [a, b, c, d] = [x1, y1, x2, y2].map(Math.round);
  return `${c - a} by ${d - b} pixels, from ${a}, ${b} to ${c}, ${d}`;
}

// How to click: a small drawing of an object with its four extreme points and the box through them, and the
// steps in words. Open on the page; the worker can fold it away.
function howTo(name) {
  const box = document.createElement("details");
  box.className = "how-to extreme-how-to";
  box.open = true;
  const summary = document.createElement("summary");
  summary.textContent = "How to click extreme points";
  const figure = svgElement("svg", { viewBox: "0 0 120 80", width: 120, height: 80, role: "img",
    "aria-label": "An object with a dot at its top-most, bottom-most, left-most and right-most points, and the " +
      "box that passes through the four dots" });
  figure.append(
    svgElement("rect", { x: 12, y: 8, width: 96, height: 64, class: "how-to-box" }),
    svgElement("path", { d: "M60 8C80 12 108 30 100 44C96 58 70 72 52 72C30 70 12 52 12 38C14 22 40 10 60 8Z",
      class: "how-to-object" }),
    ...[[60, 8], [52, 72], [12, 38], [108, 36]].map(([cx, cy]) => svgElement("circle", { cx, cy, r: 4,
      class: "how-to-point" })),
  );
  const steps = document.createElement("ol");
  for (const text of [
    `Find the top-most, bottom-most, left-most and right-most points of one ${name} without a box: points on ` +
      `the ${name} itself, not the corners of a box.`,
    "Click each of the four, in any order; drag a point to move it, Backspace removes the last one.",
    "The box is drawn through the four points: check it, then submit.",
  ]) {
    const item = document.createElement("li");
    item.textContent = text;
    steps.append(item);
  }
  box.append(summary, figure, steps);
  return box;
}

// Points read back from sessionStorage, or none when they are missing or do not fit this image.
function restored(text, image) {
  try {
    const p = JSON.parse(text);
    const fits = Array.isArray(p) && p.length <= 4 && p.every((q) => Array.isArray(q) && q.length === 2
      && Number.isFinite(q[0]) && Number.isFinite(q[1]) && q[0] >= 0 && q[1] >= 0 && q[0] <= image.width
      && q[1] <= image.height);
    return fits ? p : [];
  } catch {
    return [];
  }
}
