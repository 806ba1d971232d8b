// Consensus questions ("does this image show X?", "is this box tight?", "is every X boxed?") use the yes/no
// page of the plain binary vote: the same question, Yes/No buttons and Y/N keys. Box questions draw the image
// with boxview.js's overlay, as the box_quality and box_coverage pages do: the accepted boxes, and the judged
// box highlighted. A question about an inner node of a hierarchy ("Is there ANY animal?") lists examples of what
// counts, as the hierarchy_question page does.

import { yesNo } from "./binary_vote.js";
import { render as renderYesNo } from "./hierarchy_question.js"; // yes/no, with the examples when there are some
import { boxRect, conceptHeader, imageStage } from "../../shared/boxview.js";

const coords = (b) => [b.x1, b.y1, b.x2, b.y2];

export function render(container, assignment, answer) {
  const { task } = assignment;
  const { box, boxes } = task.payload;
  if (!box && !boxes) return renderYesNo(container, assignment, answer);
  container.innerHTML = "";
  conceptHeader(container, task.payload.question, task.payload.concept);
  const { svg } = imageStage(container, task.image, box ? "The image with the box to check" : "The image with its boxes");
  for (const other of boxes || []) boxRect(svg, coords(other), box ? "other" : "judged");
  if (box) boxRect(svg, coords(box), "judged");
  return yesNo(container, answer);
}
