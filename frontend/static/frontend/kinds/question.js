// Consensus questions ("does this image show X?", "is this box tight?", ...) use the yes/no page of the plain
// binary vote: the same image, question, Yes/No buttons and Y/N keys. Box questions draw their box on top.

import { render as renderYesNo } from "./binary_vote.js";

export function render(container, assignment, answer) {
  const cleanup = renderYesNo(container, assignment, answer);
  const { box } = assignment.task.payload;
  const img = container.querySelector("img.task-image");
  if (box && img) outlineBox(img, box, assignment.task.image);
  return cleanup;
}

// The box is in original-image pixels; percentages keep it in place whatever size the image is shown at.
function outlineBox(img, box, { width, height }) {
  const frame = document.createElement("div");
  frame.className = "task-image-frame";
  frame.style.position = "relative";
  frame.style.display = "inline-block";
  img.replaceWith(frame);
  frame.append(img);
  const outline = document.createElement("div");
  outline.className = "task-box";
  Object.assign(outline.style, {
    position: "absolute",
    left: `${(100 * box.x1) / width}%`,
    top: `${(100 * box.y1) / height}%`,
    width: `${(100 * (box.x2 - box.x1)) / width}%`,
    height: `${(100 * (box.y2 - box.y1)) / height}%`,
    border: "2px solid #f5c400",
    boxSizing: "border-box",
    pointerEvents: "none",
  });
  frame.append(outline);
}
