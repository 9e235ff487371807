// Operator view (admin key): apps and their module states, users with the quality of their templates,
// enrollment from a photo, device resets and a demo access token for the kiosk page.
import { api, APIError, el, formatTime, query, showStatus } from "./api.js";

const $ = (id) => document.getElementById(id);
const MODULES = [["faceLogin", "Face login"], ["ctid", "CTID"], ["kiosk", "Kiosk"], ["deviceAuth", "Device auth"]];
const STATES = ["disabled", "trial", "formal"];
export const KIOSK_TOKEN_KEY = "facegate.kiosk.token";

function errorText(error) { return error instanceof APIError ? error.text : String(error); }

function qualityGrid(quality) {
  return el("div", { class: "quality" },
    el("div", {}, el("b", { text: "Face width" }), `${quality.faceWidth} px`),
    el("div", {}, el("b", { text: "Sharpness" }), Number(quality.sharpness).toFixed(1)),
    el("div", {}, el("b", { text: "Brightness" }), Number(quality.brightness).toFixed(1)),
    el("div", {}, el("b", { text: "Yaw" }), `${Number(quality.yaw).toFixed(1)}°`));
}

export function initOperator() {
  let apps = [];
  let selected = null;
  let users = [];
  let usersCursor = null;
  let activated = false;

  async function loadApps() {
    try {
      apps = (await api("GET", "/v1/apps")).items;
      renderApps();
    } catch (error) {
      showStatus($("apps-status"), "bad", errorText(error));
    }
  }

  function renderApps() {
    const body = $("apps-rows");
    body.replaceChildren();
    for (const app of apps) {
      const modules = el("div", { class: "module-grid" });
      for (const [name, label] of MODULES) {
        const id = `module-${app.appId}-${name}`;
        const select = el("select", { id, "data-module": name, "data-app-id": app.appId },
          STATES.map((state) => el("option", { value: state, text: state, selected: app.modules[name] === state })));
        select.addEventListener("change", () => setModule(app, name, label, select));
        modules.append(el("label", { for: id }, label, select));
      }
      const open = el("button", { type: "button", class: "secondary", "aria-label": `Open ${app.name}`, text: selected?.appId === app.appId ? "Opened" : "Open",
        "aria-pressed": selected?.appId === app.appId ? "true" : "false" });
      open.addEventListener("click", () => openApp(app));
      // Header mode: the device is whatever X-Device-Id a caller sends, so say so next to the app.
      const binding = app.deviceBinding === "header"
        ? el("p", { class: "binding-warning", role: "note", "data-binding": "header",
          text: "Devices are identified by the X-Device-Id header, which any caller can set. Bind devices by key: facegate app binding APP_ID dpop." })
        : el("p", { class: "hint", "data-binding": app.deviceBinding || "", text: `Devices bound by key (${app.deviceBindingPolicy || "?"}).` });
      body.append(el("tr", { "data-app-id": app.appId },
        el("td", {}, el("strong", { text: app.name }), el("br"), el("code", { text: app.appId }), binding),
        el("td", {}, modules), el("td", {}, open)));
    }
  }

  async function setModule(app, name, label, select) {
    const previous = app.modules[name];
    select.disabled = true;
    try {
      const updated = await api("PATCH", `/v1/apps/${app.appId}`, { json: { modules: { [name]: select.value } } });
      Object.assign(app, updated);
      showStatus($("apps-status"), "ok", `${label} of ${app.name} is now ${updated.modules[name]}.`);
    } catch (error) {
      select.value = previous;
      showStatus($("apps-status"), "bad", errorText(error));
    } finally {
      select.disabled = false;
      select.focus();
    }
  }

  async function openApp(app) {
    selected = app;
    renderApps();
    $("app-detail").hidden = false;
    $("users-title").textContent = `Users of ${app.name}`;
    $("faces-detail").replaceChildren();
    $("enroll-result").replaceChildren();
    showStatus($("users-status"), "info", "");
    users = [];
    usersCursor = null;
    await loadUsers();
  }

  async function loadUsers(more = false) {
    try {
      const page = await api("GET", `/v1/apps/${selected.appId}/users${query({ limit: 50, cursor: more ? usersCursor : null })}`);
      users = more ? users.concat(page.items) : page.items;
      usersCursor = page.nextCursor || null;
      renderUsers();
    } catch (error) {
      showStatus($("users-status"), "bad", errorText(error));
    }
  }

  function renderUsers() {
    const body = $("users-rows");
    body.replaceChildren();
    for (const user of users) {
      const show = el("button", { type: "button", class: "secondary", "aria-label": `Template quality of ${user.name}`, text: "Quality" });
      show.addEventListener("click", () => showFaces(user));
      body.append(el("tr", { "data-user-id": user.userId },
        el("td", { class: "mono", text: user.employeeNumber }), el("td", { text: user.name }),
        el("td", { "data-field": "faces", text: user.faces }), el("td", {}, show)));
    }
    if (users.length === 0) body.append(el("tr", {}, el("td", { colspan: 4, text: "No users yet." })));
    $("users-more").hidden = !usersCursor;
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
        target.append(el("div", { class: "template", "data-template-id": face.templateId },
          el("p", {}, "Template ", el("code", { text: face.templateId }), ` enrolled ${formatTime(face.createdAt)}`), qualityGrid(face.quality)));
      }
    } catch (error) {
      target.replaceChildren(el("p", { class: "status bad", text: errorText(error) }));
    }
  }

  $("users-more").addEventListener("click", () => loadUsers(true));

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

  return {
    async activate() {
      if (activated) return;
      activated = true;
      await loadApps();
    },
    reset() {
      activated = false;
      apps = [];
      selected = null;
      users = [];
      $("apps-rows").replaceChildren();
      $("app-detail").hidden = true;
      sessionStorage.removeItem(KIOSK_TOKEN_KEY);
    },
  };
}
