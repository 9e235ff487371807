// The console's only way to the server: the public API of this origin, with the key the person signed in with.
// The key lives in sessionStorage (gone when the tab closes) and is sent as a Bearer credential, never in a URL.

const SESSION_KEY = "facegate.console.session";

export function session() {
  try {
    const value = JSON.parse(sessionStorage.getItem(SESSION_KEY) || "null");
    return value && typeof value.key === "string" ? value : null;
  } catch {
    return null;
  }
}

export function saveSession(value) { sessionStorage.setItem(SESSION_KEY, JSON.stringify(value)); }
export function clearSession() { sessionStorage.removeItem(SESSION_KEY); }

/** An API failure: the wire's error code, message and transaction id, with the HTTP status. */
export class APIError extends Error {
  constructor(status, code, message, transactionId) {
    super(message);
    this.status = status;
    this.code = code;
    this.transactionId = transactionId || null;
  }
  get text() { return `${this.code}: ${this.message}`; }
}

/**
 * Calls the API. `options.key` overrides the signed-in key; `options.headers` are added; `options.json` is sent as
 * JSON; `options.body` is sent as is (with `options.contentType`). Answers the parsed JSON (null for 204), or the
 * Response itself with `options.raw`.
 */
export async function api(method, path, options = {}) {
  const headers = new Headers(options.headers || {});
  const key = options.key !== undefined ? options.key : session()?.key;
  if (key && !headers.has("Authorization")) headers.set("Authorization", `Bearer ${key}`);
  let body = options.body;
  if (options.json !== undefined) {
    headers.set("Content-Type", "application/json");
    body = JSON.stringify(options.json);
  } else if (options.contentType) {
    headers.set("Content-Type", options.contentType);
  }
  let response;
  try {
    response = await fetch(path, { method, headers, body, credentials: "omit", cache: "no-store" });
  } catch (error) {
    throw new APIError(0, "NETWORK", `the server could not be reached (${error.message})`);
  }
  if (!response.ok) {
    let code = `HTTP_${response.status}`;
    let message = response.statusText || "request failed";
    let transactionId = null;
    try {
      const payload = await response.json();
      if (payload && payload.error) {
        code = payload.error.code || code;
        message = payload.error.message || message;
        transactionId = payload.error.transactionId || null;
      }
    } catch { /* not JSON */ }
    throw new APIError(response.status, code, message, transactionId);
  }
  if (options.raw) return response;
  if (response.status === 204) return null;
  const type = response.headers.get("Content-Type") || "";
  return type.includes("application/json") ? response.json() : response.text();
}

/** A query string from the non-empty values of `params`. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && String(value).trim() !== "") search.set(name, String(value).trim());
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** Small DOM builder: el("td", {class: "x", text: "y"}, child, ...). Text is always set as text, never as HTML. */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name === "class") node.className = value;
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Shows a message in a status element (role=status/alert set in the markup). */
export function showStatus(element, kind, message) {
  element.className = `status ${kind}`;
  element.textContent = message;
}

export function formatTime(value) {
  if (!value) return "";
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

/** `datetime-local` input value, read as UTC like every time the console shows → RFC 3339, or "" when empty. */
export function utcInputToRFC3339(value) {
  if (!value) return "";
  const date = new Date(`${value.length === 16 ? `${value}:00` : value}Z`);
  return Number.isNaN(date.getTime()) ? "" : date.toISOString();
}

/**
 * Asks before a change that cannot be taken back or that production feels at once: a modal dialog listing what will
 * happen. Resolves true only when the person confirms; Escape and Cancel resolve false.
 */
export function confirmAction(title, lines, confirmLabel) {
  const dialog = document.getElementById("confirm-dialog");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-body").replaceChildren(el("ul", {}, lines.map((line) => el("li", { text: line }))));
  const ok = document.getElementById("confirm-ok");
  ok.textContent = confirmLabel;
  return new Promise((resolve) => {
    const opener = document.activeElement;
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "confirm");
      if (opener && document.contains(opener)) opener.focus();
    }, { once: true });
    dialog.returnValue = "";
    dialog.showModal();
    document.getElementById("confirm-cancel").focus();
  });
}

/** Saves bytes as a file the browser downloads. */
export function download(blob, filename) {
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
