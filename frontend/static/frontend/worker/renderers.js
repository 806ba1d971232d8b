// The task kinds' modules (`kinds/<kind>.js`), each loaded once, on the first task of its kind, and a task made
// ready to show from memory: its kind's module loaded and its image decoded.

import { preload } from "../../shared/images.js";

const renderers = new Map();

export async function rendererFor(kind) {
  if (!renderers.has(kind)) {
    if (!/^[a-z0-9_]+$/.test(kind)) throw new Error(`This page cannot show tasks of kind ${kind}.`);
    renderers.set(kind, await import(`../kinds/${kind}.js`));
  }
  return renderers.get(kind);
}

export async function ready(assignment) {
  await rendererFor(assignment.task.kind);
  if (assignment.task.image) await preload(assignment.task.image.url);
}
