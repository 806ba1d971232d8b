// The image with an SVG layer on top whose coordinates are the ORIGINAL image's pixels (viewBox = 0 0 W H),
// whatever size the image is displayed at. Shared by the draw, quality and coverage pages.

import { taskImage } from "./images.js";

const SVG = "http://www.w3.org/2000/svg";

export function svgElement(name, attrs = {}) {
  const el = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  return el;
}

// Returns { stage, img, svg, toImage(event) }: toImage turns a pointer event into image pixels, clamped.
export function imageStage(container, image, alt) {
  const stage = document.createElement("div");
  stage.className = "stage";
  const img = taskImage(image.url);
  img.className = "task-image";
  img.alt = alt;
  img.width = image.width;
  img.height = image.height;
  img.draggable = false;
  const svg = svgElement("svg", {
    class: "overlay",
    viewBox: `0 0 ${image.width} ${image.height}`,
    preserveAspectRatio: "none",
  });
  stage.append(img, svg);
  container.append(stage);
  const toImage = (event) => {
    const rect = svg.getBoundingClientRect();
    const x = ((event.clientX - rect.left) / rect.width) * image.width;
    const y = ((event.clientY - rect.top) / rect.height) * image.height;
    return [clamp(x, 0, image.width), clamp(y, 0, image.height)];
  };
  // Screen pixels to image pixels, for sizes that should look the same at any zoom (handles, strokes).
  const perScreenPixel = () => image.width / Math.max(svg.getBoundingClientRect().width, 1);
  return { stage, img, svg, toImage, perScreenPixel };
}

export function boxRect(svg, box, cls) {
  const [x1, y1, x2, y2] = box;
  const rect = svgElement("rect", { x: x1, y: y1, width: x2 - x1, height: y2 - y1, class: `box ${cls}` });
  rect.setAttribute("vector-effect", "non-scaling-stroke");
  svg.append(rect);
  return rect;
}

export function clamp(value, lo, hi) {
  return Math.min(Math.max(value, lo), hi);
}

export function conceptHeader(container, title, concept, extra) {
  const h1 = document.createElement("h1");
  h1.className = "question";
  h1.textContent = title;
  container.append(h1);
  if (concept && concept.gloss) {
    const gloss = document.createElement("p");
    gloss.className = "gloss";
    gloss.textContent = `${concept.name}: ${concept.gloss}`;
    container.append(gloss);
  }
  if (extra) {
    const p = document.createElement("p");
    p.className = "instructions";
    p.textContent = extra;
    container.append(p);
  }
}
