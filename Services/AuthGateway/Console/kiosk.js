// Kiosk demo: a liveness challenge shown as prompts, answered by camera frames (or image files acting it out) sent to
// POST /v1/kiosk/login; an unknown face is onboarded (selfie, ID front, ID back) with the session's step events
// streamed live from GET /v1/kiosk/sessions/{id}/events. A kiosk is a registered device: this page signs every call
// with its own DPoP key (kept in this browser), whose thumbprint an operator registers for the app.
import { api, APIError, el, showStatus } from "./api.js";
import { deviceKey, multipart, proof } from "./dpop.js";

const $ = (id) => document.getElementById(id);
const KIOSK_TOKEN_KEY = "facegate.kiosk.token";
const PROMPTS = { BLINK: "Blink", TURN_LEFT: "Turn your head to the left", TURN_RIGHT: "Turn your head to the right" };
const EVENTS = ["selfieScanCompleted", "idFrontCompleted", "idBackCompleted", "idProcessed", "faceMatchCompleted",
  "kioskFlowCompleted", "kioskError", "userCancelledSession"];
const TERMINAL_STATES = new Set(["completed", "failed", "cancelled", "expired"]);
const FRAME_COUNT = { min: 2, max: 12 };

let token = "";
let key = null; // this kiosk's DPoP key: {pair, jwk, thumbprint}
let stream = null;
let interview = null; // {interviewId, interviewToken, lastEventId}
let events = null; // EventSource of the current session
let pendingFiles = null; // {resolve, reject} while the page waits for image files answering a challenge

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const errorText = (error) => (error instanceof APIError ? error.text : String(error.message || error));
const usingFiles = () => $("source-files").checked;

/**
 * A kiosk call: the access token, and a DPoP proof by this kiosk's key over the method, the URL, the token and the
 * exact body. `body` is `{body, contentType}` (bytes) or nothing; `headers` are added.
 */
async function kioskCall(method, path, { headers = {}, body } = {}) {
  const signed = { Authorization: `Bearer ${token}`, ...headers };
  signed.DPoP = await proof(key, method, location.origin + path, token, body?.body);
  return api(method, path, { key: null, headers: signed, body: body?.body, contentType: body?.contentType });
}

function setPrompt(text) { $("kiosk-prompt").textContent = text; }

function busy(on) {
  for (const id of ["kiosk-login", "kiosk-selfie", "kiosk-id-front-capture", "kiosk-id-back-capture"]) $(id).disabled = on || !token;
  for (const id of ["kiosk-id-front-capture", "kiosk-id-back-capture"]) if (!stream) $(id).disabled = true;
}

async function setUp(event) {
  event.preventDefault();
  token = $("kiosk-token").value.trim();
  const status = $("kiosk-setup-status");
  busy(false);
  if (!navigator.mediaDevices?.getUserMedia) {
    showStatus(status, "bad", "This browser offers no camera to this page (a secure context is required); use image files as frames.");
    $("source-files").checked = true;
    return;
  }
  showStatus(status, "info", "Asking for the camera…");
  try {
    stream?.getTracks().forEach((track) => track.stop());
    stream = await navigator.mediaDevices.getUserMedia({ video: { width: { ideal: 640 }, height: { ideal: 480 } }, audio: false });
    const video = $("kiosk-video");
    video.srcObject = stream;
    await video.play().catch(() => {});
    showStatus(status, "ok", "Camera ready.");
    busy(false);
    $("kiosk-login").focus();
  } catch (error) {
    stream = null;
    $("source-files").checked = true;
    showStatus(status, "bad", `The camera is not available (${error.name || error}); use image files as frames.`);
  }
}

/** One JPEG of the current camera picture. */
async function captureFrame() {
  const video = $("kiosk-video");
  if (!stream || !video.videoWidth) throw new Error("the camera is not running: start it, or use image files as frames");
  const canvas = document.createElement("canvas");
  canvas.width = video.videoWidth;
  canvas.height = video.videoHeight;
  canvas.getContext("2d").drawImage(video, 0, 0, canvas.width, canvas.height);
  return new Promise((resolve, reject) => canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error("no frame"))), "image/jpeg", 0.9));
}

/** Captures frames from the camera while the person performs each action, prompting for it on the picture. */
async function cameraFrames(actions) {
  const list = $("kiosk-challenge");
  const frames = [];
  setPrompt("Look at the camera");
  await sleep(500);
  frames.push(await captureFrame());
  for (const [index, action] of actions.entries()) {
    const item = list.children[index];
    item.setAttribute("aria-current", "step");
    setPrompt(PROMPTS[action] || action);
    for (let shot = 0; shot < 2 && frames.length < FRAME_COUNT.max; shot += 1) {
      await sleep(450);
      frames.push(await captureFrame());
    }
    item.removeAttribute("aria-current");
    item.classList.add("done");
  }
  setPrompt("");
  return frames;
}

/** Waits for the person to choose image files acting out `actions`; answers them in file-name order. */
function fileFrames(actions) {
  const input = $("kiosk-frame-files");
  input.value = "";
  input.disabled = false;
  input.focus();
  const asked = actions.map((action) => PROMPTS[action] || action).join(", then ");
  showStatus($("kiosk-status"), "info", `Choose ${FRAME_COUNT.min}–${FRAME_COUNT.max} image files that act out: ${asked}.`);
  return new Promise((resolve, reject) => { pendingFiles = { resolve, reject }; }).finally(() => {
    pendingFiles = null;
    input.disabled = true;
  });
}

function filesChosen(event) {
  if (!pendingFiles) return;
  const files = [...event.target.files].sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
  if (files.length < FRAME_COUNT.min || files.length > FRAME_COUNT.max) {
    showStatus($("kiosk-status"), "bad", `Choose ${FRAME_COUNT.min}–${FRAME_COUNT.max} files; got ${files.length}.`);
    event.target.value = "";
    return;
  }
  for (const item of $("kiosk-challenge").children) item.classList.add("done");
  pendingFiles.resolve(files);
}

/** Gets a challenge, shows its actions, and answers the frames that perform them (camera or files). */
async function performChallenge() {
  const challenge = await kioskCall("GET", "/v1/liveness/challenges");
  $("kiosk-challenge").replaceChildren(...challenge.actions.map((action) => el("li", { "data-action": action, text: PROMPTS[action] || action })));
  const frames = usingFiles() ? await fileFrames(challenge.actions) : await cameraFrames(challenge.actions);
  return { challengeId: challenge.challengeId, frames };
}

function framesForm(challengeId, frames) {
  return multipart([["challengeId", challengeId], ...frames.map((frame, index) => ["frame", frame.name ? frame : new File([frame], `frame-${index}.jpg`, { type: "image/jpeg" })])]);
}

function logEvent(name, data, seq) {
  const text = `${name}: ${JSON.stringify(data)}`;
  $("kiosk-events").append(el("li", { "data-event": name, "data-seq": seq, "data-source": "stream", text }));
}

/** The final answer: `outcome` is ok, bad or spoof (shown as bad), `code` the API's code when there is one. */
function showResult(outcome, message, code) {
  const kind = outcome === "ok" ? "ok" : "bad";
  $("kiosk-result").replaceChildren(el("div", { class: `status ${kind}`, id: "kiosk-final", "data-outcome": outcome, "data-code": code, text: message }));
}

async function login() {
  busy(true);
  const status = $("kiosk-status");
  $("kiosk-result").replaceChildren();
  try {
    const { challengeId, frames } = await performChallenge();
    showStatus(status, "info", "Checking…");
    const answer = await kioskCall("POST", "/v1/kiosk/login", { body: await framesForm(challengeId, frames) });
    if (answer.success) {
      showStatus(status, "ok", "Recognised.");
      showResult("ok", `Welcome${answer.firstName ? `, ${answer.firstName}` : ""}. Customer ${answer.customerUUID}.`, "SUCCESS");
      $("kiosk-final").dataset.customer = answer.customerUUID;
    } else if (answer.error === "NO_MATCH_FACE") {
      showStatus(status, "info", "We do not know you yet: let us onboard you.");
      await startOnboarding();
    } else if (answer.spoofAttempt) {
      showStatus(status, "bad", "The liveness check failed.");
      showResult("spoof", "Spoof suspected: the frames did not show a live person doing the asked actions. Please try again and follow the prompts.", answer.error);
    } else {
      showStatus(status, "bad", `Login failed: ${answer.error}`);
      showResult("bad", `Not logged in: ${answer.error}.`, answer.error);
    }
  } catch (error) {
    showStatus(status, "bad", errorText(error));
  } finally {
    setPrompt("");
    busy(false);
  }
}

function renderState(state) {
  const order = ["selfie", "idFront", "idBack", "completed"];
  const current = TERMINAL_STATES.has(state) ? 3 : order.indexOf(state);
  for (const item of document.querySelectorAll("#kiosk-steps li")) {
    const position = order.indexOf(item.dataset.step);
    item.className = position < current ? "done" : position === current ? "current" : "";
  }
  $("kiosk-steps").dataset.state = state;
  for (const step of ["selfie", "idFront", "idBack"]) $(`step-${step}`).hidden = step !== state;
  $("kiosk-cancel").hidden = TERMINAL_STATES.has(state);
}

function finishStream() {
  events?.close();
  events = null;
}

async function startOnboarding() {
  const session = await kioskCall("POST", "/v1/kiosk/sessions");
  interview = { interviewId: session.interviewId, interviewToken: session.interviewToken, lastEventId: "0" };
  $("onboarding").hidden = false;
  $("kiosk-events").replaceChildren();
  renderState("selfie");
  finishStream();
  await openStream(interview);
  $("kiosk-selfie").focus();
}

/**
 * EventSource cannot send the interview token as a header, and tokens never travel in a URL: each connection
 * spends a single-use ticket from POST …/event-tickets. A dropped stream is reopened with a new ticket, from
 * the last event seen.
 */
async function openStream(current) {
  const path = `/v1/kiosk/sessions/${encodeURIComponent(current.interviewId)}`;
  const { ticket } = await kioskCall("POST", `${path}/event-tickets`, { headers: interviewHeaders() });
  if (interview !== current) return;
  const source = new EventSource(`${path}/events?ticket=${encodeURIComponent(ticket)}&lastEventId=${encodeURIComponent(current.lastEventId)}`);
  events = source;
  source.onerror = () => {
    if (events !== source || source.readyState !== EventSource.CLOSED) return;
    events = null;
    setTimeout(() => { if (interview === current && events === null) openStream(current).catch(() => {}); }, 1000);
  };
  for (const name of EVENTS) {
    source.addEventListener(name, (message) => {
      let data = {};
      try { data = JSON.parse(message.data); } catch { /* keep {} */ }
      current.lastEventId = message.lastEventId || current.lastEventId;
      logEvent(name, data, message.lastEventId);
      if (name === "kioskFlowCompleted") {
        showResult(data.success ? "ok" : "bad", data.success ? `Onboarded ${data.name || ""} — customer ${data.customerUUID}.` : "Onboarding did not complete.", data.error);
        renderState(data.success ? "completed" : "failed");
        finishStream();
      } else if (name === "userCancelledSession") {
        showResult("bad", "Onboarding cancelled.", "CANCELLED");
        renderState("cancelled");
        finishStream();
      } else if (name === "kioskError" && ["SESSION_EXPIRED", "TOO_MANY_ATTEMPTS"].includes(data.code)) {
        showResult("bad", `Onboarding ended: ${data.code}.`, data.code);
        renderState(data.code === "SESSION_EXPIRED" ? "expired" : "failed");
        finishStream();
      }
    });
  }
}

function interviewHeaders() { return { "X-Interview-Token": interview.interviewToken }; }

/** A step's answer: the session after it, and the events this call produced ({seq, event, data, at}). */
function afterStep(answer) {
  renderState(answer.state);
  const failed = (answer.events || []).find((item) => item.data?.success === false || item.event === "kioskError");
  if (failed) {
    const data = failed.data || {};
    showStatus($("kiosk-status"), "bad", `${failed.event}: ${data.error || data.code || "failed"}${data.message ? ` — ${data.message}` : ""}`);
  } else {
    showStatus($("kiosk-status"), "ok", TERMINAL_STATES.has(answer.state) ? `Onboarding ${answer.state}.` : `Step done; next: ${answer.state}.`);
  }
  if (TERMINAL_STATES.has(answer.state) && answer.result) {
    const result = answer.result;
    showResult(result.success ? "ok" : "bad", result.success ? `Onboarded ${result.name || ""} — customer ${result.customerUUID}.` : "Onboarding failed.");
  }
}

async function selfie() {
  busy(true);
  try {
    const { challengeId, frames } = await performChallenge();
    showStatus($("kiosk-status"), "info", "Checking the selfie…");
    afterStep(await kioskCall("POST", `/v1/kiosk/sessions/${interview.interviewId}/selfie`, { headers: interviewHeaders(), body: await framesForm(challengeId, frames) }));
  } catch (error) {
    showStatus($("kiosk-status"), "bad", errorText(error));
  } finally {
    setPrompt("");
    busy(false);
  }
}

async function documentSide(side, source) {
  busy(true);
  try {
    const blob = await source();
    showStatus($("kiosk-status"), "info", "Reading the document…");
    const body = { body: new Uint8Array(await blob.arrayBuffer()), contentType: blob.type || "image/jpeg" };
    afterStep(await kioskCall("POST", `/v1/kiosk/sessions/${interview.interviewId}/${side}`, { headers: interviewHeaders(), body }));
  } catch (error) {
    showStatus($("kiosk-status"), "bad", errorText(error));
  } finally {
    busy(false);
  }
}

function documentFile(side) {
  return (event) => {
    const file = event.target.files[0];
    event.target.value = "";
    if (file) documentSide(side, async () => file);
  };
}

async function cancel() {
  if (!interview) return;
  pendingFiles?.reject(new Error("cancelled"));
  try {
    await kioskCall("DELETE", `/v1/kiosk/sessions/${interview.interviewId}`, { headers: interviewHeaders() });
    showStatus($("kiosk-status"), "info", "Onboarding cancelled.");
    renderState("cancelled");
  } catch (error) {
    showStatus($("kiosk-status"), "bad", errorText(error));
  }
}

document.addEventListener("DOMContentLoaded", async () => {
  $("kiosk-token").value = sessionStorage.getItem(KIOSK_TOKEN_KEY) || "";
  $("kiosk-setup").addEventListener("submit", setUp);
  $("kiosk-login").addEventListener("click", login);
  $("kiosk-selfie").addEventListener("click", selfie);
  $("kiosk-frame-files").addEventListener("change", filesChosen);
  $("source-camera").addEventListener("change", () => pendingFiles?.reject(new Error("switched to the camera: start again")));
  $("kiosk-id-front-capture").addEventListener("click", () => documentSide("id-front", captureFrame));
  $("kiosk-id-back-capture").addEventListener("click", () => documentSide("id-back", captureFrame));
  $("kiosk-id-front-file").addEventListener("change", documentFile("id-front"));
  $("kiosk-id-back-file").addEventListener("change", documentFile("id-back"));
  $("kiosk-cancel").addEventListener("click", cancel);
  try {
    key = await deviceKey("kiosk");
    $("kiosk-jkt").value = key.thumbprint;
  } catch (error) {
    showStatus($("kiosk-setup-status"), "bad", `This browser cannot keep a device key here (${error.name || error}): kiosk calls need one.`);
  }
});
