// How the draw page shows its image: zoom (wheel, + and -, 0 to fit), pan (drag with the space bar held, or
// with the middle button), and brightness and contrast sliders for dark or flat photographs. The zoom is a CSS
// transform of the stage inside a clipping viewport, so the SVG layer's viewBox stays the original image's
// pixels and getBoundingClientRect() includes the transform: pointer positions still turn into original pixels
// (boxview.imageStage's toImage), at any zoom. The filters apply to the image only, never to the boxes.

import { clamp } from "../shared/boxview.js";

const MAX_ZOOM = 8;
const STEP = 1.25;
const TYPING = ["INPUT", "TEXTAREA", "SELECT", "BUTTON", "A", "SUMMARY"];

// Wrap `stage` (the image and its SVG layer) in a zoomable viewport with its tools after it. `onChange` runs
// after every zoom or pan (handles keep their size on screen). Returns { viewport, zoomBy, cleanup }.
export function zoomable(stage, img, onChange) {
  const viewport = document.createElement("div");
  viewport.className = "viewport";
  stage.replaceWith(viewport);
  viewport.append(stage);
  let zoom = 1;
  let tx = 0;
  let ty = 0;

  const tools = document.createElement("div");
  tools.className = "view-tools";
  const zoomOut = toolButton("Zoom out", "-", () => zoomBy(1 / STEP));
  const level = document.createElement("output");
  level.className = "zoom-level";
  level.setAttribute("aria-label", "Zoom");
  const zoomIn = toolButton("Zoom in", "+", () => zoomBy(STEP));
  const fit = toolButton("Fit", "0", () => zoomBy(0));
  const brightness = slider("Brightness", 30, 250);
  const contrast = slider("Contrast", 30, 250);
  tools.append(zoomOut, level, zoomIn, fit, brightness.label, contrast.label);
  viewport.after(tools);

  function filter() {
    const b = Number(brightness.input.value);
    const c = Number(contrast.input.value);
    img.style.filter = b === 100 && c === 100 ? "" : `brightness(${b}%) contrast(${c}%)`;
  }
  brightness.input.addEventListener("input", filter);
  contrast.input.addEventListener("input", filter);

  function apply(notify = true) {
    // The zoomed image always covers the viewport: no empty margin to pan into.
    const w = stage.offsetWidth;
    const h = stage.offsetHeight;
    tx = clamp(tx, w - w * zoom, 0);
    ty = clamp(ty, h - h * zoom, 0);
    stage.style.transform = zoom === 1 ? "" : `translate(${tx}px, ${ty}px) scale(${zoom})`;
    viewport.classList.toggle("zoomed", zoom > 1);
    level.textContent = `${Math.round(zoom * 100)}%`;
    zoomOut.disabled = zoom <= 1;
    zoomIn.disabled = zoom >= MAX_ZOOM;
    if (notify) onChange();
  }

  // Zoom by `factor` (0: back to fit) keeping the point (cx, cy) of the viewport where it is; the centre when
  // no point is given (keys and buttons).
  function zoomBy(factor, cx = viewport.clientWidth / 2, cy = viewport.clientHeight / 2) {
    const next = factor === 0 ? 1 : clamp(zoom * factor, 1, MAX_ZOOM);
    tx = cx - ((cx - tx) * next) / zoom;
    ty = cy - ((cy - ty) * next) / zoom;
    zoom = next;
    apply();
  }

  viewport.addEventListener(
    "wheel",
    (event) => {
      event.preventDefault();
      const r = viewport.getBoundingClientRect();
      zoomBy(event.deltaY < 0 ? STEP : 1 / STEP, event.clientX - r.left, event.clientY - r.top);
    },
    { passive: false },
  );

  // Panning takes the pointer before the drawing layer sees it (capture phase), so it never draws.
  let spaceHeld = false;
  let pan = null;
  viewport.addEventListener(
    "pointerdown",
    (event) => {
      if (!(spaceHeld || event.button === 1)) return;
      event.preventDefault();
      event.stopPropagation();
      pan = { x: event.clientX, y: event.clientY, tx, ty };
      viewport.setPointerCapture(event.pointerId);
    },
    true,
  );
  viewport.addEventListener("pointermove", (event) => {
    if (!pan) return;
    tx = pan.tx + event.clientX - pan.x;
    ty = pan.ty + event.clientY - pan.y;
    apply();
  });
  const endPan = (event) => {
    if (!pan) return;
    pan = null;
    if (viewport.hasPointerCapture(event.pointerId)) viewport.releasePointerCapture(event.pointerId);
  };
  viewport.addEventListener("pointerup", endPan);
  viewport.addEventListener("pointercancel", endPan);

  const onKeyDown = (event) => {
    if (event.target && TYPING.includes(event.target.tagName)) return;
    if (event.ctrlKey || event.metaKey || event.altKey || document.querySelector("dialog[open]")) return;
    if (event.key === " ") {
      event.preventDefault(); // no page scroll while panning
      spaceHeld = true;
      viewport.classList.add("panning");
    } else if (event.repeat) {
      return;
    } else if (event.key === "+" || event.key === "=") {
      event.preventDefault();
      zoomBy(STEP);
    } else if (event.key === "-") {
      event.preventDefault();
      zoomBy(1 / STEP);
    } else if (event.key === "0") {
      event.preventDefault();
      zoomBy(0);
    }
  };
  const onKeyUp = (event) => {
    if (event.key !== " ") return;
    spaceHeld = false;
    viewport.classList.remove("panning");
  };
  document.addEventListener("keydown", onKeyDown);
  document.addEventListener("keyup", onKeyUp);
  apply(false); // the caller draws its own layer once it is built

  return {
    viewport,
    zoomBy,
    cleanup() {
      document.removeEventListener("keydown", onKeyDown);
      document.removeEventListener("keyup", onKeyUp);
    },
  };
}

function toolButton(label, key, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "tool";
  const hint = document.createElement("kbd");
  hint.textContent = key;
  b.append(`${label} `, hint);
  b.addEventListener("click", onClick);
  return b;
}

function slider(name, min, max) {
  const label = document.createElement("label");
  label.className = "adjust";
  const input = document.createElement("input");
  input.type = "range";
  input.min = String(min);
  input.max = String(max);
  input.value = "100";
  input.name = name.toLowerCase();
  label.append(`${name} `, input);
  return { label, input };
}
