// The example images of a task (what counts, what does not), shown beside the question in a collapsible
// section; the same for every task kind, put in by the worker page after the kind's module has drawn the task.
// Captions and names are data: text nodes only.

const LABELS = { positive: "Counts", negative: "Does not count" };

export function showExamples(container, task) {
  const examples = task.examples || [];
  if (!examples.length) return;
  const box = document.createElement("details");
  box.className = "examples-box";
  box.open = !window.matchMedia("(max-width: 480px)").matches; // on a phone the task comes first
  const summary = document.createElement("summary");
  const yes = examples.filter((e) => e.polarity === "positive").length;
  const no = examples.length - yes;
  summary.textContent = `Examples: ${yes} that count${no ? `, ${no} that do not` : ""}`;
  const list = document.createElement("ul");
  list.className = "example-list";
  const name = task.payload && task.payload.concept ? task.payload.concept.name : "this";
  for (const example of examples) {
    const item = document.createElement("li");
    item.className = `example ${example.polarity}`;
    const figure = document.createElement("figure");
    const img = document.createElement("img");
    img.src = example.url;
    img.width = example.width;
    img.height = example.height;
    img.loading = "lazy";
    img.alt = example.caption || (example.polarity === "positive" ? `An example of ${name}` : `Not ${name}`);
    const caption = document.createElement("figcaption");
    const label = document.createElement("strong");
    label.textContent = LABELS[example.polarity] || example.polarity;
    caption.append(label);
    if (example.caption) caption.append(`: ${example.caption}`);
    figure.append(img, caption);
    item.append(figure);
    list.append(item);
  }
  box.append(summary, list);
  const header = container.querySelector(".examples") || container.querySelector(".gloss") ||
    container.querySelector("h1");
  if (header) header.after(box);
  else container.prepend(box);
}
