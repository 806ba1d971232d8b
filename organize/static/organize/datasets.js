// The organizer's dataset list: create a dataset through the API, then open its page.
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
