// Candidate images of a dataset: a class's search queries (GET datasets/{id}/candidate-queries), importing a
// URL list (POST datasets/{id}/candidate-imports, multipart) and following its progress, the pools
// (GET datasets/{id}/candidate-pools) and per-query precision (GET datasets/{id}/candidates/{wnid}/precision).
import { api, ApiError, cookie, el } from "./common.js";

const app = document.getElementById("candidates-app");
const base = app.dataset.api;
const id = app.dataset.dataset;
const POLL_MS = 2000;
let queries = [];
let polling = null;

function row(...cells) {
  return el("tr", {}, ...cells.map((cell) => (cell instanceof Node ? el("td", {}, cell) : el("td", { text: String(cell) }))));
}

function num(value) {
  return el("td", { class: "num", text: value === null || value === undefined ? "–" : String(value) });
}

function progressBar(job) {
  const share = job.total ? Math.round((100 * job.done) / job.total) : job.state === "done" ? 100 : 0;
  const bar = el("div", { class: "bar", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": String(job.total),
    "aria-valuenow": String(job.done), "aria-label": `${job.source_name}: ${job.done} of ${job.total} rows` }, el("span"));
  bar.querySelector("span").style.width = `${share}%`;
  return el("div", {}, bar, el("span", { class: "status", text: `${job.done} / ${job.total}` }));
}

async function loadClasses() {
  const [selected, pools] = await Promise.all([api(base, `datasets/${id}/concepts`), api(base, `datasets/${id}/candidate-pools`)]);
  const seen = new Map();
  for (const c of [...selected.selected, ...pools]) if (!seen.has(c.wnid)) seen.set(c.wnid, c.name);
  const select = document.getElementById("queries-concept");
  select.replaceChildren(...[...seen].map(([wnid, name]) => el("option", { value: wnid, text: `${name} (${wnid})` })));
  if (!seen.size) select.append(el("option", { value: "", text: "No class chosen yet: pick the dataset's classes first" }));
}

async function showQueries(wnid) {
  const error = document.getElementById("queries-error");
  error.textContent = "";
  try {
    queries = await api(base, `datasets/${id}/candidate-queries?concept=${encodeURIComponent(wnid)}`);
  } catch (err) {
    error.textContent = err.message;
    return;
  }
  document.querySelector("#queries tbody").replaceChildren(...queries.map((q) => row(q.query, q.kind, q.language)));
  document.getElementById("queries-csv").disabled = !queries.length;
}

function csvField(value) {
  const text = String(value);
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function downloadQueries() {
  const lines = ["wnid,query,kind,language", ...queries.map((q) => [q.wnid, q.query, q.kind, q.language].map(csvField).join(","))];
  const link = el("a", { href: URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "text/csv" })),
    download: `queries-${queries[0].wnid}.csv` });
  document.body.append(link);
  link.click();
  link.remove();
}

async function upload(file) {
  const body = new FormData();
  body.append("file", file);
  const response = await fetch(`${base}datasets/${id}/candidate-imports`, {
    method: "POST", body, credentials: "same-origin",
    headers: { Accept: "application/json", "X-CSRFToken": cookie("csrftoken") },
  });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

async function showFailures(job) {
  const detail = await api(base, `datasets/${id}/candidate-imports/${job.id}`);
  document.getElementById("failures-box").hidden = false;
  document.getElementById("failures-title").textContent = detail.failed > detail.failures.length
    ? `Failed rows of ${detail.source_name} (the first ${detail.failures.length} of ${detail.failed})`
    : `Failed rows of ${detail.source_name}`;
  document.querySelector("#failures tbody").replaceChildren(...detail.failures.map((f) => el("tr", {},
    num(f.line), el("td", {}, el("code", { text: f.url })), el("td", { text: f.reason }))));
}

async function refreshImports() {
  const jobs = await api(base, `datasets/${id}/candidate-imports`);
  const running = jobs.filter((job) => job.state !== "done").length;
  document.getElementById("imports-status").textContent = !jobs.length ? "No import yet."
    : running ? `${running} import${running === 1 ? "" : "s"} running` : `${jobs.length} import${jobs.length === 1 ? "" : "s"}, all done`;
  document.querySelector("#imports tbody").replaceChildren(...jobs.map((job) => {
    const cell = el("td");
    if (job.failed) {
      const button = el("button", { type: "button", text: "Failures" });
      button.addEventListener("click", () => showFailures(job).catch((err) => { document.getElementById("imports-status").textContent = err.message; }));
      cell.append(button);
    }
    const tr = el("tr", { "data-import": String(job.id) }, el("td", { text: job.source_name }),
      el("td", { text: new Date(job.created_at).toLocaleString() }), el("td", { class: "state", text: job.state }),
      el("td", {}, progressBar(job)), num(job.stored), num(job.duplicates), num(job.skipped), num(job.failed), cell);
    return tr;
  }));
  if (running && !polling) polling = setInterval(() => refresh().catch(() => {}), POLL_MS);
  if (!running && polling) { clearInterval(polling); polling = null; }
}

async function showPrecision(pool) {
  const rows = await api(base, `datasets/${id}/candidates/${encodeURIComponent(pool.wnid)}/precision`);
  document.getElementById("precision-box").hidden = false;
  document.getElementById("precision-title").textContent = `Per-query precision of ${pool.name}`;
  document.querySelector("#precision tbody").replaceChildren(...rows.map((r) => el("tr", {}, el("td", { text: r.query || "(no query)" }),
    num(r.found), num(r.decided), num(r.present), num(r.precision === null ? null : `${(100 * r.precision).toFixed(1)}%`))));
}

async function refreshPools() {
  const pools = await api(base, `datasets/${id}/candidate-pools`);
  document.getElementById("pools-status").textContent = pools.length ? `${pools.length} class${pools.length === 1 ? "" : "es"} with a pool` : "No pool yet: import a URL list.";
  document.querySelector("#pools tbody").replaceChildren(...pools.map((pool) => {
    const precision = el("button", { type: "button", text: "Per-query precision" });
    precision.addEventListener("click", () => showPrecision(pool).catch((err) => { document.getElementById("pools-status").textContent = err.message; }));
    const verify = el("a", { href: `${app.dataset.datasetPage}?verify=${encodeURIComponent(pool.wnid)}`, text: "Verify this pool…" });
    return el("tr", { "data-pool": pool.wnid }, el("td", { text: `${pool.name} (${pool.wnid})` }),
      num(pool.entries), num(pool.images), num(pool.queries), el("td", {}, precision, " ", verify));
  }));
}

async function refresh() {
  await Promise.all([refreshImports(), refreshPools()]);
}

document.getElementById("queries-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const wnid = document.getElementById("queries-concept").value;
  if (wnid) showQueries(wnid);
});
document.getElementById("queries-csv").addEventListener("click", downloadQueries);
document.getElementById("import-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("import-error");
  const status = document.getElementById("import-status");
  error.textContent = "";
  const file = document.getElementById("import-file").files[0];
  if (!file) return;
  status.textContent = `Uploading ${file.name}…`;
  try {
    const job = await upload(file);
    status.textContent = `${job.source_name}: ${job.total} row${job.total === 1 ? "" : "s"} recorded, downloads queued.`;
    event.target.reset();
    await refresh();
  } catch (err) {
    status.textContent = "";
    error.textContent = err.message;
  }
});

loadClasses().catch((err) => { document.getElementById("queries-error").textContent = err.message; });
refresh().catch((err) => { document.getElementById("imports-status").textContent = err.message; });
