// Images of a dataset: drag-and-drop upload of files and folders, one request per file (so each has its own
// progress bar and its own refusal reason), and a paginated, filtered grid of the stored images.
import { api, cookie, el, formData } from "./common.js";

const app = document.getElementById("images-app");
const base = app.dataset.api;
const id = app.dataset.dataset;
// One upload at a time: ingestion is bound by the server, and SQLite (the embedded default) answers concurrent
// writers with "database is locked".
const PARALLEL = 1;

// fetch() has no upload progress: XMLHttpRequest does. Resolves with {status, report}; status 0 = network.
function send(file, bar) {
  return new Promise((resolve) => {
    const body = new FormData();
    body.append("files", file, file.relativePath || file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `${base}datasets/${id}/images`);
    xhr.setRequestHeader("X-CSRFToken", cookie("csrftoken"));
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", (e) => { if (e.lengthComputable) bar.value = e.loaded / e.total; });
    xhr.addEventListener("load", () => {
      let report = null;
      try { report = JSON.parse(xhr.responseText); } catch { report = null; }
      resolve({ status: xhr.status, report });
    });
    xhr.addEventListener("error", () => resolve({ status: 0, report: null }));
    xhr.send(body);
  });
}

const ATTEMPTS = 3;

// A server error or a lost connection is retried; a refusal (4xx) is final. Storage is content-addressed, so a
// retry of a file whose first attempt was stored after all answers "exact duplicate": that file is stored.
async function uploadOne(file, row) {
  const bar = row.querySelector("progress");
  const note = row.querySelector(".note");
  let answer;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    answer = await send(file, bar);
    const report = answer.report;
    if (report && report.stored && report.stored.length) {
      const dup = report.near_duplicates && report.near_duplicates.length ? " (near-duplicate flagged)" : "";
      row.className = "stored";
      note.textContent = `stored${dup}`;
      bar.value = 1;
      return true;
    }
    const rejected = (report && report.rejected) || [];
    if (attempt > 1 && rejected.length && rejected.every((r) => r.reason.startsWith("exact duplicate"))) {
      row.className = "stored";
      note.textContent = "stored";
      return true;
    }
    if (answer.status >= 400 && answer.status < 500) break;
    await new Promise((resolve) => setTimeout(resolve, 400 * attempt));
  }
  const report = answer.report;
  const reason = report && report.rejected && report.rejected.length
    ? report.rejected.map((r) => r.reason).join("; ")
    : (report && report.detail) || (answer.status ? `the server answered ${answer.status}` : "the upload failed (network)");
  bar.value = 1;
  row.className = "refused";
  note.textContent = `refused: ${reason}`;
  return false;
}

async function uploadAll(files) {
  const list = document.getElementById("uploads");
  const summary = document.getElementById("upload-summary");
  const jobs = files.map((file) => {
    const row = el("li", {}, el("span", { class: "name", text: file.relativePath || file.name }),
      el("span", {}, el("progress", { max: "1", value: "0" }), el("span", { class: "note" })));
    list.append(row);
    return { file, row };
  });
  let stored = 0;
  let refused = 0;
  const queue = jobs.slice();
  async function lane() {
    while (queue.length) {
      const { file, row } = queue.shift();
      if (await uploadOne(file, row)) stored++;
      else refused++;
      summary.textContent = `${stored} stored, ${refused} refused, ${queue.length} waiting`;
    }
  }
  await Promise.all(Array.from({ length: PARALLEL }, lane));
  loadPage(1);
  // The near-duplicate list (duplicates.js) shows the flags these files raised.
  document.getElementById("images-app").dispatchEvent(new CustomEvent("images-uploaded"));
}

// Folders arrive as directory entries: walk them for their files.
async function entryFiles(entry, prefix = "") {
  if (entry.isFile) {
    const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
    file.relativePath = prefix + file.name;
    return [file];
  }
  const reader = entry.createReader();
  const files = [];
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (!batch.length) break;
    for (const child of batch) files.push(...(await entryFiles(child, `${prefix}${entry.name}/`)));
  }
  return files;
}

const zone = document.getElementById("dropzone");
zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
zone.addEventListener("dragleave", () => zone.classList.remove("over"));
zone.addEventListener("drop", async (e) => {
  e.preventDefault();
  zone.classList.remove("over");
  const entries = Array.from(e.dataTransfer.items || []).map((item) => item.webkitGetAsEntry && item.webkitGetAsEntry());
  let files;
  if (entries.length && entries.every(Boolean)) files = (await Promise.all(entries.map((x) => entryFiles(x)))).flat();
  else files = Array.from(e.dataTransfer.files);
  uploadAll(files);
});
for (const inputId of ["file-input", "folder-input"]) {
  document.getElementById(inputId).addEventListener("change", (e) => {
    const files = Array.from(e.target.files);
    for (const f of files) f.relativePath = f.webkitRelativePath || f.name;
    uploadAll(files);
    e.target.value = "";
  });
}

let currentPage = 1;
async function loadPage(number) {
  const params = new URLSearchParams({ page: String(number), ...formData(document.getElementById("filters")) });
  const status = document.getElementById("grid-status");
  try {
    const page = await api(base, `datasets/${id}/image-grid?${params}`);
    currentPage = number;
    document.getElementById("grid").replaceChildren(...page.results.map((img) => el("figure", { "data-image": img.id },
      el("a", { href: `/organize/datasets/${id}/images/${img.id}/` },
        el("img", { src: img.url, alt: img.original_name, loading: "lazy" })),
      el("figcaption", { text: `${img.original_name} · ${img.width}×${img.height}${img.near_duplicate_of ? " · near-duplicate" : ""}${img.excluded_at ? " · excluded" : ""}` }))));
    status.textContent = `${page.count} images`;
    document.getElementById("page-label").textContent = `page ${number} of ${Math.max(1, Math.ceil(page.count / 100))}`;
    document.getElementById("prev").disabled = !page.previous;
    document.getElementById("next").disabled = !page.next;
  } catch (err) {
    status.textContent = err.message;
  }
}
document.getElementById("prev").addEventListener("click", () => loadPage(currentPage - 1));
document.getElementById("next").addEventListener("click", () => loadPage(currentPage + 1));
document.getElementById("filters").addEventListener("submit", (e) => { e.preventDefault(); loadPage(1); });
api(base, `datasets/${id}/concepts`).then((body) => {
  document.getElementById("filter-concept").append(
    ...body.selected.map((c) => el("option", { value: c.wnid, text: `${c.name} (${c.wnid})` })));
}).catch(() => {});  // the class filter stays "any"; the grid itself reports errors
loadPage(1);
