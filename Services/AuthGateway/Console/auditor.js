// Auditor view: transaction search with the API's filters (times in UTC, as shown), cursor paging, a detail drawer with
// who acted and what changed, CSV export, chain verification per app on request (against the checkpoint this browser
// saved) and charts of the fetched rows. Apps are shown by name (GET /v1/audit/apps: the apps the key reads).
import { api, APIError, download, el, formatTime, query, showStatus, utcInputToRFC3339 } from "./api.js";
import { horizontalBars, outcomesOverTime, successRateOverTime, summarize } from "./charts.js";

const $ = (id) => document.getElementById(id);
const FIELDS = ["transactionId", "appId", "kind", "outcome", "actor", "change", "detail", "userId", "deviceId", "clientIp", "score", "latencyMs", "createdAt"];
const CHECKPOINTS_KEY = "facegate.console.checkpoints";

function savedCheckpoints() {
  try { return JSON.parse(localStorage.getItem(CHECKPOINTS_KEY) || "{}") || {}; } catch { return {}; }
}

function fieldText(name, value) {
  if (value === null || value === undefined) return "—";
  if (name === "createdAt") return formatTime(value);
  if (name === "actor") return value.id ? `${value.type} ${value.id}` : value.type;
  if (name === "change") return Object.entries(value).map(([field, [before, after]]) => `${field}: ${JSON.stringify(before)} → ${JSON.stringify(after)}`).join("; ");
  if (name === "detail") return Object.keys(value).length ? Object.entries(value).map(([key, text]) => `${key}=${text}`).join(", ") : "—";
  return value;
}

export function initAuditor() {
  let filters = {};
  let pageCursors = [null]; // cursor of each page visited; the last is the current page's
  let nextCursor = null;
  let fetched = new Map(); // transactionId → item, over every page of this search
  let knownApps = new Map(); // appId → name (operator keys can list apps)
  let activated = false;
  let drawerTrigger = null;

  function readFilters() {
    const form = $("audit-filters");
    return {
      appId: form.appId.value, kind: form.kind.value, outcome: form.outcome.value, userId: form.userId.value,
      deviceId: form.deviceId.value, from: utcInputToRFC3339(form.from.value), to: utcInputToRFC3339(form.to.value),
      limit: form.limit.value,
    };
  }

  async function loadPage(cursor) {
    const status = $("audit-status");
    showStatus(status, "info", "Loading…");
    try {
      const page = await api("GET", `/v1/audit/transactions${query({ ...filters, cursor })}`);
      nextCursor = page.nextCursor || null;
      for (const item of page.items) fetched.set(item.transactionId, item);
      renderRows(page.items);
      const pageNumber = pageCursors.length;
      $("audit-page").textContent = `Page ${pageNumber} · ${page.items.length} row${page.items.length === 1 ? "" : "s"}`;
      $("audit-prev").disabled = pageCursors.length <= 1;
      $("audit-next").disabled = !nextCursor;
      showStatus(status, "ok", `${fetched.size} transaction${fetched.size === 1 ? "" : "s"} fetched in this search.`);
      renderCharts();
      return true;
    } catch (error) {
      showStatus(status, "bad", error instanceof APIError ? error.text : String(error));
      return false;
    }
  }

  function renderRows(items) {
    const body = $("audit-rows");
    body.replaceChildren();
    if (items.length === 0) {
      body.append(el("tr", {}, el("td", { colspan: 8, text: "No transactions match this filter." })));
      return;
    }
    // One tab stop for the whole table (roving tabindex): Tab moves past it to the paging buttons, the arrow
    // keys (and Home/End) move between rows.
    items.forEach((item, index) => {
      const ok = item.outcome === "SUCCESS";
      const button = el("button", { type: "button", class: "secondary row-details", tabindex: index === 0 ? "0" : "-1",
        "aria-label": `Details of transaction ${item.transactionId}`, "aria-keyshortcuts": "ArrowUp ArrowDown", text: "Details" });
      button.addEventListener("click", () => openDrawer(item, button));
      button.addEventListener("keydown", moveBetweenRows);
      body.append(el("tr", { "data-transaction-id": item.transactionId },
        el("td", { class: "mono", text: formatTime(item.createdAt) }),
        el("td", { class: "optional", "data-field": "app", text: knownApps.get(item.appId) || item.appId }),
        el("td", { text: item.kind }),
        el("td", { class: ok ? "outcome-ok" : "outcome-bad", text: item.outcome }),
        el("td", { class: "optional mono", text: item.deviceId || "—" }),
        el("td", { class: "optional", text: `${item.latencyMs} ms` }),
        el("td", { class: "optional", text: item.score === null || item.score === undefined ? "—" : Number(item.score).toFixed(3) }),
        el("td", {}, button)));
    });
  }

  function moveBetweenRows(event) {
    const buttons = [...document.querySelectorAll("#audit-rows button.row-details")];
    const index = buttons.indexOf(event.currentTarget);
    const target = { ArrowDown: index + 1, ArrowUp: index - 1, Home: 0, End: buttons.length - 1 }[event.key];
    if (target === undefined || target < 0 || target >= buttons.length) return;
    event.preventDefault();
    buttons[index].tabIndex = -1;
    buttons[target].tabIndex = 0;
    buttons[target].focus();
  }

  function renderCharts() {
    const items = [...fetched.values()];
    const summary = summarize(items);
    const draw = (id, chart) => {
      const figure = $(id);
      figure.querySelector(".plot").replaceChildren(chart.svg);
      figure.querySelector(".legend").replaceChildren(...chart.legend.map((entry) => {
        const span = el("span", { text: entry.label });
        span.style.setProperty("--swatch", entry.color);
        return span;
      }));
    };
    draw("chart-outcomes", outcomesOverTime(summary));
    draw("chart-success", successRateOverTime(summary));
    draw("chart-latency", horizontalBars("Latency percentiles", items.length
      ? [{ label: "p50", value: summary.latency.p50 }, { label: "p90", value: summary.latency.p90 }, { label: "p99", value: summary.latency.p99 }]
      : [], " ms"));
    draw("chart-devices", horizontalBars("Top failing devices", summary.topFailingDevices.map((d) => ({ ...d, color: "#b3261e" })), "",
      items.length ? "No failed logins with a device in the current result" : undefined));
  }

  // --- Drawer -----------------------------------------------------------------------------------------------
  function openDrawer(item, trigger) {
    drawerTrigger = trigger;
    const list = $("drawer-fields");
    list.replaceChildren();
    for (const name of FIELDS) {
      const value = item[name];
      list.append(el("dt", { text: name }), el("dd", { class: name.endsWith("Id") ? "mono" : null, "data-field": name, text: fieldText(name, value) }));
    }
    $("drawer-title").textContent = `Transaction ${item.outcome}`;
    $("drawer").hidden = false;
    $("drawer-backdrop").hidden = false;
    $("drawer-close").focus();
  }

  function closeDrawer() {
    if ($("drawer").hidden) return;
    $("drawer").hidden = true;
    $("drawer-backdrop").hidden = true;
    if (drawerTrigger && document.contains(drawerTrigger)) drawerTrigger.focus();
    drawerTrigger = null;
  }

  $("drawer-close").addEventListener("click", closeDrawer);
  $("drawer-backdrop").addEventListener("click", closeDrawer);
  $("drawer").addEventListener("keydown", (event) => {
    if (event.key === "Escape") { event.preventDefault(); closeDrawer(); return; }
    if (event.key !== "Tab") return;
    // Keep focus inside the dialog while it is open.
    const focusable = [...$("drawer").querySelectorAll("button, [href], [tabindex]:not([tabindex='-1'])")];
    const first = focusable[0], last = focusable[focusable.length - 1];
    if (event.shiftKey && document.activeElement === first) { event.preventDefault(); last.focus(); }
    else if (!event.shiftKey && document.activeElement === last) { event.preventDefault(); first.focus(); }
  });

  // --- Chain verification, on request -------------------------------------------------------------------------
  function chainApps() {
    const ids = new Set(knownApps.keys());
    for (const item of fetched.values()) ids.add(item.appId);
    if (filters.appId) ids.add(filters.appId.trim());
    return [...ids].sort();
  }

  async function verifyChains() {
    const list = $("chain-list");
    const checkpoints = savedCheckpoints();
    list.replaceChildren();
    const ids = chainApps();
    if (ids.length === 0) {
      list.append(el("li", { text: "No apps to verify yet: search first." }));
      return;
    }
    for (const appId of ids) {
      const name = knownApps.get(appId);
      const label = name ? `${name} (${appId})` : appId;
      const row = el("li", { "data-app-id": appId, text: `${label}: verifying…` });
      list.append(row);
      try {
        const result = await api("GET", `/v1/audit/verify${query({ appId, checkpoint: checkpoints[appId] })}`);
        const against = result.checkpoint ? (result.checkpoint.ok ? `; checkpoint of ${formatTime(result.checkpoint.issuedAt)} holds`
          : `; the checkpoint of ${formatTime(result.checkpoint.issuedAt)} does NOT hold (rows removed or changed)`) : "";
        if (result.ok && (!result.checkpoint || result.checkpoint.ok)) {
          row.className = "ok";
          row.dataset.state = "ok";
          row.replaceChildren(el("strong", { text: "✓ intact" }), ` ${label}: ${result.checked} transactions checked${against}`);
        } else {
          row.className = "bad";
          row.dataset.state = "broken";
          row.replaceChildren(el("strong", { text: "✗ broken" }), ` ${label}: first broken transaction `,
            el("code", { text: result.firstBrokenTransactionId || "unknown" }), ` (${result.checked} checked)${against}`);
        }
      } catch (error) {
        row.className = "bad";
        row.dataset.state = "error";
        row.textContent = `${label}: ${error instanceof APIError ? error.text : String(error)}`;
      }
    }
  }

  /** Keeps each app's signed chain head in this browser; later verifications also catch a removed tail. */
  async function saveCheckpoints() {
    const checkpoints = savedCheckpoints();
    let saved = 0;
    for (const appId of chainApps()) {
      try {
        checkpoints[appId] = (await api("GET", `/v1/audit/checkpoint${query({ appId })}`)).checkpoint;
        saved += 1;
      } catch { /* an app outside the key: skipped */ }
    }
    localStorage.setItem(CHECKPOINTS_KEY, JSON.stringify(checkpoints));
    showStatus($("audit-status"), "ok", `Checkpoints saved for ${saved} app${saved === 1 ? "" : "s"}.`);
  }

  // --- Events -----------------------------------------------------------------------------------------------
  $("audit-filters").addEventListener("submit", async (event) => {
    event.preventDefault();
    filters = readFilters();
    pageCursors = [null];
    fetched = new Map();
    await loadPage(null);
  });
  $("audit-next").addEventListener("click", async () => {
    if (!nextCursor) return;
    pageCursors.push(nextCursor);
    await loadPage(nextCursor);
  });
  $("audit-prev").addEventListener("click", async () => {
    if (pageCursors.length <= 1) return;
    pageCursors.pop();
    await loadPage(pageCursors[pageCursors.length - 1]);
  });
  $("chain-refresh").addEventListener("click", verifyChains);
  $("chain-checkpoint").addEventListener("click", saveCheckpoints);
  $("audit-csv").addEventListener("click", async () => {
    const current = readFilters();
    delete current.limit;
    const status = $("audit-status");
    try {
      const response = await api("GET", `/v1/audit/transactions.csv${query(current)}`, { raw: true });
      const blob = await response.blob();
      download(blob, "transactions.csv");
      showStatus(status, "ok", `CSV exported (${blob.size} bytes) for the current filter.`);
    } catch (error) {
      showStatus(status, "bad", error instanceof APIError ? error.text : String(error));
    }
  });

  return {
    async activate() {
      if (activated) return;
      activated = true;
      try {
        const apps = await api("GET", "/v1/audit/apps");
        knownApps = new Map(apps.items.map((app) => [app.appId, app.name]));
        $("known-apps").replaceChildren(...apps.items.map((app) => el("option", { value: app.appId, text: app.name })));
      } catch { /* the search still works without names */ }
      filters = readFilters();
      pageCursors = [null];
      fetched = new Map();
      await loadPage(null);
    },
    reset() {
      activated = false;
      filters = {};
      fetched = new Map();
      knownApps = new Map();
      $("audit-rows").replaceChildren();
      $("chain-list").replaceChildren();
      // The next sign-in must not show the last session's count as its own.
      $("audit-status").className = "status";
      $("audit-status").textContent = "";
      closeDrawer();
    },
  };
}
