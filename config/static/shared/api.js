// A small client for the Crowdlabel REST API, shared by the browser pages.

export function cookie(name) {
  const match = document.cookie.match(new RegExp("(?:^|; )" + name + "=([^;]*)"));
  return match ? decodeURIComponent(match[1]) : "";
}

export function newKey() {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export class ApiError extends Error {
  constructor(status, body) {
    super(ApiError.describe(status, body));
    this.status = status;
    this.body = body;
  }
  // DRF nests a field's errors under its keys ({"sizes": {"binary_vote": ["..."]}}, lists of objects for
  // many=True): each message is named by its dotted path, e.g. "sizes.binary_vote: ...".
  static fieldErrors(body, prefix = "") {
    if (Array.isArray(body)) {
      if (body.every((v) => typeof v !== "object" || v === null)) return [ApiError.named(prefix, body.join(" "))];
      return body.flatMap((v, i) => ApiError.fieldErrors(v, `${prefix}[${i}]`));
    }
    if (body && typeof body === "object") {
      return Object.entries(body).flatMap(([k, v]) => ApiError.fieldErrors(v, prefix ? `${prefix}.${k}` : k));
    }
    return [ApiError.named(prefix, String(body))];
  }

  static named(path, message) {
    return path ? `${path}: ${message}` : message;
  }

  static describe(status, body) {
    if (body && typeof body === "object") {
      if (body.detail) return String(body.detail);
      return ApiError.fieldErrors(body).join("; ");
    }
    return `The server answered ${status}.`;
  }
}

export async function api(base, path, { method = "GET", body, headers = {} } = {}) {
  const options = { method, credentials: "same-origin", headers: { Accept: "application/json", ...headers } };
  if (method !== "GET") options.headers["X-CSRFToken"] = cookie("csrftoken");
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(base + path, options);
  if (response.status === 204) return null;
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// Session storage (this tab only, survives a reload and a trip to sign-in) where the page may use it; inside a
// third-party frame (MTurk's ExternalQuestion) the browser may deny storage, and what is kept then lives as long
// as the page.
export const tabStorage = (() => {
  const memory = new Map();
  try {
    const storage = window.sessionStorage;
    storage.getItem("crowdlabel:probe");
    return {
      get: (k) => storage.getItem(k),
      set: (k, v) => storage.setItem(k, v),
      delete: (k) => storage.removeItem(k),
    };
  } catch {
    return {
      get: (k) => (memory.has(k) ? memory.get(k) : null),
      set: (k, v) => memory.set(k, v),
      delete: (k) => memory.delete(k),
    };
  }
})();

// What the worker page keeps in tabStorage: the Idempotency-Key of each submit, the answer not yet stored, and
// the box being drawn.
export const stored = {
  submitKey: (assignmentId) => `crowdlabel:submit:${assignmentId}`,
  draft: (assignmentId) => `crowdlabel:draft:${assignmentId}`,
  pending: "crowdlabel:pending",
};

// Submit an answer exactly once: the Idempotency-Key is kept per assignment, so a retry after a network
// failure (or a double click) can never store a second answer. A provider session's page posts to its
// bundle's own submit path with its session header. `query` goes on the path (the worker page's
// "next=true&kinds=...", which has the answer bring back the next lease as `next`).
export async function submitAnswer(
  base,
  assignmentId,
  answer,
  { attempts = 3, path = `assignments/${assignmentId}/submit`, headers = {}, query = "" } = {},
) {
  if (query) path += `?${query}`;
  const storageKey = stored.submitKey(assignmentId);
  let key = tabStorage.get(storageKey);
  if (!key) {
    key = newKey();
    tabStorage.set(storageKey, key);
  }
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await api(base, path, {
        method: "POST",
        body: { answer },
        headers: { ...headers, "Idempotency-Key": key },
      });
      tabStorage.delete(storageKey);
      return result;
    } catch (error) {
      const retriable = !(error instanceof ApiError) || error.status >= 500;
      if (!retriable || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}

// POST a change that must happen once (a reviewer's decision) with a fresh Idempotency-Key, sent again with the
// same key after a network failure or a 5xx: a retry of a request the server did apply is answered with what
// it recorded, never applied twice.
export async function postOnce(base, path, body, { attempts = 3 } = {}) {
  const key = newKey();
  for (let attempt = 1; ; attempt++) {
    try {
      return await api(base, path, { method: "POST", body, headers: { "Idempotency-Key": key } });
    } catch (error) {
      const retriable = !(error instanceof ApiError) || error.status >= 500;
      if (!retriable || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}
