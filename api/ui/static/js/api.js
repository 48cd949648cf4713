// The only way the page talks to the server: Coffer's own /v1 API, same origin.

const SESSION_KEY = "coffer.session";

/** The signed-in session lives in sessionStorage only: closing the tab forgets it. */
export const session = {
  load() {
    try {
      return JSON.parse(sessionStorage.getItem(SESSION_KEY) || "null") || {};
    } catch {
      return {};
    }
  },
  get token() {
    return this.load().token || "";
  },
  get namespace() {
    return this.load().namespace || "";
  },
  get display() {
    return this.load().display || "";
  },
  save(values) {
    sessionStorage.setItem(SESSION_KEY, JSON.stringify({ ...this.load(), ...values }));
  },
  clear() {
    sessionStorage.removeItem(SESSION_KEY);
  },
};

export class ApiError extends Error {
  constructor(status, messages) {
    super(messages.join("; "));
    this.status = status;
    this.messages = messages;
  }
}

const STATUS_WORDS = {
  400: "the request was not valid",
  403: "permission denied",
  404: "nothing found at this path",
  405: "this operation is not supported here",
  412: "the server's state has not caught up yet; try again",
  413: "the request is too large",
  429: "too many requests; try again shortly",
  500: "the server failed with an internal error",
  501: "the server is not initialised",
  502: "a node could not reach the active node",
  503: "the server is sealed or has no active node",
};

/** Make `path` safe in a URL while keeping its slashes. */
export function encodePath(path) {
  return path.split("/").map(encodeURIComponent).join("/");
}

/**
 * Call the API. `path` is below /v1/ and already encoded.
 * Options: body (JSON), token (false: unauthenticated; string: that token),
 * namespace (overrides the session's), wrapTTL (answer with a wrapping token), notFound (value to return on a 404 without data
 * instead of an error: an empty LIST answers 404).
 */
export async function api(method, path, options = {}) {
  const headers = { "X-Service-Request": "true" };
  const token = options.token === undefined ? session.token : options.token;
  if (token) headers["X-Service-Token"] = token;
  const namespace = options.namespace === undefined ? session.namespace : options.namespace;
  if (namespace) headers["X-Service-Namespace"] = namespace;
  if (options.wrapTTL) headers["X-Service-Wrap-TTL"] = options.wrapTTL;
  const init = { method, headers, cache: "no-store", credentials: "omit" };
  if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  let response;
  try {
    response = await fetch(`/v1/${path}`, init);
  } catch (err) {
    throw new ApiError(0, [`could not reach the server (${err.message})`]);
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      throw new ApiError(response.status, [
        `the server answered HTTP ${response.status} with something that is not JSON`,
      ]);
    }
  }
  if (!response.ok) {
    // A 404 may still carry data (KV v2's deleted version: its metadata, no data).
    if (response.status === 404 && "notFound" in options) return data && data.data ? data : options.notFound;
    const messages = data && Array.isArray(data.errors) ? data.errors.filter(Boolean) : [];
    if (!messages.length) {
      messages.push(STATUS_WORDS[response.status] || `the server answered HTTP ${response.status}`);
    }
    throw new ApiError(response.status, messages);
  }
  return data;
}

/** LIST a path: the keys, or [] when there is nothing there. */
export async function listKeys(path, options = {}) {
  const reply = await api("LIST", path.endsWith("/") ? path : `${path}/`, { ...options, notFound: null });
  return (reply && reply.data && reply.data.keys) || [];
}
