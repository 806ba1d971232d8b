// Challenges of a dataset: create one over a frozen split version, add teams, see its leaderboard
// (datasets/{id}/challenges, .../challenges/{c}, .../challenges/{c}/teams).
import { api, el, formData } from "./common.js";

const app = document.getElementById("benchmark-app");
const base = app.dataset.api;
const id = app.dataset.dataset;
let current = null;
const num = (text) => el("td", { class: "num", text: String(text) });

async function showChallenge(challengeId) {
  const detail = await api(base, `datasets/${id}/challenges/${challengeId}`);
  current = challengeId;
  const c = detail.challenge;
  document.getElementById("challenge-detail").hidden = false;
  document.getElementById("challenge-title").textContent = `${c.name}: ranked by ${c.primary_metric} (${c.protocol})`;
  document.querySelector("#teams tbody").replaceChildren(...detail.teams.map((t) => el("tr", {},
    el("td", { text: t.name }), el("td", { text: t.members.join(", ") }), num(t.submissions))));
  const board = detail.leaderboard;
  document.querySelector("#leaderboard tbody").replaceChildren(...(board.length ? board.map((r) => el("tr", { "data-team": r.team },
    num(r.rank), el("td", { text: r.team }), num(`${r.metric} ${r.value.toFixed(4)}`),
    el("td", { text: Object.entries(r.scores).filter(([k]) => k !== r.metric).map(([k, v]) => `${k} ${Number(v).toFixed(3)}`).join(", ") }),
    el("td", { text: new Date(r.created_at).toLocaleString() })))
    : [el("tr", {}, el("td", { colspan: "5", text: "No scored submission yet." }))]));
}

async function refreshChallenges() {
  const rows = await api(base, `datasets/${id}/challenges`);
  document.querySelector("#challenges tbody").replaceChildren(...rows.map((c) => {
    const open = el("button", { type: "button", text: `Leaderboard of ${c.name}` });
    open.addEventListener("click", () => showChallenge(c.id));
    return el("tr", { "data-challenge": c.id }, el("td", { text: c.name }), el("td", { text: c.protocol }),
      num(c.split_version), el("td", { text: `${c.submissions_per_window} per ${c.window_days} days` }), num(c.teams),
      el("td", {}, open));
  }));
}

document.getElementById("challenge-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("challenge-error");
  error.textContent = "";
  const data = formData(event.target);
  for (const key of ["split_version", "submissions_per_window", "window_days"]) if (key in data) data[key] = Number(data[key]);
  try {
    const created = await api(base, `datasets/${id}/challenges`, { method: "POST", body: data });
    await refreshChallenges();
    await showChallenge(created.id);
  } catch (err) {
    error.textContent = err.message;
  }
});

document.getElementById("team-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("team-error");
  error.textContent = "";
  const data = formData(event.target);
  const members = (data.members || "").split(",").map((m) => m.trim()).filter(Boolean);
  try {
    await api(base, `datasets/${id}/challenges/${current}/teams`, { method: "POST", body: { name: data.name, members } });
    event.target.reset();
    await Promise.all([showChallenge(current), refreshChallenges()]);
  } catch (err) {
    error.textContent = err.message;
  }
});

refreshChallenges().catch((err) => { document.getElementById("challenge-error").textContent = err.message; });
