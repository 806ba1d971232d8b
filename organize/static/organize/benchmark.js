// Benchmark of a dataset: preview then freeze split versions; start an export, follow its progress, download it
// or any earlier one from the list of the dataset's exports.
import { api, el, formData } from "./common.js";

const app = document.getElementById("benchmark-app");
const base = app.dataset.api;
const id = app.dataset.dataset;

async function refreshVersions() {
  const versions = await api(base, `datasets/${id}/split-versions`);
  document.querySelector("#versions tbody").replaceChildren(...versions.map((v) => {
    const counts = v.manifest.counts || {};
    let state = el("span", { text: "frozen" });
    if (!v.frozen) {
      state = el("button", { type: "button", text: `Freeze version ${v.number}` });
      state.addEventListener("click", async () => {
        if (!window.confirm(`Freeze split version ${v.number}? It never changes after this.`)) return;
        await api(base, `datasets/${id}/split-versions/${v.number}/freeze`, { method: "POST" });
        await refreshVersions();
      });
    }
    return el("tr", { "data-version": v.number }, el("td", { text: String(v.number) }), el("td", { text: String(v.seed) }),
      el("td", { text: `${v.ratios.train} / ${v.ratios.val} / ${v.ratios.test}` }),
      el("td", { class: "rules", text: Object.entries(v.source_rules || {}).map(([s, r]) => `${s}: ${r.train} / ${r.val} / ${r.test}`).join("; ") || "none" }),
      el("td", { class: "counts", text: Object.entries(counts).map(([k, n]) => `${k} ${n}`).join(", ") }),
      el("td", {}, state));
  }));
}

// "SOURCE=TRAIN:VAL:TEST" or "SOURCE=VAL:TEST" (train takes the rest), as `make_splits --source-rule` reads them.
function parseRules(text) {
  const rules = [];
  for (const [n, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line) continue;
    const at = line.lastIndexOf("=");
    const shares = at > 0 ? line.slice(at + 1).split(":").map(Number) : [];
    if (at <= 0 || (shares.length !== 2 && shares.length !== 3) || shares.some((x) => Number.isNaN(x))) {
      throw new Error(`source rule on line ${n + 1} ("${line}"): expected SOURCE=VAL:TEST or SOURCE=TRAIN:VAL:TEST`);
    }
    if (shares.length === 2) shares.unshift(Math.max(0, 1 - shares[0] - shares[1]));
    rules.push({ source: line.slice(0, at), train: shares[0], val: shares[1], test: shares[2] });
  }
  return rules;
}

document.getElementById("split-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("split-error");
  error.textContent = "";
  const data = formData(event.target);
  const body = { train: Number(data.train), val: Number(data.val), test: Number(data.test), seed: Number(data.seed) };
  try {
    body.source_rules = parseRules(data.source_rules || "");
    await api(base, `datasets/${id}/split-versions`, { method: "POST", body });
    await refreshVersions();
  } catch (err) {
    error.textContent = err.message;
  }
});

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

// Every export job of the dataset, newest first (the first page: the 50 latest).
async function refreshExports() {
  const page = await api(base, `datasets/${id}/exports`);
  document.getElementById("exports-empty").hidden = page.count > 0;
  document.querySelector("#exports tbody").replaceChildren(...page.results.map((job) => {
    const options = [job.include_images ? "with images" : "labels only"];
    if (job.include_provisional) options.push("provisional boxes");
    if (job.detection_set) options.push(`set ${job.detection_set}`);
    if (job.file_names === "original") options.push("original file names");
    const status = job.state + (job.state === "done" ? `, ${job.total} images` : "") + (job.error ? ` (${job.error})` : "");
    let archive = el("span", { text: "—" });
    if (job.download_url) {
      archive = el("a", { href: job.download_url, text: `Download export ${job.id}` });
    }
    return el("tr", { "data-job": job.id }, el("td", { class: "num", text: String(job.id) }),
      el("td", { text: `${job.format} (${options.join(", ")})` }), el("td", { text: job.split }),
      el("td", {}, el("time", { datetime: job.created_at, text: when(job.created_at) })),
      el("td", { text: job.requested_by || "(account removed)" }), el("td", { class: "state", text: status }),
      el("td", {}, archive));
  }));
}

async function follow(job) {
  const bar = document.getElementById("export-bar");
  const status = document.getElementById("export-status");
  const link = document.getElementById("export-download");
  document.getElementById("export-job").hidden = false;
  document.getElementById("export-completeness").hidden = true;
  for (;;) {
    const share = job.total ? (100 * job.progress) / job.total : 0;
    bar.querySelector("span").style.width = `${job.state === "done" ? 100 : share}%`;
    bar.setAttribute("aria-valuenow", String(job.progress));
    bar.setAttribute("aria-valuemax", String(job.total));
    status.textContent = `${job.format} ${job.split}: ${job.state}, ${job.progress} / ${job.total} images` +
      (job.error ? ` (${job.error})` : "");
    if (job.state === "done" && job.manifest && job.manifest.file_names_renamed) {
      status.textContent += ` (${job.manifest.file_names_renamed} images renamed: their uploaded name was taken or empty)`;
    }
    if (job.state === "done" || job.state === "failed") break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    job = await api(base, `exports/${job.id}`);
  }
  if (job.state === "done" && job.download_url) {
    link.href = job.download_url;
    link.hidden = false;
  }
  if (job.state === "done" && job.manifest && job.manifest.completeness) showCompleteness(job.manifest.completeness);
  await refreshExports();
}

// What the export leaves out and what is not final yet (the manifest's `completeness`), with reasons.
function reasons(counts) {
  return Object.entries(counts).filter(([key]) => key !== "total").map(([key, n]) => `${key.replaceAll("_", " ")} ${n}`).join(", ");
}

function showCompleteness(c) {
  const box = document.getElementById("export-completeness");
  const left = c.images_left_out;
  document.getElementById("export-completeness-summary").textContent =
    `Labels: ${c.labels === "provisional" ? "final and provisional" : "final only"}. ` +
    (left.total ? `${left.total} images left out (${reasons(left.by_reason)}).` : "No image left out.") +
    (c.complete ? " Everything accepted is final." : "");
  const table = document.getElementById("export-completeness-classes");
  const body = table.querySelector("tbody");
  body.replaceChildren();
  for (const [name, row] of Object.entries(c.classes)) {
    const tr = document.createElement("tr");
    const boxes = row.accepted_boxes_not_final;
    const images = row.images_unfinished;
    for (const text of [name, boxes.total ? `${boxes.total} (${reasons(boxes)})` : "0",
      images.total ? `${images.total} (${reasons(images)})` : "0"]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    body.append(tr);
  }
  table.hidden = body.children.length === 0;
  box.hidden = false;
}

document.getElementById("export-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("export-error");
  error.textContent = "";
  const data = formData(event.target);
  try {
    const job = await api(base, `datasets/${id}/exports`, { method: "POST",
      body: { format: data.format, split: data.split, include_images: data.include_images === "on",
        include_provisional: data.include_provisional === "on", file_names: data.file_names } });
    await refreshExports();
    await follow(job);
  } catch (err) {
    error.textContent = err.message;
  }
});

refreshVersions().catch((err) => { document.getElementById("split-error").textContent = err.message; });
refreshExports().catch((err) => { document.getElementById("export-error").textContent = err.message; });
