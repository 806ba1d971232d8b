// The DRAW page (ILSVRC §3.2.1): drag on the image to draw one box around one instance that has no box yet,
// adjust it by its handles or move it, then Enter (or the Submit button) to submit; Esc clears; N answers "nothing left to box".
// Mouse, pen and touch all arrive as pointer events. By keyboard: the drawing area is a tab stop; an arrow key
// draws a box in the middle, arrows move it, Tab goes through its eight handles (arrows then move that handle)
// and on out of the area; Shift makes steps ten times larger. Zoom, pan and image filters: drawview.js. The box being drawn is kept in sessionStorage, so a reload
// (or a trip to sign in again) finds it where it was. Coordinates are kept in original-image pixels (the SVG
// layer's viewBox), so the stored box is the same whatever size the image is shown at. A dataset that draws by
// extreme clicking gets its own page instead (../extreme.js): the task's `draw_mode` says which.

import { stored, tabStorage } from "../../shared/api.js";
import { button, onShortcut, touchScreen } from "./binary_vote.js";
import { boxRect, clamp, conceptHeader, imageStage, svgElement } from "../../shared/boxview.js";
import { zoomable } from "../drawview.js";
import { renderExtreme } from "../extreme.js";

// Handles a finger can take (on touch screens), or a mouse without hiding the edge.
const HANDLE_SCREEN_PX = touchScreen ? 28 : 12;
const KEY_STEP_SCREEN_PX = 2;
// Handles: which of x1, y1, x2, y2 each one moves.
const HANDLES = {
  nw: [1, 1, 0, 0], n: [0, 1, 0, 0], ne: [0, 1, 1, 0], e: [0, 0, 1, 0],
  se: [0, 0, 1, 1], s: [0, 0, 0, 1], sw: [1, 0, 0, 1], w: [1, 0, 0, 0],
};

export function render(container, assignment, answer) {
  if (assignment.task.payload.draw_mode === "extreme") return renderExtreme(container, assignment, answer);
  const { task } = assignment;
  const { payload, image } = task;
  const minSide = payload.min_side || 4;
  const minDifference = payload.min_difference || 5;
  const existing = payload.boxes.map((b) => b.box);
  container.innerHTML = "";
  conceptHeader(container, `Draw a box around one ${payload.concept.name}`, payload.concept, payload.instructions);

  const { stage, img, svg, toImage, perScreenPixel } = imageStage(container, image, `The image in which to box one ${payload.concept.name}`);
  svg.classList.add("drawable");
  svg.setAttribute("tabindex", "0");
  svg.setAttribute("role", "application");
  svg.setAttribute("aria-roledescription", "drawing area");
  svg.setAttribute("aria-label", `Box one ${payload.concept.name}: arrow keys draw and move the box, ` +
    "Tab goes to its corners and sides, Enter submits");
  const view = zoomable(stage, img, () => redraw());
  existing.forEach((box) => boxRect(svg, box, "existing"));

  const message = document.createElement("p");
  message.className = "draw-message";
  message.setAttribute("role", "status");
  const actions = document.createElement("div");
  actions.className = "answers";
  const submitButton = button("Submit box", "Enter", "yes", () => submit());
  const clearButton = button("Clear", "Esc", "clear", () => clear());
  const noneButton = button(`No ${payload.concept.name} left without a box`, "N", "no", () => answer({ none_left: true }));
  actions.append(submitButton, clearButton, noneButton);
  container.append(message, actions);

  const draftKey = stored.draft(assignment.id);
  let box = restored(tabStorage.get(draftKey), image); // [x1, y1, x2, y2] in image pixels
  let drag = null; // { mode: "new" | "move" | handle name, start: [x, y], origin: box }
  let part = "move"; // what the arrow keys change: the whole box, or one handle
  const rect = boxRect(svg, [0, 0, 0, 0], "draft");
  rect.style.display = "none";
  const handles = Object.keys(HANDLES).map((name) => {
    const h = svgElement("rect", { class: `handle handle-${name}`, "data-handle": name });
    h.style.display = "none";
    svg.append(h);
    return h;
  });

  function normalised(b) {
    return [Math.min(b[0], b[2]), Math.min(b[1], b[3]), Math.max(b[0], b[2]), Math.max(b[1], b[3])];
  }

  function redraw() {
    submitButton.disabled = box === null;
    if (box === null) {
      rect.style.display = "none";
      handles.forEach((h) => (h.style.display = "none"));
      return;
    }
    const [x1, y1, x2, y2] = normalised(box);
    Object.entries({ x: x1, y: y1, width: x2 - x1, height: y2 - y1 }).forEach(([k, v]) => rect.setAttribute(k, v));
    rect.style.display = "";
    const size = HANDLE_SCREEN_PX * perScreenPixel();
    const at = { n: [(x1 + x2) / 2, y1], s: [(x1 + x2) / 2, y2], e: [x2, (y1 + y2) / 2], w: [x1, (y1 + y2) / 2],
      nw: [x1, y1], ne: [x2, y1], se: [x2, y2], sw: [x1, y2] };
    handles.forEach((h) => {
      const [cx, cy] = at[h.dataset.handle];
      Object.entries({ x: cx - size / 2, y: cy - size / 2, width: size, height: size }).forEach(([k, v]) =>
        h.setAttribute(k, v));
      h.style.display = "";
      h.classList.toggle("active", h.dataset.handle === part && document.activeElement === svg);
    });
  }

  function keep() {
    if (box === null) tabStorage.delete(draftKey);
    else tabStorage.set(draftKey, JSON.stringify(box));
  }

  function say(text, isError = false) {
    message.textContent = text;
    message.classList.toggle("error", isError);
  }

  // The checks the server makes too; the page says what is wrong before anything is sent.
  function problem(b) {
    const [x1, y1, x2, y2] = b;
    if (x2 - x1 < minSide || y2 - y1 < minSide) return `The box is too small: each side needs at least ${minSide} px.`;
    for (const [i, other] of existing.entries()) {
      const diff = Math.max(...other.map((v, k) => Math.abs(v - b[k])));
      if (diff < minDifference) return `This box repeats box ${i + 1}, which is already there: box another ${payload.concept.name}.`;
    }
    return null;
  }

  function clear() {
    box = null;
    drag = null;
    say("");
    keep();
    redraw();
  }

  function submit() {
    if (box === null) {
      say("Drag on the image to draw a box first.", true);
      return;
    }
    const b = normalised(box).map((v) => Math.round(v * 10) / 10);
    const why = problem(b);
    if (why) {
      say(why, true);
      return;
    }
    answer({ box: b, image: image.ref });
  }

  svg.addEventListener("pointerdown", (event) => {
    if (event.button !== undefined && event.button !== 0) return;
    event.preventDefault();
    const point = toImage(event);
    const handle = event.target.dataset ? event.target.dataset.handle : undefined;
    if (handle && box) {
      drag = { mode: handle, start: point, origin: normalised(box) };
    } else if (box && inside(point, normalised(box))) {
      drag = { mode: "move", start: point, origin: normalised(box) };
    } else {
      drag = { mode: "new", start: point, origin: null };
      box = [point[0], point[1], point[0], point[1]];
    }
    svg.setPointerCapture(event.pointerId);
    say("");
    redraw();
  });

  svg.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const [x, y] = toImage(event);
    const [dx, dy] = [x - drag.start[0], y - drag.start[1]];
    if (drag.mode === "new") {
      box = [drag.start[0], drag.start[1], x, y];
    } else if (drag.mode === "move") {
      const [x1, y1, x2, y2] = drag.origin;
      const mx = clamp(dx, -x1, image.width - x2);
      const my = clamp(dy, -y1, image.height - y2);
      box = [x1 + mx, y1 + my, x2 + mx, y2 + my];
    } else {
      const moves = HANDLES[drag.mode];
      box = drag.origin.map((v, k) => (moves[k] ? clamp(v + (k % 2 ? dy : dx), 0, k % 2 ? image.height : image.width) : v));
    }
    redraw();
  });

  const end = (event) => {
    if (!drag) return;
    drag = null;
    if (svg.hasPointerCapture(event.pointerId)) svg.releasePointerCapture(event.pointerId);
    box = normalised(box);
    if (box[2] - box[0] < 1 && box[3] - box[1] < 1) box = null; // a click, not a drag
    keep();
    redraw();
    if (box) say(problem(box) || ADJUST, Boolean(problem(box)));
  };
  svg.addEventListener("pointerup", end);
  svg.addEventListener("pointercancel", end);

  const PARTS = ["move", ...Object.keys(HANDLES)];
  const PART_NAMES = { move: "the whole box", nw: "the top left corner", n: "the top side", ne: "the top right corner",
    e: "the right side", se: "the bottom right corner", s: "the bottom side", sw: "the bottom left corner",
    w: "the left side" };
  const ARROWS = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };

  function describe(b) {
    const [x1, y1, x2, y2] = b.map(Math.round);
    return `${x2 - x1} by ${y2 - y1} pixels, from ${x1}, ${y1} to ${x2}, ${y2}`;
  }

  svg.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Tab" && box) {
      const next = PARTS.indexOf(part) + (event.shiftKey ? -1 : 1);
      if (next < 0 || next >= PARTS.length) {
        part = "move"; // Tab leaves the area; coming back starts with the whole box
        redraw();
        return;
      }
      event.preventDefault();
      part = PARTS[next];
      redraw();
      say(`Arrow keys now move ${PART_NAMES[part]}.`);
      return;
    }
    const arrow = ARROWS[event.key];
    if (!arrow) return;
    event.preventDefault();
    if (box === null) {
      const [w, h] = [image.width / 3, image.height / 3];
      box = [w, h, 2 * w, 2 * h];
      part = "move";
    } else {
      const step = KEY_STEP_SCREEN_PX * (event.shiftKey ? 10 : 1) * perScreenPixel();
      const [dx, dy] = [arrow[0] * step, arrow[1] * step];
      const [x1, y1, x2, y2] = normalised(box);
      if (part === "move") {
        const mx = clamp(dx, -x1, image.width - x2);
        const my = clamp(dy, -y1, image.height - y2);
        box = [x1 + mx, y1 + my, x2 + mx, y2 + my];
      } else {
        // A side never passes the opposite one: the handle being moved stays the one the worker chose.
        const moves = HANDLES[part];
        box = [
          moves[0] ? clamp(x1 + dx, 0, x2 - 1) : x1,
          moves[1] ? clamp(y1 + dy, 0, y2 - 1) : y1,
          moves[2] ? clamp(x2 + dx, x1 + 1, image.width) : x2,
          moves[3] ? clamp(y2 + dy, y1 + 1, image.height) : y2,
        ];
      }
    }
    keep();
    redraw();
    say(`Box ${describe(box)}.`);
  });
  svg.addEventListener("focus", redraw);
  svg.addEventListener("blur", redraw);

  redraw();
  if (box) say(ADJUST);
  const shortcuts = onShortcut({ Enter: submit, Escape: clear, n: () => noneButton.click() });
  return () => {
    shortcuts();
    view.cleanup();
  };
}

const ADJUST = touchScreen
  ? "Adjust the box by its handles if needed, then tap Submit box."
  : "Adjust the box by its handles if needed, then press Enter.";

// A draft box read back from sessionStorage, or null when there is none or it does not fit this image.
function restored(text, image) {
  try {
    const b = JSON.parse(text);
    const fits = Array.isArray(b) && b.length === 4 && b.every((v) => Number.isFinite(v) && v >= 0)
      && b[2] <= image.width && b[3] <= image.height && b[0] < b[2] && b[1] < b[3];
    return fits ? b : null;
  } catch {
    return null;
  }
}

function inside([x, y], [x1, y1, x2, y2]) {
  return x > x1 && x < x2 && y > y1 && y < y2;
}
