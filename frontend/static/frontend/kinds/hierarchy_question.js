// A hierarchy question ("Is there ANY living organism (other than people) in this image?"): the shared yes/no
// page (image, question, the node's gloss, Yes/No buttons, Y/N keys) plus the examples of what counts.

import { render as renderYesNo } from "./binary_vote.js";

export function render(container, assignment, answer) {
  const cleanup = renderYesNo(container, assignment, answer);
  const examples = assignment.task.payload.examples || [];
  if (examples.length) {
    const note = document.createElement("p");
    note.className = "examples";
    note.textContent = `For example: ${examples.join(", ")}. Answer Yes if even one small or partly hidden one is there.`;
    const question = container.querySelector(".question");
    (container.querySelector(".gloss") || question).after(note);
  }
  return cleanup;
}
