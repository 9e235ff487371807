// Sign-in and navigation between the auditor and operator views.
import { api, APIError, clearSession, saveSession, session, showStatus } from "./api.js";
import { initAuditor } from "./auditor.js";
import { initOperator } from "./operator.js";

const $ = (id) => document.getElementById(id);

/** What the key may do: an operator key lists apps, an auditor key reads the audit trail. */
async function detectRole(key) {
  try {
    await api("GET", "/v1/apps", { key });
    return "operator";
  } catch (error) {
    if (!(error instanceof APIError) || error.status !== 401) throw error;
  }
  await api("GET", "/v1/audit/transactions?limit=1", { key });
  return "auditor";
}

let auditor = null;
let operator = null;

function showView(name) {
  const current = session();
  if (!current) return;
  if (name === "operator" && current.role !== "operator") name = "auditor";
  $("auditor-view").hidden = name !== "auditor";
  $("operator-view").hidden = name !== "operator";
  for (const button of document.querySelectorAll("#views-nav button")) {
    if (button.dataset.view === name) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
  if (name === "auditor") {
    history.replaceState(null, "", "#auditor");
    auditor.activate();
  } else {
    // `#operator/app/<id>` is the page of one app: a link that can be kept, and Back returns to the list.
    if (!location.hash.startsWith("#operator")) history.replaceState(null, "", "#operator");
    operator.route();
  }
}

function renderSignedIn() {
  const current = session();
  const signedIn = Boolean(current);
  $("signin-view").hidden = signedIn;
  $("views-nav").hidden = !signedIn;
  $("who").hidden = !signedIn;
  if (!signedIn) {
    $("auditor-view").hidden = true;
    $("operator-view").hidden = true;
    $("signin-key").focus();
    return;
  }
  $("who-role").textContent = current.role === "operator" ? "operator" : "auditor";
  $("nav-operator").hidden = current.role !== "operator";
  showView(location.hash.startsWith("#operator") ? "operator" : "auditor");
}

document.addEventListener("DOMContentLoaded", () => {
  auditor = initAuditor();
  operator = initOperator();

  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = $("signin-key").value.trim();
    if (!key) return;
    $("signin-submit").disabled = true;
    showStatus($("signin-status"), "info", "Checking the key…");
    try {
      const role = await detectRole(key);
      saveSession({ key, role });
      $("signin-key").value = "";
      showStatus($("signin-status"), "ok", "");
      renderSignedIn();
      $("main").focus();
    } catch (error) {
      const text = error instanceof APIError && error.status === 401 ? "This key was not accepted." : (error.text || String(error));
      showStatus($("signin-status"), "bad", text);
    } finally {
      $("signin-submit").disabled = false;
    }
  });

  $("signout").addEventListener("click", () => {
    clearSession();
    auditor.reset();
    operator.reset();
    history.replaceState(null, "", location.pathname);
    renderSignedIn();
  });

  for (const button of document.querySelectorAll("#views-nav button")) {
    button.addEventListener("click", () => {
      if (button.dataset.view === "operator") history.replaceState(null, "", "#operator");
      showView(button.dataset.view);
    });
  }
  window.addEventListener("hashchange", () => { if (session()) showView(location.hash.startsWith("#operator") ? "operator" : "auditor"); });
  renderSignedIn();
});
