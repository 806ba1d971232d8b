// "Is every instance boxed?": every accepted box drawn over the image.

import { yesNo } from "./binary_vote.js";
import { boxRect, conceptHeader, imageStage } from "../../shared/boxview.js";

export function render(container, assignment, answer) {
  const { task } = assignment;
  container.innerHTML = "";
  conceptHeader(container, task.payload.question, task.payload.concept);
  const { svg } = imageStage(container, task.image, "The image with its boxes");
  for (const box of task.payload.boxes) boxRect(svg, box, "judged");
  return yesNo(container, answer);
}
