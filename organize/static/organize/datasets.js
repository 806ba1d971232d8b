// The organizer's dataset list: create a dataset through the API, then open its page; delete one nobody has
// worked on (the server refuses, saying why, a dataset whose tasks were handed out).
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
