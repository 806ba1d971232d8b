// A dataset's home: per-stage progress bars (polled), pipeline starts with confirmation, the cost ledger and
// the audit trail.
import { api, duration, el, formData } from "./common.js";

const app = document.getElementById("dataset-app");
const base = app.dataset.api;
const id = app.dataset.dataset;
const POLL_MS = 3000;

// Stages a stall holds up show "stalled" instead of an ETA (nobody can work on them).
let stalledStages = new Set();

function stageRow(stage) {
  const share = stage.total ? Math.min(100, (100 * stage.done) / stage.total) : 0;
  const bar = el("div", { class: "bar", role: "progressbar", "aria-valuemin": "0",
    "aria-valuemax": String(stage.total), "aria-valuenow": String(stage.done), "aria-label": stage.label });
  const fill = el("span");
  fill.style.width = `${share}%`;
  bar.append(fill);
  const review = stage.in_review ? `, ${stage.in_review} in review` : "";
  const stalled = stalledStages.has(stage.key) && stage.done < stage.total;
  const eta = stage.total ? ` · ${stalled ? "stalled: see below" : duration(stage.eta_seconds)}` : "";
  return el("div", { class: "stage-row", "data-stage": stage.key },
    el("span", { text: stage.label }), bar,
    el("span", { class: "counts", text: `${stage.done} / ${stage.total}${review}${eta}` }));
}

async function refreshProgress() {
  const status = document.getElementById("progress-status");
  try {
    const progress = await api(base, `datasets/${id}/progress`);
    document.getElementById("stages").replaceChildren(...progress.stages.map(stageRow));
    status.textContent = `${progress.images} images · ${progress.review_open} review items open · ` +
      `rates over the last ${Math.round(progress.window_seconds / 60)} min`;
  } catch (err) {
    status.textContent = `Progress unavailable: ${err.message}`;
  }
}

const STALL_ACTIONS = {
  settle: (stall) => el("button", { type: "button", text: "Settle these questions now" }),
  lower_calibration_votes: (stall) => el("button", { type: "button",
    text: `Lower the calibration votes to ${Math.max(1, stall.crowd)}` }),
  invite: () => el("a", { href: `/organize/datasets/${id}/people/`, text: "Invite more workers" }),
};

async function runStallAction(action, stall) {
  const status = document.getElementById("stall-status");
  status.textContent = action === "settle" ? "Settling the questions…" : "Saving…"; // settling takes a while
  try {
    if (action === "settle") {
      const result = await api(base, `datasets/${id}/stalls/settle`, { method: "POST" });
      const settled = Object.entries(result.settled).map(([d, n]) => `${n} ${d}`).join(", ") || "none";
      status.textContent = `Settled: ${settled}.`;
    } else if (action === "lower_calibration_votes") {
      const votes = Math.max(1, stall.crowd);
      await api(base, `datasets/${id}/consensus-settings`, { method: "PATCH", body: { calibration_votes: votes } });
      status.textContent = `Calibration now asks ${votes} votes per question.`;
    }
  } catch (err) {
    status.textContent = err.message;
  }
  await Promise.all([refreshStalls(), refreshProgress(), refreshAudit()]);
}

async function refreshStalls() {
  const { stalls } = await api(base, `datasets/${id}/stalls`);
  stalledStages = new Set(stalls.flatMap((s) => s.stages));
  document.getElementById("stalls").hidden = stalls.length === 0;
  document.getElementById("stall-list").replaceChildren(...stalls.map((stall) => {
    const actions = stall.actions.map((action) => {
      const control = STALL_ACTIONS[action](stall);
      if (control.tagName === "BUTTON") control.addEventListener("click", () => runStallAction(action, stall));
      return control;
    });
    return el("li", { "data-stall": stall.code }, el("span", { text: stall.message }), " ", ...actions);
  }));
}

// A new dataset's first steps, ticked off from the data; the card goes once every required step is done.
async function refreshChecklist() {
  const { steps } = await api(base, `datasets/${id}/checklist`);
  const items = steps.map((step) => el("li", { "data-step": step.key, class: step.done ? "done" : "" },
    el("span", { class: "tick", "aria-hidden": "true", text: step.done ? "✓" : "○" }), " ",
    step.done ? el("span", { text: `${step.label} (done)` }) : el("a", { href: step.href, text: step.label })));
  document.getElementById("checklist-steps").replaceChildren(...items);
  document.getElementById("checklist").hidden = steps.every((s) => s.done || s.optional);
}

async function refreshAudit() {
  const page = await api(base, `datasets/${id}/audit`);
  const rows = page.results.map((entry) => el("tr", { "data-action": entry.action },
    el("td", { text: new Date(entry.created_at).toLocaleString() }),
    el("td", { text: entry.actor }),
    el("td", { text: entry.action }),
    el("td", {}, el("code", { text: JSON.stringify(entry.parameters) })),
    el("td", {}, el("code", { text: JSON.stringify(entry.result) }))));
  document.querySelector("#audit tbody").replaceChildren(...rows);
}

async function refreshCost() {
  const ledger = await api(base, `datasets/${id}/cost`);
  const money = (x) => `${x.toFixed(2)} ${ledger.currency}`;
  const num = (x) => el("td", { class: "num", text: String(x) });
  document.querySelector("#cost tbody").replaceChildren(...ledger.rows.map((r) => el("tr", {},
    el("td", { text: r.stage }), el("td", { text: r.wnid }), num(r.tasks), num(r.answers),
    num(Math.round(r.worker_seconds)), el("td", { class: "num", text: money(r.cost) }))));
  const t = ledger.totals;
  document.getElementById("cost-summary").textContent = `${t.answers} answers to ${t.tasks} tasks, ` +
    `${Math.round(t.worker_seconds / 60)} worker-minutes, ${money(t.cost)} including a ` +
    `${Math.round(ledger.fee_fraction * 100)}% provider fee`;
  // Reviewers are in-house, not paid per item: their time is in minutes beside the crowd's money.
  const r = ledger.reviewers;
  document.getElementById("cost-reviewers").textContent = `Reviewers: ${r.minutes_total} minutes ` +
    `(${r.minutes_spent} spent on ${r.decided_items} decided items, ${r.minutes_expected} expected for ` +
    `${r.open_items} open ones, at ${r.seconds_per_item} s an item)`;
  const a = ledger.alternatives;
  const rows = [
    ["This dataset (adaptive consensus)", t.cost],
    ["Fixed majority-5 voting", a.fixed_majority_5],
    ["Multi-label: hierarchical questions", a.multilabel_hierarchical],
    [`Multi-label: flat per-class questions (${a.flat_votes_per_question} answers each)`, a.multilabel_flat_per_class],
  ];
  document.querySelector("#cost-alternatives tbody").replaceChildren(...rows.map(([name, cost]) =>
    el("tr", {}, el("td", { text: name }), el("td", { class: "num", text: money(cost) }))));
  // Money the providers actually paid (decimal strings), beside the estimate they were published at.
  const spend = ledger.spend.map((s) => el("tr", {}, el("td", { text: s.provider }),
    num(s.assignments_approved), num(s.assignments_rejected), num(s.rewards), num(s.bonuses), num(s.fees),
    num(s.total), num(s.estimated), num(s.budget ?? "none")));
  document.getElementById("cost-spend").hidden = spend.length === 0;
  document.querySelector("#cost-spend tbody").replaceChildren(...spend);
}

function showReview(data) {
  const num = (x) => el("td", { class: "num", text: String(x) });
  document.querySelector("#review tbody").replaceChildren(...Object.entries(data.counts).map(([kind, c]) =>
    el("tr", { "data-kind": kind }, el("td", { text: kind }), num(c.open), num(c.leased), num(c.decided), num(c.dismissed))));
}

async function refreshReview() {
  showReview(await api(base, `datasets/${id}/review`));
  await refreshDecisions();
}

// The latest decision of an item can be undone (once); the undo reopens the item for a reviewer.
async function refreshDecisions() {
  const page = await api(base, `datasets/${id}/review/decisions`);
  const latest = new Set();
  const rows = page.results.map((d) => {
    let action = el("span", { text: d.undone ? "undone" : "" });
    const first = !latest.has(d.item);
    latest.add(d.item);
    if (first && d.decision !== "undo" && !d.undone && d.undo_refused) {
      action = el("span", { text: "final: the pipeline acted on it", title: d.undo_refused });
    } else if (first && d.decision !== "undo" && !d.undone) {
      action = el("button", { type: "button", text: "Undo…" });
      action.addEventListener("click", () => undo(d));
    }
    const image = d.image ? el("a", { href: `/organize/datasets/${id}/images/${d.image}/`, text: String(d.image) }) : "";
    return el("tr", { "data-decision": d.id }, el("td", { text: new Date(d.created_at).toLocaleString() }),
      el("td", { text: d.kind }), el("td", { text: d.decision }), el("td", { text: d.reviewer }),
      el("td", { class: "num" }, image), el("td", {}, action));
  });
  document.querySelector("#decisions tbody").replaceChildren(...rows);
}

async function undo(d) {
  const error = document.getElementById("decisions-error");
  error.textContent = "";
  const reason = window.prompt(`Undo the ${d.decision} decision of ${d.reviewer}? Reason:`);
  if (reason === null) return;
  try {
    await api(base, `review/decisions/${d.id}/undo`, { method: "POST", body: { reason } });
    await refreshReview();
  } catch (err) {
    error.textContent = err.message;
  }
}

document.getElementById("overlap-scan").addEventListener("click", async () => {
  const status = document.getElementById("review-status");
  if (!window.confirm("Scan the dataset's new and changed boxes for duplicates and cross-class overlaps?")) return;
  try {
    const data = await api(base, `datasets/${id}/review`, { method: "POST" });
    showReview(data);
    status.textContent = data.scan_queued ? "Scan started." : "A scan already queued will cover them.";
    await refreshAudit();
  } catch (err) {
    status.textContent = err.message;
  }
});

async function loadHierarchies() {
  const select = document.querySelector("#start-multilabel select[name=hierarchy]");
  const page = await api(base, "hierarchies/");
  const items = page.results ?? page;
  select.replaceChildren(...items.map((h) => el("option", { value: h.id, text: `${h.name} ${h.version}` })));
}

// The dataset's classes, for the class pickers (the verification form's checkboxes, the boxing form's select).
let classes = [];
async function loadClasses() {
  const data = await api(base, `datasets/${id}/concepts`);
  classes = [...data.selected].sort((a, b) => a.name.localeCompare(b.name));
  const label = (c) => `${c.name} (${c.wnid})`;
  for (const box of document.querySelectorAll(".class-choices")) {
    box.replaceChildren(...classes.map((c) => el("label", { class: "check" },
      el("input", { type: "checkbox", name: box.dataset.name, value: c.wnid }), ` ${label(c)}`)));
  }
  for (const select of document.querySelectorAll("select.class-select")) {
    select.replaceChildren(...classes.map((c) => el("option", { value: c.wnid, text: label(c) })));
  }
  if (!classes.length) {
    document.getElementById("start-error").textContent = "This dataset has no classes yet: choose them on the Classes page.";
  }
}
const className = (wnid) => (classes.find((c) => c.wnid === wnid) || { name: wnid }).name;

for (const all of document.querySelectorAll(".class-picker .select-all")) {
  all.addEventListener("change", () => {
    for (const box of all.closest("fieldset").querySelectorAll("input[name=concept]")) box.checked = all.checked;
  });
}

// Each start: what the confirmation says (in words), the requests it sends, and what the page says after.
const STARTS = {
  verification: (form, data) => {
    const wnids = [...form.querySelectorAll("input[name=concept]:checked")].map((b) => b.value);
    const calibrate = data.calibrate === "on";
    const names = wnids.map(className);
    return {
      text: wnids.length === 1 ? `Verify the candidate images of ${names[0]}?`
        : `Verify the candidate images of ${wnids.length} classes?`,
      details: `${names.join(", ")}${calibrate ? "; each class calibrated first" : ""}.`,
      requests: wnids.map((wnid) => ({ path: `datasets/${id}/verification`, body: { concept: wnid, calibrate }, label: className(wnid) })),
      done: (r) => `${r.created} question(s) asked${r.calibration ? `, ${r.calibration} for calibration` : ""}`,
      empty: "Choose at least one class to verify.",
    };
  },
  multilabel: (form, data) => ({
    text: "Start multi-label questioning of every image?",
    details: `Hierarchy: ${form.querySelector("select[name=hierarchy] option:checked")?.textContent ?? data.hierarchy}.`,
    requests: [{ path: `datasets/${id}/multilabel`, body: { hierarchy: Number(data.hierarchy) }, label: "Multi-label questioning" }],
    done: (r) => `${r.created} image(s) started, ${r.already} already being labelled`,
  }),
  boxes: (form, data) => {
    const name = className(data.concept);
    return {
      text: data.where === "all"
        ? `Start boxing ${name} on every image of the dataset, whether it shows ${name} or not?`
        : `Start boxing ${name} on the images verified to show it?`,
      details: `At most ${data.max_boxes} boxes per image.`,
      requests: data.concept ? [{ path: `datasets/${id}/box-jobs`, label: `Boxing ${name}`,
        body: { concept: data.concept, where: data.where, max_boxes: Number(data.max_boxes) } }] : [],
      done: (r) => `${r.created} new job(s), ${r.existing} image(s) already had one`,
      empty: "Choose the class to box.",
    };
  },
};

function confirmStart(text, details) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-params").textContent = details;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
  });
}

for (const form of document.querySelectorAll("form.pipeline")) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const error = document.getElementById("start-error");
    const status = document.getElementById("start-status");
    error.textContent = "";
    const start = STARTS[form.dataset.action](form, formData(form));
    if (!start.requests.length) {
      error.textContent = start.empty;
      return;
    }
    if (!(await confirmStart(start.text, start.details))) return;
    const lines = [];
    const failures = [];
    for (const request of start.requests) {
      try {
        const result = await api(base, request.path, { method: "POST", body: request.body });
        lines.push(`${request.label}: ${start.done(result)}.`);
      } catch (err) {
        failures.push(`${request.label}: ${err.message}`);
      }
    }
    status.textContent = lines.join(" ");
    error.textContent = failures.join(" ");
    await Promise.all([refreshAudit(), refreshProgress(), refreshChecklist().catch(() => {})]);
  });
}

// The candidates page links here with ?verify=WNID: the verification form comes filled in and in view.
const verify = new URLSearchParams(window.location.search).get("verify");
const classesLoaded = loadClasses().catch((err) => { document.getElementById("start-error").textContent = err.message; });
if (verify) {
  classesLoaded.then(() => {
    const form = document.getElementById("start-verification");
    const box = [...form.querySelectorAll("input[name=concept]")].find((b) => b.value === verify);
    if (box) box.checked = true;
    form.scrollIntoView();
    (box || form.querySelector("button")).focus();
  });
}

refreshStalls().then(refreshProgress).catch((err) => { document.getElementById("progress-status").textContent = err.message; });
refreshAudit();
refreshChecklist().catch(() => {});
setInterval(() => refreshChecklist().catch(() => {}), 10 * POLL_MS);
refreshReview().catch((err) => { document.getElementById("review-status").textContent = err.message; });
refreshCost().catch((err) => { document.getElementById("cost-summary").textContent = err.message; });
loadHierarchies().catch((err) => { document.getElementById("start-error").textContent = err.message; });
setInterval(refreshProgress, POLL_MS);
setInterval(() => refreshStalls().catch(() => {}), 10 * POLL_MS);
setInterval(() => refreshCost().catch(() => {}), 10 * POLL_MS);
