// The yes/no question page: the image, the question, Yes/No buttons and the Y/N keys. `yesNo` is shared by
// every yes/no page (box quality and coverage import it).

import { taskImage } from "../../shared/images.js";

export function render(container, assignment, answer) {
  const { task } = assignment;
  const concept = task.payload.concept;
  container.innerHTML = "";
  const question = document.createElement("h1");
  question.className = "question";
  question.textContent = task.payload.question;
  container.append(question);
  if (concept && concept.gloss) {
    const gloss = document.createElement("p");
    gloss.className = "gloss";
    gloss.textContent = `${concept.name}: ${concept.gloss}`;
    container.append(gloss);
  }
  if (task.image) {
    const img = taskImage(task.image.url);
    img.className = "task-image";
    img.alt = `The image this question is about: ${task.payload.question}`;
    img.width = task.image.width;
    img.height = task.image.height;
    container.append(img);
  }
  return yesNo(container, answer);
}

// Yes/No buttons answering {"answer": true|false}, with Y/N keys; returns the cleanup for the page.
export function yesNo(container, answer) {
  const buttons = document.createElement("div");
  buttons.className = "answers";
  const yes = button("Yes", "Y", "yes", () => answer({ answer: true }));
  const no = button("No", "N", "no", () => answer({ answer: false }));
  buttons.append(yes, no);
  container.append(buttons);
  return onShortcut({ y: () => yes.click(), n: () => no.click() });
}

// Single-key shortcuts, ignoring typing in fields, Ctrl/Alt/Meta chords (the browser's) and auto-repeat (a
// held-down key must not answer the next task too). Returns the function that removes the listener.
export function onShortcut(handlers) {
  const onKey = (event) => {
    if (event.target && ["INPUT", "TEXTAREA"].includes(event.target.tagName)) return;
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (document.querySelector("dialog[open]")) return; // a dialog (the shortcut list) has the keyboard
    const handler = handlers[event.key.toLowerCase()] || handlers[event.key];
    if (handler) {
      event.preventDefault();
      handler();
    }
  };
  document.addEventListener("keydown", onKey);
  return () => document.removeEventListener("keydown", onKey);
}

// A phone or tablet: no keyboard shortcuts to mention, "tap" rather than "press".
export const touchScreen = window.matchMedia("(pointer: coarse)").matches;

// An answer button with its shortcut key. Built from text nodes: labels carry concept names, which are data.
export function button(label, shortcut, cls, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = `answer ${cls}`;
  const key = document.createElement("kbd");
  key.textContent = shortcut;
  b.append(`${label} `, key);
  b.addEventListener("click", onClick);
  return b;
}
