// People of a dataset: make one-time invitation links and list them (tokens are shown once, never listed).
import { api, el, formData } from "./common.js";

const app = document.getElementById("people-app");
const base = app.dataset.api;
const id = app.dataset.dataset;

async function refresh() {
  const rows = await api(base, `datasets/${id}/invitations`);
  document.querySelector("#invitations tbody").replaceChildren(...rows.map((inv) => el("tr", {},
    el("td", { text: inv.role }), el("td", { text: inv.status }), el("td", { text: inv.created_by }),
    el("td", { text: new Date(inv.expires_at).toLocaleString() }), el("td", { text: inv.accepted_by ?? "" }))));
}

document.getElementById("invite").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("invite-error");
  error.textContent = "";
  const data = formData(event.target);
  try {
    const issued = await api(base, `datasets/${id}/invitations`, {
      method: "POST", body: { role: data.role, expires_in_hours: Number(data.expires_in_hours) } });
    document.getElementById("issued").hidden = false;
    document.getElementById("issued-url").value = issued.accept_url;
    document.getElementById("issued-expires").textContent = new Date(issued.expires_at).toLocaleString();
    await refresh();
  } catch (err) {
    error.textContent = err.message;
  }
});

refresh();
