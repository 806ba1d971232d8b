// Shared helpers of the organizer pages: the API client, element building and durations.
export { api, ApiError, cookie } from "../frontend/api.js";

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
