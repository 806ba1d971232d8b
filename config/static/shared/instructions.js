// The organizer's instructions for a stage of work, as the worker page (above the task and in the help sheet)
// and the organizer's preview show them. The text is data, typed by an organizer: it becomes text nodes only
// (never innerHTML), so markup in it is shown as typed and never runs. A blank line starts a paragraph; lines
// starting with "- " or "* " make a bullet list.

export function instructionsNodes(text) {
  const fragment = document.createDocumentFragment();
  for (const block of String(text || "").split(/\n\s*\n/)) {
    const lines = block.split("\n").map((line) => line.trim()).filter(Boolean);
    if (!lines.length) continue;
    let list = null;
    let paragraph = null;
    for (const line of lines) {
      const bullet = /^[-*]\s+(.*)$/.exec(line);
      if (bullet) {
        paragraph = null;
        if (!list) list = fragment.appendChild(document.createElement("ul"));
        const item = document.createElement("li");
        item.textContent = bullet[1];
        list.append(item);
      } else {
        list = null;
        if (paragraph) paragraph.append(document.createElement("br"), line);
        else {
          paragraph = fragment.appendChild(document.createElement("p"));
          paragraph.textContent = line;
        }
      }
    }
  }
  return fragment;
}

// With the task: a collapsible box, open on the first task of a stage in this tab and closed after (the
// worker has read it); the help sheet always shows the current task's instructions in full.
const seen = new Set();

export function showInstructions(container, task) {
  const text = task.instructions || "";
  if (!text) return;
  const box = document.createElement("details");
  box.className = "task-instructions";
  const key = task.kind + ":" + text;
  box.open = !seen.has(key);
  seen.add(key);
  const summary = document.createElement("summary");
  summary.textContent = "Instructions";
  box.append(summary, instructionsNodes(text));
  // Under the question and its gloss, before the example images.
  const examples = container.querySelector(".examples-box");
  const header = container.querySelector(".gloss") || container.querySelector("h1");
  if (examples) examples.before(box);
  else if (header) header.after(box);
  else container.prepend(box);
}

export function helpInstructions(section, task) {
  const text = (task && task.instructions) || "";
  const body = section.querySelector(".help-instructions-text");
  body.replaceChildren(instructionsNodes(text));
  section.hidden = !text;
}
