// Shared helpers of the organizer pages: the API client, element building and durations.
import { api } from "../shared/api.js";

export { api, ApiError, cookie } from "../shared/api.js";

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "no recent progress";
  if (seconds === 0) return "done";
  if (seconds < 90) return `about ${Math.round(seconds)} s left`;
  if (seconds < 5400) return `about ${Math.round(seconds / 60)} min left`;
  if (seconds < 172800) return `about ${Math.round(seconds / 3600)} h left`;
  return `about ${Math.round(seconds / 86400)} days left`;
}

export function formData(form) {
  const data = {};
  for (const [key, value] of new FormData(form).entries()) if (value !== "") data[key] = value;
  return data;
}

// The organizer's datasets (every page of the list), for the dataset pickers of the invitation and study-link
// forms: checkboxes named `name` inside `fieldset`'s `.dataset-choices`, the ids in `checked` ticked, and its
// "Select all" box wired. Returns a Map of id -> name for the tables that name datasets.
export async function datasetPicker(base, fieldset, checked = []) {
  const names = new Map();
  for (let page = 1; page; ) {
    const data = await api(base, `datasets/?page=${page}`);
    for (const d of data.results ?? data) names.set(d.id, d.name);
    page = data.next ? page + 1 : 0;
  }
  const box = fieldset.querySelector(".dataset-choices");
  box.replaceChildren(...[...names].map(([id, name]) => el("label", { class: "check" },
    el("input", { type: "checkbox", name: box.dataset.name, value: String(id), ...(checked.includes(id) ? { checked: "" } : {}) }),
    ` ${name}`)));
  const all = fieldset.querySelector(".select-all");
  all?.addEventListener("change", () => {
    for (const input of box.querySelectorAll("input[type=checkbox]:not(:disabled)")) input.checked = all.checked;
  });
  return names;
}

// The datasets a picker has ticked, as ids.
export function pickedDatasets(fieldset) {
  return [...fieldset.querySelectorAll(".dataset-choices input:checked")].map((b) => Number(b.value));
}
