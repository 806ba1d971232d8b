// Small SVG charts of the organizer pages (no build step, no library): bars with optional intervals and a
// heat map of a calibration table. Each chart only draws numbers the page also shows in a table.
const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// bars: [{label, value, low?, high?}]; max: the value axis' top (default: the largest value).
export function barChart(bars, { title, yLabel = "", max, format = (v) => String(v) } = {}) {
  const width = Math.max(320, 40 + bars.length * 34);
  const height = 220;
  const left = 44;
  const bottom = 56;
  const top = 14;
  const plotH = height - top - bottom;
  const top_ = max ?? Math.max(1, ...bars.map((b) => b.high ?? b.value));
  const y = (v) => top + plotH - (plotH * Math.min(v, top_)) / top_;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": title,
    class: "chart" });
  root.append(svg("title", {}, title));
  root.append(svg("line", { x1: left, y1: top, x2: left, y2: top + plotH, stroke: "#6b7280" }));
  root.append(svg("line", { x1: left, y1: top + plotH, x2: width - 4, y2: top + plotH, stroke: "#6b7280" }));
  for (const tick of [0, 0.5, 1]) {
    root.append(svg("text", { x: left - 4, y: y(tick * top_) + 4, "text-anchor": "end", "font-size": 10,
      fill: "#374151" }, format(tick * top_)));
  }
  if (yLabel) root.append(svg("text", { x: 4, y: top - 2, "font-size": 10, fill: "#374151" }, yLabel));
  const slot = (width - left - 8) / Math.max(1, bars.length);
  bars.forEach((bar, i) => {
    const x = left + 4 + i * slot;
    const w = Math.max(4, slot - 8);
    const rect = svg("rect", { x, y: y(bar.value), width: w, height: top + plotH - y(bar.value), fill: "#2563eb",
      "data-label": bar.label, "data-value": bar.value });
    rect.append(svg("title", {}, `${bar.label}: ${format(bar.value)}`));
    root.append(rect);
    if (bar.low !== undefined && bar.low !== null && bar.high !== null) {
      const cx = x + w / 2;
      root.append(svg("line", { x1: cx, y1: y(bar.low), x2: cx, y2: y(bar.high), stroke: "#111827",
        "stroke-width": 1.5 }));
    }
    root.append(svg("text", { x: x + w / 2, y: top + plotH + 12, "text-anchor": "end", "font-size": 10,
      fill: "#374151", transform: `rotate(-40 ${x + w / 2} ${top + plotH + 12})` }, bar.label));
  });
  return root;
}

// P(positive) over (yes, no) vote counts: probabilities[a][b] for a yes and b no votes, a + b <= cap.
export function heatmap(probabilities, { title } = {}) {
  const cap = probabilities.length - 1;
  const cell = 30;
  const left = 40;
  const top = 30;
  const size = left + (cap + 1) * cell + 4;
  const root = svg("svg", { viewBox: `0 0 ${size} ${size}`, width: size, height: size, role: "img",
    "aria-label": title, class: "chart" });
  root.append(svg("title", {}, title));
  root.append(svg("text", { x: left, y: 12, "font-size": 11, fill: "#374151" }, "no votes →"));
  root.append(svg("text", { x: 2, y: top - 4, "font-size": 11, fill: "#374151" }, "yes ↓"));
  for (let b = 0; b <= cap; b += 1) {
    root.append(svg("text", { x: left + b * cell + cell / 2, y: top - 4, "text-anchor": "middle",
      "font-size": 10, fill: "#374151" }, String(b)));
  }
  probabilities.forEach((row, a) => {
    root.append(svg("text", { x: left - 6, y: top + a * cell + cell / 2 + 4, "text-anchor": "end",
      "font-size": 10, fill: "#374151" }, String(a)));
    row.forEach((p, b) => {
      if (p === null || Number.isNaN(p)) return;
      // Blue for P near 1, red near 0, white at 0.5.
      const t = Math.abs(p - 0.5) * 2;
      const [r, g, bl] = p >= 0.5 ? [255 - 218 * t, 255 - 156 * t, 255 - 20 * t] : [255 - 35 * t, 255 - 217 * t, 255 - 217 * t];
      const x = left + b * cell;
      const yy = top + a * cell;
      const rect = svg("rect", { x, y: yy, width: cell - 1, height: cell - 1,
        fill: `rgb(${Math.round(r)},${Math.round(g)},${Math.round(bl)})`, stroke: "#d1d5db", "data-yes": a, "data-no": b });
      rect.append(svg("title", {}, `${a} yes, ${b} no: P(positive) = ${p.toFixed(3)}`));
      root.append(rect);
      root.append(svg("text", { x: x + cell / 2, y: yy + cell / 2 + 3, "text-anchor": "middle", "font-size": 8,
        fill: t > 0.6 ? "#ffffff" : "#111827" }, p.toFixed(2)));
    });
  });
  return root;
}
