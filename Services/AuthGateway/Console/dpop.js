// A browser's device key for DPoP (RFC 9449): a P-256 key made by WebCrypto, its private half not extractable, kept in
// IndexedDB so that the page keeps its identity (the key's RFC 7638 thumbprint) across reloads. Every call made with it
// carries a proof over its method, URL, access token (`ath`) and body (`dgst`).

const DATABASE = "facegate.device-keys";
const STORE = "keys";
const utf8 = (text) => new TextEncoder().encode(text);

export function base64url(bytes) {
  let text = "";
  for (const byte of new Uint8Array(bytes)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const sha256 = async (bytes) => base64url(await crypto.subtle.digest("SHA-256", bytes));

function request(operation) {
  return new Promise((resolve, reject) => {
    operation.onsuccess = () => resolve(operation.result);
    operation.onerror = () => reject(operation.error);
  });
}

async function keyStore(mode) {
  const opening = indexedDB.open(DATABASE, 1);
  opening.onupgradeneeded = () => opening.result.createObjectStore(STORE);
  const database = await request(opening);
  return database.transaction(STORE, mode).objectStore(STORE);
}

/** The key named `name` on this browser, made on first use: `{pair, jwk, thumbprint}`. */
export async function deviceKey(name) {
  let pair = await request((await keyStore("readonly")).get(name));
  if (!pair) {
    pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
    await request((await keyStore("readwrite")).put(pair, name));
  }
  const exported = await crypto.subtle.exportKey("jwk", pair.publicKey);
  // RFC 7638: the required members in lexicographic order, no whitespace.
  const jwk = { crv: "P-256", kty: "EC", x: exported.x, y: exported.y };
  return { pair, jwk, thumbprint: await sha256(utf8(JSON.stringify(jwk))) };
}

/** The `DPoP` header for one request to `url` (no query): `body` the exact bytes sent, if any. */
export async function proof(key, method, url, accessToken, body) {
  const claims = { jti: base64url(crypto.getRandomValues(new Uint8Array(18))), htm: method, htu: url, iat: Math.floor(Date.now() / 1000) };
  if (accessToken) claims.ath = await sha256(utf8(accessToken));
  if (body && body.byteLength) claims.dgst = await sha256(body);
  const header = { typ: "dpop+jwt", alg: "ES256", jwk: key.jwk };
  const input = `${base64url(utf8(JSON.stringify(header)))}.${base64url(utf8(JSON.stringify(claims)))}`;
  // WebCrypto's ECDSA signature is r ‖ s, 64 bytes: the JWS form of ES256.
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key.pair.privateKey, utf8(input));
  return `${input}.${base64url(signature)}`;
}

/**
 * A multipart/form-data body built here, not by the browser, so that the proof can hash exactly the bytes sent.
 * `fields`: `[name, value]` pairs, each value a string or a Blob (a File keeps its name).
 */
export async function multipart(fields) {
  const boundary = `facegate-${base64url(crypto.getRandomValues(new Uint8Array(12)))}`;
  const parts = [];
  for (const [name, value] of fields) {
    if (value instanceof Blob) {
      const fileName = value.name || `${name}.jpg`;
      parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${fileName}"\r\n`
        + `Content-Type: ${value.type || "application/octet-stream"}\r\n\r\n`, value, "\r\n");
    } else {
      parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
    }
  }
  parts.push(`--${boundary}--\r\n`);
  return { body: new Uint8Array(await new Blob(parts).arrayBuffer()), contentType: `multipart/form-data; boundary=${boundary}` };
}
