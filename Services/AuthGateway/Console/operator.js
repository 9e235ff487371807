// Operator view (admin key): apps searchable and paged, a page per app (settings changed with a confirmation, the secret
// rotated, users and templates searched, viewed and deleted, a photo tested against the gallery, enrollment, device
// resets, a demo access token, deletion) and, for a key covering every app, operator and auditor keys.
import { api, APIError, confirmAction, el, formatTime, query, showStatus } from "./api.js";

const $ = (id) => document.getElementById(id);
const MODULES = [["faceLogin", "Face login"], ["ctid", "CTID"], ["kiosk", "Kiosk"], ["deviceAuth", "Device auth"]];
const STATES = ["disabled", "trial", "formal"];
const APPS_PER_PAGE = 20;
export const KIOSK_TOKEN_KEY = "facegate.kiosk.token";

function errorText(error) { return error instanceof APIError ? error.text : String(error); }

function qualityGrid(quality) {
  return el("div", { class: "quality" },
    el("div", {}, el("b", { text: "Face width" }), `${quality.faceWidth} px`),
    el("div", {}, el("b", { text: "Sharpness" }), Number(quality.sharpness).toFixed(1)),
    el("div", {}, el("b", { text: "Brightness" }), Number(quality.brightness).toFixed(1)),
    el("div", {}, el("b", { text: "Yaw" }), `${Number(quality.yaw).toFixed(1)}°`));
}

/** The settings an app's form edits, as the API names them, read from an app or from the form. */
function settingsOf(app) {
  return {
    modules: { ...app.modules }, matchThreshold: Number(app.matchThreshold), liveness: { ...app.liveness },
    quotas: { ...app.quotas }, keepEnrollmentPhotos: Boolean(app.keepEnrollmentPhotos),
  };
}

/** Each changed setting as "name: old → new", the way the audit row will record it. */
function changes(before, after) {
  const lines = [];
  for (const [name] of MODULES) {
    if (before.modules[name] !== after.modules[name]) lines.push(`modules.${name}: ${before.modules[name]} → ${after.modules[name]}`);
  }
  if (Math.abs(before.matchThreshold - after.matchThreshold) > 1e-6) lines.push(`matchThreshold: ${before.matchThreshold} → ${after.matchThreshold}`);
  for (const part of ["faceLogin", "kiosk"]) {
    if (before.liveness[part] !== after.liveness[part]) lines.push(`liveness.${part}: ${before.liveness[part]} → ${after.liveness[part]}`);
  }
  for (const part of ["dailyCalls", "gallerySize"]) {
    if (before.quotas[part] !== after.quotas[part]) lines.push(`quotas.${part}: ${before.quotas[part]} → ${after.quotas[part]}`);
  }
  if (before.keepEnrollmentPhotos !== after.keepEnrollmentPhotos) {
    lines.push(`keepEnrollmentPhotos: ${before.keepEnrollmentPhotos} → ${after.keepEnrollmentPhotos}`);
  }
  return lines;
}

export function initOperator() {
  let apps = [];
  let appsPage = 0;
  let selected = null;
  let users = [];
  let usersCursor = null;
  let activated = false;

  // --- Apps: search and pages -----------------------------------------------------------------------------------
  async function loadApps() {
    try {
      apps = (await api("GET", "/v1/apps")).items;
      renderApps();
    } catch (error) {
      showStatus($("apps-status"), "bad", errorText(error));
    }
  }

  function matchingApps() {
    const needle = $("apps-search").value.trim().toLowerCase();
    return needle ? apps.filter((app) => app.name.toLowerCase().includes(needle) || app.appId.includes(needle)) : apps;
  }

  function renderApps() {
    const matching = matchingApps();
    const pages = Math.max(1, Math.ceil(matching.length / APPS_PER_PAGE));
    appsPage = Math.min(appsPage, pages - 1);
    const body = $("apps-rows");
    body.replaceChildren();
    for (const app of matching.slice(appsPage * APPS_PER_PAGE, (appsPage + 1) * APPS_PER_PAGE)) {
      const open = el("button", { type: "button", class: "secondary", "aria-label": `Open ${app.name}`, text: "Open" });
      open.addEventListener("click", () => { location.hash = `#operator/app/${app.appId}`; });
      // Header mode: the device is whatever X-Device-Id a caller sends, so say so next to the app.
      const binding = app.deviceBinding === "header"
        ? el("p", { class: "binding-warning", role: "note", "data-binding": "header",
          text: "Devices are identified by the X-Device-Id header, which any caller can set. Bind devices by key: facegate app binding APP_ID dpop." })
        : el("p", { class: "hint", "data-binding": app.deviceBinding || "", text: `Devices bound by key (${app.deviceBindingPolicy || "?"}).` });
      const modules = MODULES.map(([name, label]) => `${label} ${app.modules[name]}`).join(" · ");
      body.append(el("tr", { "data-app-id": app.appId },
        el("td", {}, el("strong", { text: app.name }), el("br"), el("code", { text: app.appId }), binding),
        el("td", { class: "optional", "data-field": "modules", text: modules }), el("td", {}, open)));
    }
    if (matching.length === 0) body.append(el("tr", {}, el("td", { colspan: 3, text: apps.length ? "No app matches." : "No apps yet." })));
    $("apps-page").textContent = `${matching.length} app${matching.length === 1 ? "" : "s"} · page ${appsPage + 1} of ${pages}`;
    $("apps-prev").disabled = appsPage === 0;
    $("apps-next").disabled = appsPage >= pages - 1;
  }

  $("apps-search").addEventListener("input", () => { appsPage = 0; renderApps(); });
  $("apps-prev").addEventListener("click", () => { appsPage -= 1; renderApps(); });
  $("apps-next").addEventListener("click", () => { appsPage += 1; renderApps(); });

  $("app-create").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("app-name").value.trim();
    try {
      const created = await api("POST", "/v1/apps", { json: { name } });
      $("app-name").value = "";
      const status = $("apps-status");
      status.className = "status ok";
      status.replaceChildren(`App ${created.name} created. `,
        el("span", { class: "secret" }, "App secret (shown only now): ", el("code", { id: "created-app-secret", text: created.appSecret })));
      await loadApps();
    } catch (error) {
      showStatus($("apps-status"), "bad", errorText(error));
    }
  });

  // --- The page of one app ------------------------------------------------------------------------------------------
  function showList() {
    selected = null;
    $("app-list").hidden = false;
    $("app-detail").hidden = true;
  }

  async function openApp(appId) {
    let app = apps.find((candidate) => candidate.appId === appId);
    try {
      app = await api("GET", `/v1/apps/${appId}`);
    } catch (error) {
      showList();
      showStatus($("apps-status"), "bad", errorText(error));
      return;
    }
    selected = app;
    $("app-list").hidden = true;
    $("app-detail").hidden = false;
    $("app-title").textContent = app.name;
    $("app-id-line").textContent = app.appId;
    $("users-title").textContent = `Users of ${app.name}`;
    for (const id of ["faces-detail", "enroll-result", "search-result", "secret-new"]) $(id).replaceChildren();
    for (const id of ["users-status", "settings-status", "secret-status", "delete-status"]) showStatus($(id), "info", "");
    $("users-search").value = "";
    $("delete-confirm-name").value = "";
    fillSettings(app);
    users = [];
    usersCursor = null;
    await loadUsers();
    $("app-title").focus();
  }

  // --- Settings, changed only after a confirmation ------------------------------------------------------------------
  function fillSettings(app) {
    for (const [name] of MODULES) $(`set-module-${name}`).value = app.modules[name];
    $("set-threshold").value = app.matchThreshold;
    $("threshold-estimate").textContent = thresholdEstimate(app);
    $("set-liveness-login").value = app.liveness.faceLogin;
    $("set-liveness-kiosk").value = app.liveness.kiosk;
    $("set-daily-calls").value = app.quotas.dailyCalls;
    $("set-gallery-size").value = app.quotas.gallerySize;
    $("set-keep-photos").checked = Boolean(app.keepEnrollmentPhotos);
  }

  // What the threshold stands for: a false match per comparison, and over the app's gallery as it is now.
  function thresholdEstimate(app) {
    const rate = (value) => Number(value).toPrecision(2);
    const parts = [];
    if (app.galleryTemplates !== undefined) parts.push(`${app.galleryTemplates} templates`);
    if (app.estimatedFalseMatchRate !== undefined) parts.push(`false match ${rate(app.estimatedFalseMatchRate)} per comparison`);
    if (app.estimatedFalsePositiveIdentificationRate !== undefined) {
      parts.push(`a stranger identified as someone: ${rate(app.estimatedFalsePositiveIdentificationRate)} at this gallery size`);
    }
    return parts.join(" · ");
  }

  function formSettings() {
    return {
      modules: Object.fromEntries(MODULES.map(([name]) => [name, $(`set-module-${name}`).value])),
      matchThreshold: Number($("set-threshold").value),
      liveness: { faceLogin: $("set-liveness-login").value, kiosk: $("set-liveness-kiosk").value },
      quotas: { dailyCalls: Number($("set-daily-calls").value), gallerySize: Number($("set-gallery-size").value) },
      keepEnrollmentPhotos: $("set-keep-photos").checked,
    };
  }

  $("settings-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const app = selected;
    const after = formSettings();
    const lines = changes(settingsOf(app), after);
    const status = $("settings-status");
    if (lines.length === 0) { showStatus(status, "info", "Nothing changed."); return; }
    if (!await confirmAction(`Change the settings of ${app.name}?`, lines, "Change settings")) {
      fillSettings(app);
      showStatus(status, "info", "Not changed.");
      return;
    }
    try {
      const body = { ...after };
      if (Math.abs(after.matchThreshold - Number(app.matchThreshold)) <= 1e-6) delete body.matchThreshold;
      selected = await api("PATCH", `/v1/apps/${app.appId}`, { json: body });
      fillSettings(selected);
      const index = apps.findIndex((candidate) => candidate.appId === app.appId);
      if (index >= 0) apps[index] = selected;
      showStatus(status, "ok", `Changed: ${lines.join("; ")}.`);
    } catch (error) {
      fillSettings(app);
      showStatus(status, "bad", errorText(error));
    }
  });

  // --- Secret ---------------------------------------------------------------------------------------------------------
  $("secret-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const app = selected;
    const grace = Number($("secret-grace").value);
    const lines = [grace > 0 ? `The current secret keeps minting access tokens for ${grace} s, then stops.` : "The current secret stops now.",
      "Every access token issued before now is refused."];
    if (!await confirmAction(`Rotate the secret of ${app.name}?`, lines, "Rotate secret")) return;
    try {
      const rotated = await api("POST", `/v1/apps/${app.appId}/secret`, { json: { previousSecretValidFor: grace } });
      $("secret-new").replaceChildren(el("p", { class: "secret" }, "New app secret (shown only now): ",
        el("code", { id: "rotated-app-secret", text: rotated.appSecret })));
      showStatus($("secret-status"), "ok", `Secret rotated; the previous one works for ${rotated.previousSecretValidForSeconds} s.`);
    } catch (error) {
      showStatus($("secret-status"), "bad", errorText(error));
    }
  });

  $("secret-revoke-previous").addEventListener("click", async () => {
    const app = selected;
    if (!await confirmAction(`Stop the previous secret of ${app.name} now?`, ["It mints no more access tokens, and those it minted stop working."],
      "Stop previous secret")) return;
    try {
      await api("DELETE", `/v1/apps/${app.appId}/secret/previous`);
      showStatus($("secret-status"), "ok", "The previous secret no longer works.");
    } catch (error) {
      showStatus($("secret-status"), "bad", errorText(error));
    }
  });

  // --- Users and templates ------------------------------------------------------------------------------------------------
  async function loadUsers(more = false) {
    try {
      const page = await api("GET", `/v1/apps/${selected.appId}/users${query({ limit: 100, cursor: more ? usersCursor : null })}`);
      users = more ? users.concat(page.items) : page.items;
      usersCursor = page.nextCursor || null;
      renderUsers();
    } catch (error) {
      showStatus($("users-status"), "bad", errorText(error));
    }
  }

  /** Searching reads every page first: a match on page 40 is still found. */
  async function searchUsers() {
    while ($("users-search").value.trim() && usersCursor) await loadUsers(true);
    renderUsers();
  }

  function renderUsers() {
    const needle = $("users-search").value.trim().toLowerCase();
    const shown = needle ? users.filter((user) => user.name.toLowerCase().includes(needle) || user.employeeNumber.toLowerCase().includes(needle)) : users;
    const body = $("users-rows");
    body.replaceChildren();
    for (const user of shown) {
      const show = el("button", { type: "button", class: "secondary", "aria-label": `Templates of ${user.name}`, "data-action": "templates", text: "Templates" });
      show.addEventListener("click", () => showFaces(user));
      const remove = el("button", { type: "button", class: "danger", "aria-label": `Delete ${user.name}`, "data-action": "delete", text: "Delete" });
      remove.addEventListener("click", () => deleteUser(user));
      body.append(el("tr", { "data-user-id": user.userId },
        el("td", { class: "mono", text: user.employeeNumber }), el("td", { text: user.name }),
        el("td", { "data-field": "faces", text: user.faces }), el("td", {}, show, " ", remove)));
    }
    if (shown.length === 0) body.append(el("tr", {}, el("td", { colspan: 4, text: needle ? "No user matches." : "No users yet." })));
    $("users-more").hidden = !usersCursor || Boolean(needle);
    const select = $("enroll-user");
    const current = select.value;
    select.replaceChildren(...users.map((user) => el("option", { value: user.userId, text: `${user.name} (${user.employeeNumber})`, selected: user.userId === current })));
  }

  async function showFaces(user) {
    const target = $("faces-detail");
    target.replaceChildren(el("p", { text: `Loading the templates of ${user.name}…` }));
    try {
      const faces = (await api("GET", `/v1/apps/${selected.appId}/users/${user.userId}/faces`)).items;
      target.replaceChildren(el("h3", { text: `Templates of ${user.name}` }));
      if (faces.length === 0) target.append(el("p", { text: "No face enrolled." }));
      for (const face of faces) {
        const remove = el("button", { type: "button", class: "danger", "aria-label": `Delete template ${face.templateId}`, text: "Delete template" });
        remove.addEventListener("click", () => deleteFace(user, face));
        target.append(el("div", { class: "template", "data-template-id": face.templateId },
          el("p", {}, "Template ", el("code", { text: face.templateId }), ` (${face.model}) enrolled ${formatTime(face.createdAt)} `, remove),
          qualityGrid(face.quality)));
      }
    } catch (error) {
      target.replaceChildren(el("p", { class: "status bad", text: errorText(error) }));
    }
  }

  async function deleteFace(user, face) {
    if (!await confirmAction(`Delete a template of ${user.name}?`, [`Template ${face.templateId} is erased and leaves every matcher.`],
      "Delete template")) return;
    try {
      await api("DELETE", `/v1/apps/${selected.appId}/users/${user.userId}/faces/${face.templateId}`);
      showStatus($("users-status"), "ok", `Template of ${user.name} deleted.`);
      await loadUsers();
      await showFaces(users.find((candidate) => candidate.userId === user.userId) || user);
    } catch (error) {
      showStatus($("users-status"), "bad", errorText(error));
    }
  }

  async function deleteUser(user) {
    if (!await confirmAction(`Delete ${user.name} (${user.employeeNumber})?`,
      ["Their templates, bound devices and device credentials are erased; the audit trail keeps its rows."], "Delete user")) return;
    try {
      await api("DELETE", `/v1/apps/${selected.appId}/users/${user.userId}`);
      $("faces-detail").replaceChildren();
      showStatus($("users-status"), "ok", `User ${user.name} deleted.`);
      await loadUsers();
    } catch (error) {
      showStatus($("users-status"), "bad", errorText(error));
    }
  }

  $("users-more").addEventListener("click", () => loadUsers(true));
  $("users-search").addEventListener("input", () => searchUsers());
  $("users-filter").addEventListener("submit", (event) => { event.preventDefault(); searchUsers(); });
  $("apps-filter").addEventListener("submit", (event) => event.preventDefault());

  $("user-create").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    try {
      const created = await api("POST", `/v1/apps/${selected.appId}/users`, { json: { employeeNumber: $("user-number").value, name: $("user-name").value } });
      form.reset();
      showStatus($("users-status"), "ok", `User ${created.name} added.`);
      await loadUsers();
    } catch (error) {
      showStatus($("users-status"), "bad", errorText(error));
    }
  });

  $("enroll-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = $("enroll-photo").files[0];
    const userId = $("enroll-user").value;
    const result = $("enroll-result");
    if (!file || !userId) return;
    $("enroll-submit").disabled = true;
    result.replaceChildren(el("p", { class: "status info", text: "Checking the photo…" }));
    try {
      const enrolled = await api("POST", `/v1/apps/${selected.appId}/users/${userId}/faces`, { body: file, contentType: file.type || "image/jpeg" });
      result.replaceChildren(el("div", { class: "status ok", id: "enroll-verdict", "data-verdict": "accepted" },
        el("strong", { text: "Accepted" }), " — template ", el("code", { text: enrolled.templateId })), qualityGrid(enrolled.quality));
      $("enroll-photo").value = "";
      await loadUsers();
    } catch (error) {
      result.replaceChildren(el("div", { class: "status bad", id: "enroll-verdict", "data-verdict": "rejected", "data-code": error.code || "" },
        el("strong", { text: "Rejected" }), ` — ${errorText(error)}`));
    } finally {
      $("enroll-submit").disabled = false;
    }
  });

  // --- A photo tested against the app's gallery (1:N at its operating point) ---------------------------------------------
  $("search-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = $("search-photo").files[0];
    const result = $("search-result");
    if (!file) return;
    $("search-submit").disabled = true;
    result.replaceChildren(el("p", { class: "status info", text: "Searching…" }));
    try {
      const found = await api("POST", `/v1/apps/${selected.appId}/faces/search${query({ limit: 5 })}`, { body: file, contentType: file.type || "image/jpeg" });
      const rows = (found.candidates || []).map((candidate) => {
        const user = users.find((known) => known.userId === candidate.userId);
        return el("tr", { "data-user-id": candidate.userId, "data-match": found.match?.userId === candidate.userId ? "true" : "false" },
          el("td", { class: "mono", text: candidate.employeeNumber }), el("td", { text: user ? user.name : "—" }),
          el("td", { text: Number(candidate.score).toFixed(3) }));
      });
      result.replaceChildren(
        el("p", { class: `status ${found.match ? "ok" : "info"}`, id: "search-outcome", "data-outcome": found.outcome },
          found.match ? `Match: ${found.match.employeeNumber} (distance ${Number(found.match.score).toFixed(3)}, threshold ${found.threshold})`
            : `No match at the threshold ${found.threshold}.`),
        el("table", {}, el("caption", { text: "Closest candidates (distance: lower is closer)" }),
          el("thead", {}, el("tr", {}, el("th", { scope: "col", text: "Employee no." }), el("th", { scope: "col", text: "Name" }),
            el("th", { scope: "col", text: "Distance" }))),
          el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: 3, text: "No candidates." })))));
    } catch (error) {
      result.replaceChildren(el("p", { class: "status bad", id: "search-outcome", "data-code": error.code || "", text: errorText(error) }));
    } finally {
      $("search-submit").disabled = false;
    }
  });

  $("reset-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const device = $("reset-device").value.trim();
    try {
      await api("POST", `/v1/apps/${selected.appId}/devices/${encodeURIComponent(device)}/reset`);
      showStatus($("reset-status"), "ok", `Device ${device} reset: its failed attempts and lock are cleared.`);
    } catch (error) {
      showStatus($("reset-status"), "bad", errorText(error));
    }
  });

  $("token-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const secret = $("token-secret").value;
    try {
      const basic = btoa(`${selected.appId}:${secret}`);
      const token = await api("POST", "/v1/access-tokens", { key: null, headers: { Authorization: `Basic ${basic}` } });
      $("token-secret").value = "";
      $("token-value").value = token.accessToken;
      $("token-output").hidden = false;
      sessionStorage.setItem(KIOSK_TOKEN_KEY, token.accessToken);
      showStatus($("token-status"), "ok", `Access token issued; valid for ${Math.round(token.expiresIn / 60)} minutes.`);
    } catch (error) {
      showStatus($("token-status"), "bad", errorText(error));
    }
  });

  // --- Deleting the app: its name typed, then confirmed ---------------------------------------------------------------
  $("delete-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const app = selected;
    if ($("delete-confirm-name").value !== app.name) {
      showStatus($("delete-status"), "bad", `Type the app's name, ${app.name}, to delete it.`);
      return;
    }
    if (!await confirmAction(`Delete ${app.name} and all its data?`,
      ["Users, templates, devices, kiosks and CTID rows are erased for good.", "The audit trail stays, readable by its auditors."], "Delete app")) return;
    try {
      await api("DELETE", `/v1/apps/${app.appId}`);
      apps = apps.filter((candidate) => candidate.appId !== app.appId);
      location.hash = "#operator";
      showStatus($("apps-status"), "ok", `App ${app.name} deleted; its audit trail stays.`);
    } catch (error) {
      showStatus($("delete-status"), "bad", errorText(error));
    }
  });

  // --- Operator and auditor keys (a key covering every app) --------------------------------------------------------
  async function loadKeys() {
    const panel = $("keys-panel");
    try {
      const [operators, auditors] = await Promise.all([api("GET", "/v1/operator-keys"), api("GET", "/v1/auditors")]);
      panel.hidden = false;
      const body = $("keys-rows");
      body.replaceChildren();
      const rows = [...operators.items.map((key) => ({ ...key, role: "operator", id: key.operatorKeyId })),
        ...auditors.items.map((key) => ({ ...key, role: "auditor", id: key.auditorId }))];
      for (const key of rows) {
        const state = key.revokedAt ? `revoked ${formatTime(key.revokedAt)}` : key.expiresAt ? `expires ${formatTime(key.expiresAt)}` : "live";
        const scope = !key.appIds ? "every app" : key.appIds.length === 0 ? "no app"
          : key.appIds.map((id) => apps.find((app) => app.appId === id)?.name || id).join(", ");
        const revoke = key.revokedAt ? null : el("button", { type: "button", class: "danger", "aria-label": `Revoke ${key.name}`, text: "Revoke" });
        revoke?.addEventListener("click", () => revokeKey(key));
        body.append(el("tr", { "data-key-id": key.id, "data-role": key.role, "data-state": key.revokedAt ? "revoked" : "live" },
          el("td", { text: key.role }), el("td", { text: key.name }), el("td", { class: "optional", text: scope }), el("td", { text: state }),
          el("td", {}, revoke)));
      }
      $("key-app").replaceChildren(el("option", { value: "", text: "every app" }),
        ...apps.map((app) => el("option", { value: app.appId, text: app.name })));
    } catch (error) {
      // A key limited to some apps manages no keys (403): the panel stays hidden.
      panel.hidden = !(error instanceof APIError) || error.status === 403;
      if (!panel.hidden) showStatus($("keys-status"), "bad", errorText(error));
    }
  }

  async function revokeKey(key) {
    if (!await confirmAction(`Revoke the ${key.role} key ${key.name}?`, ["It is refused from the next request on."], "Revoke key")) return;
    try {
      await api("DELETE", key.role === "operator" ? `/v1/operator-keys/${key.id}` : `/v1/auditors/${key.id}`);
      showStatus($("keys-status"), "ok", `Key ${key.name} revoked.`);
      await loadKeys();
    } catch (error) {
      showStatus($("keys-status"), "bad", errorText(error));
    }
  }

  $("key-create").addEventListener("submit", async (event) => {
    event.preventDefault();
    const role = $("key-role").value;
    const appId = $("key-app").value;
    const body = { name: $("key-name").value.trim() };
    if (appId) body.appIds = [appId];
    else if (role === "auditor") body.allApps = true;
    try {
      const created = await api("POST", role === "operator" ? "/v1/operator-keys" : "/v1/auditors", { json: body });
      const secret = created.operatorKey || created.auditorKey;
      $("key-name").value = "";
      const status = $("keys-status");
      status.className = "status ok";
      status.replaceChildren(`Key ${created.name} created. `,
        el("span", { class: "secret" }, "Key (shown only now): ", el("code", { id: "created-key", text: secret })));
      await loadKeys();
    } catch (error) {
      showStatus($("keys-status"), "bad", errorText(error));
    }
  });

  let loading = null;

  return {
    /**
     * `#operator` shows the apps; `#operator/app/<id>` the page of one app. The hash is read once the apps are loaded:
     * a navigation made meanwhile (a click on Open while the first load runs) wins over the one that started the load.
     */
    async route() {
      if (!activated) {
        activated = true;
        loading = (async () => { await loadApps(); await loadKeys(); })();
      }
      await loading;
      const match = /^#operator\/app\/([0-9a-f-]{36})$/.exec(location.hash);
      if (match) await openApp(match[1]);
      else {
        showList();
        renderApps();
      }
    },
    reset() {
      activated = false;
      loading = null;
      apps = [];
      appsPage = 0;
      selected = null;
      $("apps-search").value = "";
      $("users-search").value = "";
      users = [];
      $("apps-rows").replaceChildren();
      $("keys-rows").replaceChildren();
      showList();
      sessionStorage.removeItem(KIOSK_TOKEN_KEY);
    },
  };
}
