// The organizer's dataset list: create a dataset through the API, then open its page; delete one nobody has
// worked on (the server refuses, saying why, a dataset whose tasks were handed out); archive one (it moves to
// "Archived", nothing of it is handed out, all it holds stays) and restore it.
import { api, formData } from "./common.js";

const form = document.getElementById("create-dataset");
const error = document.getElementById("create-error");
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  error.textContent = "";
  try {
    const dataset = await api(form.dataset.api, "datasets/", { method: "POST", body: formData(form) });
    window.location.assign(`/organize/datasets/${dataset.id}/`);
  } catch (err) {
    error.textContent = err.message;
  }
});

for (const button of document.querySelectorAll("button.delete-dataset")) {
  button.addEventListener("click", async () => {
    const { dataset, name } = button.dataset;
    document.getElementById("delete-error").textContent = "";
    if (!window.confirm(`Delete ${name} with its images? Only a dataset nobody has worked on can be deleted.`)) return;
    try {
      const result = await api(form.dataset.api, `datasets/${dataset}/delete`, { method: "POST" });
      button.closest("tr").remove();
      document.getElementById("delete-status").textContent = `Deleted ${name} and its ${result.images} image(s).`;
    } catch (err) {
      document.getElementById("delete-error").textContent = err.message;
    }
  });
}

async function move(button, path, question, done) {
  const { dataset, name } = button.dataset;
  document.getElementById("delete-error").textContent = "";
  if (question && !window.confirm(question(name))) return;
  try {
    await api(form.dataset.api, `datasets/${dataset}/${path}`, { method: "POST" });
    // The lists are drawn by the server: show them again, with the status line carried over.
    sessionStorage.setItem("datasets-status", done(name));
    window.location.reload();
  } catch (err) {
    document.getElementById("delete-error").textContent = err.message;
  }
}

for (const button of document.querySelectorAll("button.archive-dataset")) {
  button.addEventListener("click", () => move(button, "archive",
    (name) => `Archive ${name}? Its tasks and review items stop being handed out; its images, labels and exports stay, and you can restore it.`,
    (name) => `Archived ${name}.`));
}
for (const button of document.querySelectorAll("button.restore-dataset")) {
  button.addEventListener("click", () => move(button, "restore", null, (name) => `Restored ${name}: its work is handed out again.`));
}
const carried = sessionStorage.getItem("datasets-status");
if (carried) {
  sessionStorage.removeItem("datasets-status");
  document.getElementById("delete-status").textContent = carried;
}
