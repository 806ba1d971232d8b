// "Is this box tight around one whole visible instance?": the box highlighted, the accepted boxes faint.

import { yesNo } from "./binary_vote.js";
import { boxRect, conceptHeader, imageStage } from "../../shared/boxview.js";

export function render(container, assignment, answer) {
  const { task } = assignment;
  container.innerHTML = "";
  conceptHeader(container, task.payload.question, task.payload.concept);
  const { svg } = imageStage(container, task.image, "The image with the box to check");
  for (const box of task.payload.boxes) boxRect(svg, box, "other");
  boxRect(svg, task.payload.box, "judged");
  return yesNo(container, answer);
}
