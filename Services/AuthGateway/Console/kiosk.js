// Kiosk demo: camera → liveness challenge shown as prompts → frames to POST /v1/kiosk/login; an unknown face
// goes through onboarding (selfie, ID front, ID back) with the session's step events streamed live.
import { api, APIError, el, showStatus } from "./api.js";

const $ = (id) => document.getElementById(id);
const KIOSK_TOKEN_KEY = "facegate.kiosk.token";
const PROMPTS = { BLINK: "Blink", TURN_LEFT: "Turn your head to the left", TURN_RIGHT: "Turn your head to the right" };
const EVENTS = ["selfieScanCompleted", "idFrontCompleted", "idBackCompleted", "idProcessed", "faceMatchCompleted",
  "kioskFlowCompleted", "kioskError", "userCancelledSession"];
const TERMINAL_STATES = new Set(["completed", "failed", "cancelled", "expired"]);

let token = "";
let device = "";
let stream = null;
let interview = null; // {interviewId, interviewToken}
let events = null; // EventSource of the current session

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const errorText = (error) => (error instanceof APIError ? error.text : String(error));

function clientHeaders(extra = {}) {
  return { Authorization: `Bearer ${token}`, "X-Device-Id": device, ...extra };
}

function setPrompt(text) { $("kiosk-prompt").textContent = text; }

function busy(on) {
  for (const id of ["kiosk-login", "kiosk-selfie", "kiosk-id-front-capture", "kiosk-id-back-capture"]) $(id).disabled = on;
}

async function startCamera(event) {
  event.preventDefault();
  token = $("kiosk-token").value.trim();
  device = $("kiosk-device").value.trim();
  const status = $("kiosk-setup-status");
  if (!navigator.mediaDevices?.getUserMedia) {
    showStatus(status, "bad", "This browser offers no camera to this page (a secure context is required).");
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
    $("kiosk-login").disabled = false;
    $("kiosk-login").focus();
  } catch (error) {
    showStatus(status, "bad", `The camera is not available: ${error.name || error}`);
  }
}

/** One JPEG of the current camera picture. */
async function captureFrame() {
  const video = $("kiosk-video");
  const canvas = document.createElement("canvas");
  canvas.width = video.videoWidth || 640;
  canvas.height = video.videoHeight || 480;
  canvas.getContext("2d").drawImage(video, 0, 0, canvas.width, canvas.height);
  return new Promise((resolve, reject) => canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error("no frame"))), "image/jpeg", 0.9));
}

/** Gets a challenge, shows each action as a prompt and captures frames while the person performs it. */
async function performChallenge() {
  const challenge = await api("GET", "/v1/liveness/challenges", { key: null, headers: clientHeaders() });
  const list = $("kiosk-challenge");
  list.replaceChildren(...challenge.actions.map((action) => el("li", { "data-action": action, text: PROMPTS[action] || action })));
  const frames = [];
  setPrompt("Look at the camera");
  await sleep(500);
  frames.push(await captureFrame());
  for (const [index, action] of challenge.actions.entries()) {
    const item = list.children[index];
    item.setAttribute("aria-current", "step");
    setPrompt(PROMPTS[action] || action);
    for (let shot = 0; shot < 2 && frames.length < 12; shot += 1) {
      await sleep(450);
      frames.push(await captureFrame());
    }
    item.removeAttribute("aria-current");
    item.classList.add("done");
  }
  setPrompt("");
  return { challengeId: challenge.challengeId, frames };
}

function framesForm(challengeId, frames) {
  const form = new FormData();
  form.append("challengeId", challengeId);
  frames.forEach((frame, index) => form.append("frame", frame, `frame-${index}.jpg`));
  return form;
}

function logEvent(name, data) {
  const text = `${name}: ${JSON.stringify(data)}`;
  $("kiosk-events").append(el("li", { "data-event": name, text }));
}

function showResult(kind, message) {
  $("kiosk-result").replaceChildren(el("div", { class: `status ${kind}`, id: "kiosk-final", "data-outcome": kind, text: message }));
}

async function login() {
  busy(true);
  const status = $("kiosk-status");
  $("kiosk-result").replaceChildren();
  try {
    const { challengeId, frames } = await performChallenge();
    showStatus(status, "info", "Checking…");
    const answer = await api("POST", "/v1/kiosk/login", { key: null, headers: clientHeaders(), body: framesForm(challengeId, frames) });
    if (answer.success) {
      showStatus(status, "ok", "Recognised.");
      showResult("ok", `Welcome${answer.firstName ? `, ${answer.firstName}` : ""}. Customer ${answer.customerUUID}.`);
    } else if (answer.error === "NO_MATCH_FACE") {
      showStatus(status, "info", "We do not know you yet: let us onboard you.");
      await startOnboarding();
    } else {
      showStatus(status, "bad", answer.spoofAttempt ? "The liveness check failed; please try again and follow the prompts." : `Login failed: ${answer.error}`);
    }
  } catch (error) {
    showStatus(status, "bad", errorText(error));
  } finally {
    setPrompt("");
    busy(false);
  }
}

function renderState(state) {
  for (const item of document.querySelectorAll("#kiosk-steps li")) {
    const order = ["selfie", "idFront", "idBack", "completed"];
    const position = order.indexOf(item.dataset.step);
    const current = TERMINAL_STATES.has(state) ? 3 : order.indexOf(state);
    item.className = position < current ? "done" : position === current ? "current" : "";
  }
  for (const step of ["selfie", "idFront", "idBack"]) $(`step-${step}`).hidden = step !== state;
  $("kiosk-cancel").hidden = TERMINAL_STATES.has(state);
}

async function startOnboarding() {
  const session = await api("POST", "/v1/kiosk/sessions", { key: null, headers: clientHeaders() });
  interview = { interviewId: session.interviewId, interviewToken: session.interviewToken };
  $("onboarding").hidden = false;
  $("kiosk-events").replaceChildren();
  renderState("selfie");
  events?.close();
  events = new EventSource(`/v1/kiosk/sessions/${encodeURIComponent(interview.interviewId)}/events?interviewToken=${encodeURIComponent(interview.interviewToken)}`);
  for (const name of EVENTS) {
    events.addEventListener(name, (message) => {
      let data = {};
      try { data = JSON.parse(message.data); } catch { /* keep {} */ }
      logEvent(name, data);
      if (name === "kioskFlowCompleted") {
        showResult(data.success ? "ok" : "bad", data.success ? `Onboarded ${data.name || ""} — customer ${data.customerUUID}.` : "Onboarding did not complete.");
        renderState("completed");
        events.close();
      } else if (name === "userCancelledSession") {
        showResult("bad", "Onboarding cancelled.");
        renderState("cancelled");
        events.close();
      }
    });
  }
  $("kiosk-selfie").focus();
}

function interviewHeaders(extra = {}) { return clientHeaders({ "X-Interview-Token": interview.interviewToken, ...extra }); }

async function afterStep(answer) {
  renderState(answer.state);
  const failed = (answer.events || []).find((event) => event.success === false || event.event === "kioskError");
  if (failed) showStatus($("kiosk-status"), "bad", `${failed.event}: ${failed.error || failed.code || "failed"}${failed.message ? ` — ${failed.message}` : ""}`);
  else showStatus($("kiosk-status"), "ok", `Step done; next: ${answer.state}.`);
  if (TERMINAL_STATES.has(answer.state) && answer.result) {
    showResult(answer.result.success ? "ok" : "bad", answer.result.success ? `Onboarded ${answer.result.name || ""} — customer ${answer.result.customerUUID}.` : "Onboarding failed.");
  }
}

async function selfie() {
  busy(true);
  try {
    const { challengeId, frames } = await performChallenge();
    const answer = await api("POST", `/v1/kiosk/sessions/${interview.interviewId}/selfie`, { key: null, headers: interviewHeaders(), body: framesForm(challengeId, frames) });
    await afterStep(answer);
  } catch (error) {
    showStatus($("kiosk-status"), "bad", errorText(error));
  } finally {
    setPrompt("");
    busy(false);
  }
}

async function documentSide(side, blob) {
  busy(true);
  try {
    const answer = await api("POST", `/v1/kiosk/sessions/${interview.interviewId}/${side}`, { key: null, headers: interviewHeaders(), body: blob, contentType: blob.type || "image/jpeg" });
    await afterStep(answer);
  } catch (error) {
    showStatus($("kiosk-status"), "bad", errorText(error));
  } finally {
    busy(false);
  }
}

async function cancel() {
  if (!interview) return;
  try {
    await api("DELETE", `/v1/kiosk/sessions/${interview.interviewId}`, { key: null, headers: interviewHeaders() });
    renderState("cancelled");
  } catch (error) {
    showStatus($("kiosk-status"), "bad", errorText(error));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("kiosk-token").value = sessionStorage.getItem(KIOSK_TOKEN_KEY) || "";
  $("kiosk-device").value = `kiosk-demo-${Math.random().toString(36).slice(2, 8)}`;
  $("kiosk-setup").addEventListener("submit", startCamera);
  $("kiosk-login").addEventListener("click", login);
  $("kiosk-selfie").addEventListener("click", selfie);
  $("kiosk-id-front-capture").addEventListener("click", async () => documentSide("id-front", await captureFrame()));
  $("kiosk-id-back-capture").addEventListener("click", async () => documentSide("id-back", await captureFrame()));
  $("kiosk-id-front-file").addEventListener("change", (event) => event.target.files[0] && documentSide("id-front", event.target.files[0]));
  $("kiosk-id-back-file").addEventListener("change", (event) => event.target.files[0] && documentSide("id-back", event.target.files[0]));
  $("kiosk-cancel").addEventListener("click", cancel);
});
