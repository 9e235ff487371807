// Charts drawn as plain SVG from the transactions the auditor has fetched. Every chart has a text alternative.

const SVG = "http://www.w3.org/2000/svg";
const PALETTE = ["#1f7a3a", "#b3261e", "#0b5cad", "#8a4b00", "#6a3d9a", "#00697a", "#9c2f6b", "#4b5563"];

function svgElement(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function frame(width, height, label) {
  const svg = svgElement("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, preserveAspectRatio: "xMidYMid meet" });
  svg.append(svgElement("title", {}, label));
  return svg;
}

/** Nearest-rank percentile of a sorted array. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** The kinds that are an attempt to prove who someone is: what "success rate" and "failing devices" count. */
export const LOGIN_KINDS = new Set(["face.login", "face.login.confirm", "face.verify", "kiosk.login", "device.assert", "ctid.verify"]);

/** Everything the charts show, computed from transaction items. */
export function summarize(items, bucketCount = 10) {
  const times = items.map((item) => new Date(item.createdAt).getTime()).filter((t) => !Number.isNaN(t));
  const outcomes = [...new Set(items.map((item) => item.outcome))].sort((a, b) => (a === "SUCCESS" ? -1 : b === "SUCCESS" ? 1 : a.localeCompare(b)));
  const start = Math.min(...times);
  const end = Math.max(...times);
  const span = Math.max(1, end - start + 1);
  const count = items.length === 0 ? 0 : Math.min(bucketCount, Math.max(1, items.length));
  const buckets = Array.from({ length: count }, (_, index) => ({
    start: start + (span * index) / count, counts: {}, total: 0, logins: 0, successes: 0,
  }));
  for (const item of items) {
    const t = new Date(item.createdAt).getTime();
    if (Number.isNaN(t) || count === 0) continue;
    const index = Math.min(count - 1, Math.floor(((t - start) / span) * count));
    const bucket = buckets[index];
    bucket.counts[item.outcome] = (bucket.counts[item.outcome] || 0) + 1;
    bucket.total += 1;
    // The success rate counts logins only, and a confirmation request is a step of one, not an outcome.
    if (LOGIN_KINDS.has(item.kind) && item.outcome !== "CONFIRM_REQUIRED") {
      bucket.logins += 1;
      if (item.outcome === "SUCCESS") bucket.successes += 1;
    }
  }
  const latencies = items.map((item) => Number(item.latencyMs) || 0).sort((a, b) => a - b);
  const failuresByDevice = new Map();
  for (const item of items) {
    // A confirmation request is a step of a login, not a failure.
    if (!LOGIN_KINDS.has(item.kind) || item.outcome === "SUCCESS" || item.outcome === "CONFIRM_REQUIRED" || !item.deviceId) continue;
    failuresByDevice.set(item.deviceId, (failuresByDevice.get(item.deviceId) || 0) + 1);
  }
  const topFailingDevices = [...failuresByDevice.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, 5)
    .map(([label, value]) => ({ label, value }));
  return {
    outcomes, buckets, spanMs: span,
    latency: { p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: latencies.at(-1) || 0 },
    topFailingDevices,
    logins: buckets.reduce((sum, bucket) => sum + bucket.logins, 0),
    successRate: (() => {
      const logins = buckets.reduce((sum, bucket) => sum + bucket.logins, 0);
      return logins ? buckets.reduce((sum, bucket) => sum + bucket.successes, 0) / logins : 0;
    })(),
  };
}

function bucketLabel(ms, spanMs) {
  const date = new Date(ms);
  const iso = date.toISOString();
  return spanMs > 2 * 86_400_000 ? iso.slice(5, 10) : iso.slice(11, spanMs > 120_000 ? 16 : 19);
}

const FIXED_COLORS = { SUCCESS: "#1f7a3a", CONFIRM_REQUIRED: "#0b5cad" };

function colorFor(outcome, outcomes) {
  if (FIXED_COLORS[outcome]) return FIXED_COLORS[outcome];
  const failures = PALETTE.filter((color) => !Object.values(FIXED_COLORS).includes(color));
  const index = outcomes.filter((o) => !FIXED_COLORS[o]).indexOf(outcome);
  return failures[index % failures.length];
}

function emptyChart(label, message = "No transactions in the current result") {
  const svg = frame(320, 80, `${label}: ${message}`);
  svg.append(svgElement("text", { x: 160, y: 45, "text-anchor": "middle", fill: "#4a5360", "font-size": 13 }, message));
  return svg;
}

/** Stacked columns: attempts per outcome in each time bucket. */
export function outcomesOverTime(summary) {
  const label = "Attempts per outcome over time";
  if (summary.buckets.length === 0) return { svg: emptyChart(label), legend: [] };
  const width = 360, height = 200, left = 34, bottom = 26, top = 8;
  const max = Math.max(1, ...summary.buckets.map((b) => b.total));
  const plotHeight = height - bottom - top;
  const slot = (width - left - 6) / summary.buckets.length;
  const svg = frame(width, height, `${label}: ${summary.buckets.length} time buckets, up to ${max} attempts each`);
  svg.append(svgElement("line", { x1: left, y1: top, x2: left, y2: height - bottom, stroke: "#8a93a0" }));
  svg.append(svgElement("line", { x1: left, y1: height - bottom, x2: width - 4, y2: height - bottom, stroke: "#8a93a0" }));
  svg.append(svgElement("text", { x: left - 4, y: top + 10, "text-anchor": "end", "font-size": 11, fill: "#1b1f24" }, String(max)));
  svg.append(svgElement("text", { x: left - 4, y: height - bottom, "text-anchor": "end", "font-size": 11, fill: "#1b1f24" }, "0"));
  summary.buckets.forEach((bucket, index) => {
    let y = height - bottom;
    const x = left + 3 + index * slot;
    for (const outcome of summary.outcomes) {
      const n = bucket.counts[outcome] || 0;
      if (!n) continue;
      const h = (n / max) * plotHeight;
      y -= h;
      const rect = svgElement("rect", { x, y, width: Math.max(2, slot - 4), height: h, fill: colorFor(outcome, summary.outcomes), "data-outcome": outcome });
      rect.append(svgElement("title", {}, `${bucketLabel(bucket.start, summary.spanMs)} ${outcome}: ${n}`));
      svg.append(rect);
    }
    if (index % Math.ceil(summary.buckets.length / 4) === 0) {
      svg.append(svgElement("text", { x: x + slot / 2, y: height - 8, "text-anchor": "middle", "font-size": 10, fill: "#1b1f24" },
        bucketLabel(bucket.start, summary.spanMs)));
    }
  });
  return { svg, legend: summary.outcomes.map((outcome) => ({ label: outcome, color: colorFor(outcome, summary.outcomes) })) };
}

/** Line: share of SUCCESS per time bucket, 0–100 %. */
export function successRateOverTime(summary) {
  const label = "Login success rate over time";
  const buckets = summary.buckets.filter((b) => b.logins > 0);
  if (buckets.length === 0) return { svg: emptyChart(label, "No logins in the current result"), legend: [] };
  const width = 360, height = 200, left = 40, bottom = 26, top = 10;
  const plotWidth = width - left - 12, plotHeight = height - bottom - top;
  const svg = frame(width, height, `${label}: overall ${(summary.successRate * 100).toFixed(0)} percent of ${summary.logins} logins`);
  for (const mark of [0, 50, 100]) {
    const y = top + plotHeight * (1 - mark / 100);
    svg.append(svgElement("line", { x1: left, y1: y, x2: width - 8, y2: y, stroke: mark === 0 ? "#8a93a0" : "#e1e4e8" }));
    svg.append(svgElement("text", { x: left - 4, y: y + 4, "text-anchor": "end", "font-size": 11, fill: "#1b1f24" }, `${mark}%`));
  }
  const points = buckets.map((bucket, index) => {
    const x = left + (buckets.length === 1 ? plotWidth / 2 : (plotWidth * index) / (buckets.length - 1));
    const rate = bucket.successes / bucket.logins;
    return { x, y: top + plotHeight * (1 - rate), rate, bucket };
  });
  svg.append(svgElement("polyline", { points: points.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" "), fill: "none", stroke: "#0b5cad", "stroke-width": 2.5 }));
  for (const point of points) {
    const dot = svgElement("circle", { cx: point.x, cy: point.y, r: 3.5, fill: "#0b5cad" });
    dot.append(svgElement("title", {}, `${bucketLabel(point.bucket.start, summary.spanMs)}: ${(point.rate * 100).toFixed(0)}% of ${point.bucket.logins} logins`));
    svg.append(dot);
  }
  return { svg, legend: [{ label: `overall ${(summary.successRate * 100).toFixed(1)}% of ${summary.logins} logins`, color: "#0b5cad" }] };
}

/** Horizontal bars with a value label; used for latency percentiles and failing devices. */
export function horizontalBars(label, items, unit = "", empty = undefined) {
  if (items.length === 0) return { svg: emptyChart(label, empty), legend: [] };
  const rowHeight = 28, left = 120, width = 360, height = items.length * rowHeight + 10;
  const max = Math.max(1, ...items.map((item) => item.value));
  const svg = frame(width, height, `${label}: ${items.map((item) => `${item.label} ${item.value}${unit}`).join(", ")}`);
  items.forEach((item, index) => {
    const y = 6 + index * rowHeight;
    const barWidth = ((width - left - 60) * item.value) / max;
    const name = item.label.length > 16 ? `${item.label.slice(0, 15)}…` : item.label;
    svg.append(svgElement("text", { x: left - 6, y: y + 16, "text-anchor": "end", "font-size": 12, fill: "#1b1f24" }, name));
    const rect = svgElement("rect", { x: left, y: y + 3, width: Math.max(2, barWidth), height: rowHeight - 10, fill: item.color || "#0b5cad" });
    rect.append(svgElement("title", {}, `${item.label}: ${item.value}${unit}`));
    svg.append(rect);
    svg.append(svgElement("text", { x: left + Math.max(2, barWidth) + 5, y: y + 16, "font-size": 12, fill: "#1b1f24" }, `${item.value}${unit}`));
  });
  return { svg, legend: [] };
}
