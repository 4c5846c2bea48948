// Consentry's reference client: a small ES module with no dependencies, used by the built-in
// web app and meant to be copied or imported by any frontend (docs/frontend.md).
//
//   import { ConsentryClient } from "/web/consentry.js";
//   const client = new ConsentryClient({ apiKey });
//   const run = await client.chat({ message: "What is RAG?" }, {
//     token: (e) => append(e.message_id, e.delta),
//     consent: (e) => showConsentCard(e),
//     final: (e) => done(e.reason),
//   });
//
// What it does for you:
// - POST and stream over fetch (the browser's EventSource cannot POST), parsing SSE frames;
// - typed dispatch: handlers[event.type](event), plus handlers.event(event) for every event;
// - reconnects a stream cut before its `final` with GET /v1/threads/{id}/stream and the
//   Last-Event-ID it saw, after the server's `retry:` delay, so no event is lost or repeated;
// - an Idempotency-Key on every message and decision, so a retried request never runs twice;
// - watchApprovals: the caller's approvals live (GET /v1/approvals/stream), rejoined with the
//   last cursor after a cut, so an inbox or a badge never misses a change.
// The event types are declared in consentry-protocol.d.ts, generated from the protocol's JSON Schema.

/** A refused request: the HTTP status and the API's `{"error": {code, message, details}}`. */
export class ConsentryError extends Error {
  constructor(status, code, message, details = {}) {
    super(message);
    this.name = "ConsentryError";
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** Frames of a text/event-stream, from a ReadableStream of bytes. */
export async function* readServerSentEvents(body, { signal } = {}) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const abort = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", abort, { once: true });
  let buffer = "";
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        finished = true;
        break;
      }
      buffer += value;
      const frames = buffer.split(/\r\n\r\n|\n\n|\r\r/);
      buffer = frames.pop();
      for (const frame of frames) {
        const parsed = parseFrame(frame);
        if (parsed) yield parsed;
      }
    }
  } finally {
    signal?.removeEventListener("abort", abort);
    if (!finished) await reader.cancel().catch(() => {}); // stopped early: close the connection
    reader.releaseLock();
  }
}

function parseFrame(frame) {
  const result = { event: "message", id: null, data: null, retry: null };
  const data = [];
  for (const line of frame.split(/\r\n|\n|\r/)) {
    if (line === "" || line.startsWith(":")) continue; // a comment (keep-alive or hint)
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") result.event = value;
    else if (field === "id") result.id = value;
    else if (field === "retry" && /^\d+$/.test(value)) result.retry = Number(value);
  }
  if (data.length) result.data = data.join("\n");
  return result.data === null && result.retry === null ? null : result;
}

/**
 * Whether `error` says the server could not be reached (no answer at all, or a proxy's 502, 503
 * or 504 page instead of the API's body): nothing was decided or sent; trying again is safe
 * with the same idempotency key.
 */
export function isUnreachable(error) {
  if (error instanceof ConsentryError) return error.code === "http_error" && [502, 503, 504].includes(error.status);
  return error?.name === "TypeError"; // fetch's own failure: the network, DNS, a refused connection
}

/** A fresh idempotency key. */
export function newIdempotencyKey() {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now()}-${Math.random().toString(16).slice(2)}`;
}

const DEFAULT_RETRY_MS = 2000;
const MAX_WATCH_RETRY_MS = 30000;

export class ConsentryClient {
  /**
   * @param {object} [options]
   * @param {string} [options.baseUrl] where the API is ("" for the page's own server)
   * @param {string|null} [options.apiKey] a key of CONSENTRY_API_KEYS, sent as a bearer token
   * @param {number} [options.maxReconnects] consecutive reconnects without a new event
   * @param {(key: string|null) => void} [options.onUnauthorized] called on a 401
   */
  constructor({ baseUrl = "", apiKey = null, maxReconnects = 5, onUnauthorized = null } = {}) {
    this.baseUrl = baseUrl.replace(/\/$/, "");
    this.apiKey = apiKey;
    this.maxReconnects = maxReconnects;
    this.onUnauthorized = onUnauthorized;
  }

  headers(extra = {}) {
    const headers = { Accept: "application/json", ...extra };
    if (this.apiKey) headers.Authorization = `Bearer ${this.apiKey}`;
    return headers;
  }

  async fetch(method, path, { body, headers = {}, signal } = {}) {
    const init = { method, headers: this.headers(headers), signal };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
    const response = await fetch(this.baseUrl + path, init);
    if (!response.ok) throw await this.errorOf(response);
    return response;
  }

  async errorOf(response) {
    let error = { code: "http_error", message: `HTTP ${response.status}`, details: {} };
    try {
      const body = await response.json();
      if (body && body.error) error = body.error;
    } catch {
      // not the API's JSON body (a proxy's page, say): keep the generic error
    }
    if (response.status === 401) this.onUnauthorized?.(this.apiKey);
    return new ConsentryError(response.status, error.code, error.message, error.details ?? {});
  }

  /** A JSON request; resolves to the parsed body (null for 204). */
  async request(method, path, body, options = {}) {
    const response = await this.fetch(method, path, { ...options, body });
    return response.status === 204 ? null : response.json();
  }

  // ---- streams ----

  /**
   * Send a message or a decision (POST /v1/chat) and stream the run's events to `handlers`.
   * Resolves with {threadId, lastEventId, final} once the stream ended after the run's `final`
   * (a stream cut before it is rejoined with Last-Event-ID), or rejects with a ConsentryError
   * when the request is refused (`error.code` says why: consent_pending, already_decided…).
   */
  async chat(body, handlers = {}, { idempotencyKey = newIdempotencyKey(), signal } = {}) {
    const response = await this.fetch("POST", "/v1/chat", {
      body,
      headers: { "Idempotency-Key": idempotencyKey, Accept: "text/event-stream" },
      signal,
    });
    const state = {
      threadId: response.headers.get("X-Thread-Id") ?? body.thread_id ?? null,
      runId: response.headers.get("X-Run-Id"), // until its first event: see follow()
      lastEventId: null,
    };
    handlers.accepted?.({ threadId: state.threadId, runId: state.runId });
    return this.follow(response, state, handlers, signal);
  }

  /** Decide a consent on the thread's stream: its resumed run streams back to `handlers`.
   * `answer` (a raw interrupt) sends `value`; a batch of tool calls is decided together with
   * `chat({thread_id, resume: [{approval_id, decision, …}, …]})`. */
  decide(threadId, approvalId, decision, { edited, comment, value, ...rest } = {}, handlers = {}) {
    const resume = { approval_id: approvalId, decision };
    if (edited !== undefined) resume.edited = edited;
    if (value !== undefined) resume.value = value;
    if (comment) resume.comment = comment;
    return this.chat({ thread_id: threadId, resume }, handlers, rest);
  }

  /**
   * Join a thread's stream (GET /v1/threads/{id}/stream): the stored events after
   * `lastEventId` (all of them when it is null), then its active run live until its `final`.
   * An idle thread's stream ends after the replay. `final` is the last `final` event seen
   * (null when none came).
   */
  async joinStream(threadId, handlers = {}, { lastEventId = null, signal } = {}) {
    const state = { threadId, lastEventId };
    const response = await this.openStream(state, signal);
    return this.follow(response, state, handlers, signal, { joining: true });
  }

  openStream(state, signal) {
    const headers = { Accept: "text/event-stream" };
    if (state.lastEventId !== null && state.lastEventId !== undefined) {
      headers["Last-Event-ID"] = String(state.lastEventId);
    }
    const path = `/v1/threads/${encodeURIComponent(state.threadId)}/stream`;
    return this.fetch("GET", path, { headers, signal });
  }

  /**
   * Read a stream to its end, dispatching each event. The server ends a stream after its run's
   * `final` (or, for a join of an idle thread, after the replay). A stream that ends any other
   * way (a `retry:` hint because the server is shutting down and the run goes on elsewhere, a
   * broken connection, a proxy that closed it early) is rejoined with the last event id seen,
   * after the hinted delay, so every event arrives once. An exception thrown by a handler is
   * the app's: it stops the stream and rejects, never mistaken for a network fault.
   */
  async follow(response, state, handlers, signal, { joining = false } = {}) {
    let retryMs = DEFAULT_RETRY_MS;
    let final = null;
    let quietRejoins = 0;
    for (;;) {
      let lastType = null;
      let hinted = false;
      let broken = null;
      const frames = readServerSentEvents(response.body, { signal });
      try {
        for (;;) {
          let next;
          try {
            next = await frames.next();
          } catch (error) {
            if (signal?.aborted) throw error;
            broken = error; // the connection broke: rejoin below
            break;
          }
          if (next.done) break;
          const frame = next.value;
          if (frame.retry !== null) {
            retryMs = frame.retry;
            hinted = true;
          }
          if (frame.data === null) continue;
          const event = JSON.parse(frame.data);
          // Tokens are not stored: a rejoin (on another replica, say) names a stored event.
          if (frame.id !== null && event.type !== "token") state.lastEventId = frame.id;
          if (event.thread_id) state.threadId = event.thread_id;
          if (state.runId) {
            // a rejoin with no id seen yet replays the thread: skip the runs before this one
            if (event.run_id !== state.runId) continue;
            state.runId = null;
          }
          lastType = event.type;
          if (event.type === "final") final = event;
          handlers[event.type]?.(event);
          handlers.event?.(event);
        }
      } finally {
        await frames.return(); // cancels the body if a handler threw
      }
      if (signal?.aborted) throw abortReason(signal);
      if (!broken && !hinted && (lastType === "final" || (joining && lastType === null))) {
        return { threadId: state.threadId, lastEventId: state.lastEventId, final };
      }
      quietRejoins = lastType !== null ? 1 : quietRejoins + 1;
      if (!state.threadId || quietRejoins > this.maxReconnects) {
        throw broken ?? new ConsentryError(0, "stream_ended", "The stream ended before its run did.");
      }
      handlers.reconnecting?.({ threadId: state.threadId, lastEventId: state.lastEventId, retryMs });
      await sleep(retryMs, signal);
      joining = true;
      try {
        response = await this.openStream(state, signal);
      } catch (error) {
        if (signal?.aborted) throw abortReason(signal);
        // a refusal is final; the network down, or a server or proxy that is restarting
        // (5xx: database_unavailable, a gateway's 502), is waited out like a cut stream
        if (error instanceof ConsentryError && error.status < 500) throw error;
        response = { body: brokenBody(error) };
      }
    }
  }

  /**
   * Watch the caller's approvals (GET /v1/approvals/stream): `handlers.ready({pending, cursor})`
   * once connected (again after every reconnect: `pending` is the number waiting now), and
   * `handlers.approval({change, approval, cursor})` for each change to one of them (`change`:
   * requested, decided, expired or cancelled; `approval` as GET /v1/approvals/{id} gives it).
   * A connection that ends or breaks is rejoined with the last cursor (`Last-Event-ID`), after
   * the server's `retry:` hint (2 s by default, doubling up to 30 s while nothing arrives), so
   * every change arrives once; `handlers.reconnecting({lastEventId, retryMs})` is told, and a
   * 5xx is waited out the same way. Never resolves: it rejects with an AbortError when `signal`
   * aborts, with a ConsentryError when the server refuses the stream (401; 404 from a server
   * without it), or with what one of your handlers threw.
   */
  async watchApprovals(handlers = {}, { signal, lastEventId = null } = {}) {
    let cursor = lastEventId;
    let retryMs = DEFAULT_RETRY_MS;
    let quiet = 0; // reconnects in a row with nothing received
    for (;;) {
      let frames = null;
      try {
        const headers = { Accept: "text/event-stream" };
        if (cursor !== null && cursor !== undefined) headers["Last-Event-ID"] = String(cursor);
        const response = await this.fetch("GET", "/v1/approvals/stream", { headers, signal });
        frames = readServerSentEvents(response.body, { signal });
      } catch (error) {
        if (signal?.aborted) throw abortReason(signal);
        if (error instanceof ConsentryError && error.status < 500) throw error;
      }
      try {
        while (frames) {
          let next;
          try {
            next = await frames.next();
          } catch (error) {
            if (signal?.aborted) throw error;
            break; // the connection broke: rejoin below
          }
          if (next.done) break;
          const frame = next.value;
          if (frame.retry !== null) retryMs = frame.retry;
          if (frame.data === null) continue;
          quiet = 0;
          if (frame.id !== null) cursor = frame.id;
          const data = JSON.parse(frame.data);
          if (frame.event === "ready") handlers.ready?.({ ...data, cursor: frame.id });
          else if (frame.event === "approval") handlers.approval?.({ ...data, cursor: frame.id });
        }
      } finally {
        await frames?.return(); // cancels the body if a handler threw
      }
      if (signal?.aborted) throw abortReason(signal);
      const wait = Math.min(retryMs * 2 ** quiet, MAX_WATCH_RETRY_MS);
      quiet += 1;
      handlers.reconnecting?.({ lastEventId: cursor, retryMs: wait });
      await sleep(wait, signal);
    }
  }

  // ---- REST ----

  /** Who the caller is: {principal, tenant, user, name}. */
  getMe() { return this.request("GET", "/v1/me"); }

  listProjects() { return this.request("GET", "/v1/projects"); }
  createProject(name) { return this.request("POST", "/v1/projects", { name }); }
  listNotes(projectId) { return this.request("GET", `/v1/projects/${enc(projectId)}/notes`); }
  createNote(projectId, { title, content }) {
    return this.request("POST", `/v1/projects/${enc(projectId)}/notes`, { title, content });
  }
  searchNotes(projectId, q, { limit = 10 } = {}) {
    const query = new URLSearchParams({ q, limit: String(limit) });
    return this.request("GET", `/v1/projects/${enc(projectId)}/search?${query}`);
  }
  getNote(noteId) { return this.request("GET", `/v1/notes/${enc(noteId)}`); }
  /** `version` is the version the edit is based on: a stale one gets 409 version_conflict. */
  updateNote(noteId, { version, title, content }) {
    return this.request("PUT", `/v1/notes/${enc(noteId)}`, { version, title, content });
  }
  deleteNote(noteId) { return this.request("DELETE", `/v1/notes/${enc(noteId)}`); }
  listNoteVersions(noteId) { return this.request("GET", `/v1/notes/${enc(noteId)}/versions`); }
  /** The caller's threads, most recently active first; `noteId` / `projectId`: a note's or a
   * project's conversations. */
  listThreads({ noteId = null, projectId = null, limit = null } = {}) {
    const query = new URLSearchParams();
    if (noteId) query.set("note_id", noteId);
    if (projectId) query.set("project_id", projectId);
    if (limit) query.set("limit", String(limit));
    const search = query.toString();
    return this.request("GET", `/v1/threads${search ? `?${search}` : ""}`);
  }
  getThread(threadId) { return this.request("GET", `/v1/threads/${enc(threadId)}`); }
  getMessages(threadId) { return this.request("GET", `/v1/threads/${enc(threadId)}/messages`); }
  cancelRun(threadId) { return this.request("POST", `/v1/threads/${enc(threadId)}/cancel`); }
  listApprovals({ status = "pending", cursor = null, limit = 50 } = {}) {
    const query = new URLSearchParams({ status, limit: String(limit) });
    if (cursor) query.set("cursor", cursor);
    return this.request("GET", `/v1/approvals?${query}`);
  }
  getApproval(approvalId) { return this.request("GET", `/v1/approvals/${enc(approvalId)}`); }
  /** Decide from the inbox: 202, the run goes on in the background. */
  decideApproval(approvalId, decision, { edited, comment, value, idempotencyKey = newIdempotencyKey() } = {}) {
    const body = { decision };
    if (edited !== undefined) body.edited = edited;
    if (value !== undefined) body.value = value;
    if (comment) body.comment = comment;
    return this.request("POST", `/v1/approvals/${enc(approvalId)}/decision`, body, {
      headers: { "Idempotency-Key": idempotencyKey },
    });
  }
}

const enc = encodeURIComponent;

function abortReason(signal) {
  return signal.reason ?? new DOMException("The stream was aborted.", "AbortError");
}

function sleep(ms, signal) {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise((resolve, reject) => {
    const aborted = () => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", aborted);
      resolve();
    }, ms);
    signal?.addEventListener("abort", aborted, { once: true });
  });
}

function brokenBody(error) {
  return new ReadableStream({ start: (controller) => controller.error(error) });
}
