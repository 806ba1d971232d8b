// Near-duplicate flags of a dataset: each flagged image beside its original, confirmed or dismissed
// (GET datasets/{id}/near-duplicates, POST datasets/{id}/near-duplicates/{image}).
import { api, el } from "./common.js";

const app = document.getElementById("images-app");
const base = app.dataset.api;
const id = app.dataset.dataset;

async function decide(flag, decision) {
  const error = document.getElementById("duplicates-error");
  error.textContent = "";
  try {
    await api(base, `datasets/${id}/near-duplicates/${flag.id}`, { method: "POST", body: { decision } });
    await refresh();
  } catch (err) {
    error.textContent = err.message;
  }
}

async function refresh() {
  const page = await api(base, `datasets/${id}/near-duplicates`);
  const n = page.count;
  document.getElementById("duplicates-status").textContent = n ? `${n} flag${n === 1 ? "" : "s"} to confirm` : "No flag to confirm.";
  document.getElementById("duplicates").replaceChildren(...page.results.map((flag) => {
    const confirm = el("button", { type: "button", text: "Confirm: a near-duplicate" });
    confirm.addEventListener("click", () => decide(flag, "confirm"));
    const dismiss = el("button", { type: "button", text: "Dismiss: distinct images" });
    dismiss.addEventListener("click", () => decide(flag, "dismiss"));
    return el("div", { class: "duplicate", "data-image": flag.id },
      el("figure", {}, el("img", { src: flag.url, alt: flag.name, loading: "lazy" }), el("figcaption", { text: flag.name })),
      el("figure", {}, el("img", { src: flag.original_url, alt: flag.original_name, loading: "lazy" }),
        el("figcaption", { text: `original: ${flag.original_name}` })),
      el("div", { class: "actions" }, confirm, dismiss));
  }));
}

const showError = (err) => { document.getElementById("duplicates-error").textContent = err.message; };
refresh().catch(showError);
// An upload on this page (images.js) may flag new near-duplicates.
app.addEventListener("images-uploaded", () => refresh().catch(showError));
