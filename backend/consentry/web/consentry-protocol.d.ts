// Generated from the protocol's JSON Schema (docs/protocol.schema.json) by
// backend/consentry/typescript_declarations.py. Do not edit: run `make schema`.
//
// Consentry chat protocol: Requests, SSE events and errors of the Consentry API (generated).

export interface Approval {
  approval_id: string;
  thread_id: string;
  /** The run that asked. */
  run_id: string;
  kind: string;
  title: string;
  /** Open: the schema does not fix these values, hence `unknown`. */
  proposal: Record<string, unknown>;
  proposal_hash: string;
  allowed_decisions: ("approve" | "edit" | "reject" | "answer" | "respond")[];
  /**
   * The LangGraph interrupt it answers (the consent event's); the tool calls of one review share it and are decided together.
   * @default ""
   */
  interrupt_id?: string;
  /**
   * Kind `interrupt`: the raw value the graph's interrupt() gave.
   * @default null
   */
  value?: JsonValue;
  /**
   * Kind `interrupt`: the JSON Schema an answer must fit, if any.
   * Open: the schema does not fix these values, hence `unknown`.
   * @default null
   */
  response_schema?: Record<string, unknown> | null;
  /** @format date-time */
  created_at: string;
  /**
   * None: it waits until someone decides.
   * @format date-time
   */
  expires_at: string | null;
  status: "pending" | "approved" | "edited" | "rejected" | "answered" | "expired" | "cancelled" | "superseded";
  /** None while pending. */
  decided: RecordedDecision | null;
}

/**
 * ``GET /v1/approvals/stream``, ``event: approval``: one of the caller's approvals changed.
 * ``approval`` is as it is when the frame was read (apply frames by ``approval_id``).
 */
export interface ApprovalChange {
  change: "requested" | "decided" | "expired" | "cancelled" | "superseded";
  approval: Approval;
}

export interface ApprovalList {
  approvals: Approval[];
  /** Pass as `cursor` for the next (older) page. */
  next_cursor: string | null;
}

/**
 * ``GET /v1/approvals/stream``, ``event: ready``: the changes after the client's cursor were
 * sent; what follows is live. Its ``id:`` is the cursor to reconnect with.
 */
export interface ApprovalsReady {
  /** How many of the caller's consents wait for a decision. */
  pending: number;
}

export interface AuditRecord {
  /** Position in the whole audit log; grows with time. */
  seq: number;
  /** `run_started`, `run_ended`, `consent_requested`, `consent_decided`, `consent_expired`, `consent_cancelled`, `consent_superseded`, `state_updated`, `thread_copied`, `run_deleted`, `run_rolled_back`, `effect_applied`, `cron_ticked`, `cron_tick_skipped` or `error`. */
  action: string;
  /** `tenant/user`, `policy` or `system`. */
  actor: string;
  run_id: string | null;
  approval_id: string | null;
  /** Open: the schema does not fix these values, hence `unknown`. */
  data: Record<string, unknown>;
  /** @format date-time */
  at: string;
}

export interface AuditTrail {
  thread_id: string;
  records: AuditRecord[];
}

/**
 * Start a run: exactly one of ``message``, ``input`` or ``resume``.
 * Closed: the server rejects properties not declared here.
 */
export type ChatRequest = {
  /**
   * Omit to start a new thread.
   * @minLength 1
   * @maxLength 36
   * @default null
   */
  thread_id?: string | null;
  /**
   * @minLength 1
   * @maxLength 64
   * @default "tutor"
   */
  graph?: string;
  /**
   * @minLength 1
   * @maxLength 36
   * @default null
   */
  project_id?: string | null;
  /**
   * The note the user is looking at.
   * @minLength 1
   * @maxLength 36
   * @default null
   */
  note_id?: string | null;
  /**
   * Not blank. Shorthand for the input `{"messages": [this user message]}`.
   * @pattern \S
   * @default null
   */
  message?: string | null;
  /**
   * The graph's own input, any JSON object, checked against the graph's input schema (`GET /v1/graphs`; 422 `invalid_input` naming the field).
   * @default null
   */
  input?: Record<string, JsonValue> | null;
  /**
   * A decision on a pending consent, or a list of decisions on several pending consents of the thread (parallel branches), applied together; each consent once (422 `duplicate_decision`).
   * @minItems 1
   * @maxItems 50
   * @default null
   */
  resume?: ResumeDecision | ResumeDecision[] | null;
  /**
   * The graph's own runtime context (LangGraph's `Runtime.context`), checked against its `context_schema` (422 `invalid_context` naming the field; absent fields take their defaults). Kept with the thread: its later runs sent without one (a decision from the inbox, an expiry) get it.
   * @default null
   */
  context?: Record<string, JsonValue> | null;
  /**
   * Values for the graph's `config["configurable"]`. `thread_id`, `checkpoint_id`, `checkpoint_ns`, `checkpoint_map` and keys that start with `__` are the server's (422 `invalid_config`). Kept with the thread, as `context` is.
   * @default null
   */
  configurable?: Record<string, JsonValue> | null;
  /**
   * For a new thread: `ask` (default: a person decides every consent), `auto_approve` (decided by `policy`), `auto_reject` (dry run: nothing applied). Consents of destructive kinds always ask.
   * @default null
   */
  consent_policy?: "ask" | "auto_approve" | "auto_reject" | null;
  /**
   * A message while a consent is pending: `fail` (409 `consent_pending`) or `reject` (reject the pending consents first, in the same transaction).
   * @default "fail"
   */
  on_pending_consent?: "fail" | "reject";
} & (
  | {
      message: string;
      input?: null;
      resume?: null;
    }
  | {
      message?: null;
      /** Open: the schema does not fix these values, hence `unknown`. */
      input: Record<string, unknown>;
      resume?: null;
    }
  | {
      thread_id: string;
      message?: null;
      input?: null;
      /**
       * @minItems 1
       * @maxItems 50
       */
      resume: ResumeDecision | ResumeDecision[];
    }
);

/**
 * A consent the graph waits for: one of its consent kit's kinds, or (kind ``interrupt``) a
 * raw ``interrupt(value)`` that is answered with any JSON value.
 */
export interface ConsentEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "consent";
  /** Send it back in `resume`. */
  approval_id: string;
  /** What is asked, e.g. `note_edit`; fixes the proposal schema. `interrupt`: a raw `interrupt(value)`, answered with `{approval_id, value}`. */
  kind: string;
  title: string;
  /**
   * Structured proposal; for `note_edit` see NoteEditProposal; for `interrupt`, `{value}`.
   * Open: the schema does not fix these values, hence `unknown`.
   */
  proposal: Record<string, unknown>;
  allowed_decisions: ("approve" | "edit" | "reject" | "answer" | "respond")[];
  /**
   * The LangGraph interrupt that asked; the same as `approval_id` but for a reviewed batch of tool calls (kind `tool_call`, LangChain's human-in-the-loop middleware), whose consents share it and are decided together in one request.
   * @default ""
   */
  interrupt_id?: string;
  /**
   * Kind `interrupt`: the value the graph passed to interrupt().
   * @default null
   */
  value?: JsonValue;
  /**
   * Kind `interrupt`: the JSON Schema an answer must fit, when the graph gave one (`interrupt(value, response_schema=...)`).
   * Open: the schema does not fix these values, hence `unknown`.
   * @default null
   */
  response_schema?: Record<string, unknown> | null;
  /**
   * When it expires unanswered; None: it waits until someone decides.
   * @format date-time
   */
  expires_at: string | null;
}

/** One kind of consent a graph may ask for, with the JSON Schemas of its payloads. */
export interface ConsentKindDetail {
  /** The graph that asks it (the `graph` of `POST /v1/chat`). */
  graph: string;
  /** The `kind` of its `consent` events. */
  kind: string;
  description: string;
  allowed_decisions: ("approve" | "edit" | "reject" | "answer" | "respond")[];
  /** How long a request stays open; null: the server's default (`CONSENTRY_CONSENT_TTL_SECONDS`). */
  ttl_seconds: number | null;
  /** A person must decide, whatever the thread's consent policy says. */
  always_ask: boolean;
  /**
   * JSON Schema of the `proposal` of its `consent` events.
   * Open: the schema does not fix these values, hence `unknown`.
   */
  proposal_schema: Record<string, unknown>;
  /**
   * JSON Schema of `edited` for decision `edit`; null when it takes no edits.
   * Open: the schema does not fix these values, hence `unknown`.
   */
  edit_schema: Record<string, unknown> | null;
}

export interface ConsentKindList {
  consent_kinds: ConsentKindDetail[];
}

/**
 * Every SSE event of a run: a union discriminated on `type`, which is also the SSE `event:` name;
 * `seq` is the SSE `id:`. Narrow it with `switch (event.type)`.
 */
export type ConsentryEvent =
  | RunStartedEvent
  | StepEvent
  | TokenEvent
  | MessageEvent
  | ToolCallEvent
  | ToolResultEvent
  | ConsentEvent
  | NoteEvent
  | ModelRetryEvent
  | ErrorEvent
  | ResyncEvent
  | FinalEvent;

/** ``202``: the decision is recorded; the graph resumes in the background. */
export interface DecisionAccepted {
  approval_id: string;
  thread_id: string;
  run_id: string;
  status: "pending" | "approved" | "edited" | "rejected" | "answered" | "expired" | "cancelled" | "superseded";
}

/**
 * A decision on one consent (the body of ``POST /v1/approvals/{id}/decision``): with
 * ``edited`` for ``edit``, ``value`` for ``answer``, ``comment`` for ``respond``.
 * Closed: the server rejects properties not declared here.
 */
export type DecisionRequest = {
  /** Omit it with `value`: an `answer`. */
  decision: "approve" | "edit" | "reject" | "answer" | "respond";
  /**
   * With `edit`: the person's version, in the consent kind's edit schema (for `note_edit`: `{content, title?}`).
   * Open: the schema does not fix these values, hence `unknown`.
   * @default null
   */
  edited?: Record<string, unknown> | null;
  /**
   * With `answer` (a raw `interrupt()`): the value the graph receives, any JSON, checked against the interrupt's `response_schema` when it has one.
   * @default null
   */
  value?: JsonValue;
  /**
   * @maxLength 2000
   * @default null
   */
  comment?: string | null;
} & (
  | {
      decision: "edit";
      /** Open: the schema does not fix these values, hence `unknown`. */
      edited: Record<string, unknown>;
      value?: null;
    }
  | {
      decision: "answer";
      edited?: null;
      /** With `answer` (a raw `interrupt()`): the value the graph receives, any JSON, checked against the interrupt's `response_schema` when it has one. */
      value: JsonValue;
    }
  | {
      decision: "respond";
      edited?: null;
      value?: null;
      /** @minLength 1 */
      comment: string;
    }
  | {
      decision: "approve" | "reject";
      edited?: null;
      value?: null;
    }
);

export interface ErrorBody {
  error: ErrorDetail;
}

export interface ErrorDetail {
  /** Stable machine-readable code, e.g. `thread_not_found`. */
  code: string;
  /** What went wrong, for people. */
  message: string;
  /** Open: the schema does not fix these values, hence `unknown`. */
  details?: Record<string, unknown>;
}

export interface ErrorEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "error";
  code: string;
  message: string;
  retryable: boolean;
}

export interface FinalEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "final";
  reason: "completed" | "interrupted" | "expired" | "failed" | "cancelled" | "step_limit" | "timeout" | "budget_exhausted";
  /** Model tokens this run used. */
  usage: TokenUsage;
}

/** One served graph: what it takes, keeps and gives, and the consents it may ask. */
export interface GraphDetail {
  /** The `graph` of `POST /v1/chat`. */
  name: string;
  /** Whether a `message` can start it (its input has `messages`); any graph takes its own `input`. */
  accepts_message: boolean;
  /**
   * JSON Schema of its `input` (`POST /v1/chat`); null when the graph's types give none (a field of a type pydantic cannot describe).
   * Open: the schema does not fix these values, hence `unknown`.
   */
  input_schema: Record<string, unknown> | null;
  /**
   * JSON Schema of its state; null when the graph's types give none (a field of a type pydantic cannot describe).
   * Open: the schema does not fix these values, hence `unknown`.
   */
  state_schema: Record<string, unknown> | null;
  /**
   * JSON Schema of its output; null when the graph's types give none (a field of a type pydantic cannot describe).
   * Open: the schema does not fix these values, hence `unknown`.
   */
  output_schema: Record<string, unknown> | null;
  /**
   * JSON Schema of its `context_schema`, what a run's `context` is checked against; null when it has none (a run's `context` is then given as sent)
   * Open: the schema does not fix these values, hence `unknown`.
   * @default null
   */
  context_schema?: Record<string, unknown> | null;
  /** The consent kit's kinds it may ask, by name (their schemas: `GET /v1/consent-kinds`). */
  consent_kinds: string[];
}

export interface GraphList {
  /** By name. */
  graphs: GraphDetail[];
}

/** Open: the schema does not fix these values, hence `unknown`. */
export type JsonValue = unknown;

/** Who the request's key names: the stable id, its parts, and a display name. */
export interface Me {
  /** `tenant/user`: the stable id records carry (`decided_by`, audit actors). */
  principal: string;
  tenant: string;
  user: string;
  /** The display name of the caller's key (`CONSENTRY_API_KEYS` entry `token=tenant:user:Display Name`); null when the key has none, and in keyless local mode. */
  name: string | null;
}

export interface MessageEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "message";
  message_id: string;
  role: "assistant";
  content: string;
}

/**
 * A model call failed and is tried again in ``retry_in_seconds`` (a UI can say why it
 * waits). With ``discard_message_id`` set, the failed attempt had already streamed part of that
 * message: drop its text; the next attempt streams the message again from its start.
 */
export interface ModelRetryEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "model_retry";
  /** Why the attempt failed (see `error` codes). */
  code: "model_rate_limited" | "model_quota_exhausted" | "model_unavailable" | "model_auth_failed" | "model_rejected";
  /**
   * The attempt that failed (1 is the first).
   * @minimum 1
   */
  attempt: number;
  /** @minimum 1 */
  max_attempts: number;
  /** @minimum 0 */
  retry_in_seconds: number;
  /** The message whose streamed tokens are void, if the attempt had sent any. */
  discard_message_id: string | null;
}

/** A new note the tutor asks to create in the project. */
export interface NoteCreateProposal {
  project_id: string;
  title: string;
  /** The full content of the new note. */
  content: string;
}

/**
 * A person's version of a ``note_create`` proposal: the new note's content and/or title.
 * Closed: the server rejects properties not declared here.
 */
export interface NoteCreateRevision {
  /**
   * None keeps the proposed.
   * @minLength 1
   * @maxLength 200000
   * @default null
   */
  content?: string | null;
  /**
   * @minLength 1
   * @maxLength 200
   * @default null
   */
  title?: string | null;
}

/** The note the tutor asks to delete, as it was when the tutor asked. */
export interface NoteDeleteProposal {
  note_id: string;
  title: string;
  /** Deleted only if the note is still at this version. */
  version: number;
  /** What is lost: the note's content at `version`. */
  content: string;
}

/** What the tutor asks to write into the open note: shown to the person in the consent. */
export interface NoteEditProposal {
  project_id: string;
  /** The note to edit. */
  note_id: string;
  title: string;
  /** The version the edit is based on. */
  base_version: number;
  base_content: string;
  /** The full content of the note after the edit. */
  proposed_content: string;
  /** Unified diff from the base content to the proposed content. */
  diff: string;
  /**
   * Lines a person wrote or changed that the edit removes (the card says so plainly). The tutor's summaries keep every one: they rewrite only the tutor's own lines.
   * @minimum 0
   * @default 0
   */
  person_lines_removed?: number;
}

/**
 * A person's version of a ``note_edit`` proposal: the note's full content and/or title.
 * Closed: the server rejects properties not declared here.
 */
export interface NoteEditRevision {
  /**
   * None keeps the proposed.
   * @minLength 1
   * @maxLength 200000
   * @default null
   */
  content?: string | null;
  /**
   * @minLength 1
   * @maxLength 200
   * @default null
   */
  title?: string | null;
}

export interface NoteEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "note";
  note_id: string;
  project_id: string;
  title: string;
  version: number;
  content: string;
}

export interface NoteVersion {
  note_id: string;
  version: number;
  title: string;
  content: string;
  author: "user" | "assistant";
  /** The consent that authorized an assistant edit. */
  approval_id: string | null;
  /** How that consent was decided: `approve` (the tutor's proposal as it was) or `edit` (a person's version of it); null for a person's own save. */
  decision: "approve" | "edit" | null;
  /** Who decided that consent: `tenant/user` or `policy`; null for a person's own save. */
  decided_by: string | null;
  /** The decider's display name at decision time; null for `policy`, a key without a name, and a person's own save. */
  decided_by_name: string | null;
  /** @format date-time */
  created_at: string;
}

export interface NoteVersionList {
  versions: NoteVersion[];
}

/** What was decided, by whom and when. */
export interface RecordedDecision {
  status: "pending" | "approved" | "edited" | "rejected" | "answered" | "expired" | "cancelled" | "superseded";
  /** `approve`, `edit`, `reject`, `answer`, or `expire`. */
  decision: string | null;
  /** `tenant/user`, `policy` or `system`. */
  decided_by: string | null;
  /** The display name of the person who decided, as it was at decision time (`CONSENTRY_API_KEYS` `token=tenant:user:Display Name`); null for `policy`, `system`, and a key without a name. */
  decided_by_name: string | null;
  /** @format date-time */
  decided_at: string | null;
  /** Open: the schema does not fix these values, hence `unknown`. */
  edited: Record<string, unknown> | null;
  /**
   * With `answer`: the value given.
   * @default null
   */
  value?: JsonValue;
  comment: string | null;
}

/**
 * A person's answer to a ``consent`` event.
 * Closed: the server rejects properties not declared here.
 */
export type ResumeDecision = {
  /** Omit it with `value`: an `answer`. */
  decision: "approve" | "edit" | "reject" | "answer" | "respond";
  /**
   * With `edit`: the person's version, in the consent kind's edit schema (for `note_edit`: `{content, title?}`).
   * Open: the schema does not fix these values, hence `unknown`.
   * @default null
   */
  edited?: Record<string, unknown> | null;
  /**
   * With `answer` (a raw `interrupt()`): the value the graph receives, any JSON, checked against the interrupt's `response_schema` when it has one.
   * @default null
   */
  value?: JsonValue;
  /**
   * @maxLength 2000
   * @default null
   */
  comment?: string | null;
  /**
   * From the consent event.
   * @minLength 1
   * @maxLength 64
   */
  approval_id: string;
} & (
  | {
      decision: "edit";
      /** Open: the schema does not fix these values, hence `unknown`. */
      edited: Record<string, unknown>;
      value?: null;
    }
  | {
      decision: "answer";
      edited?: null;
      /** With `answer` (a raw `interrupt()`): the value the graph receives, any JSON, checked against the interrupt's `response_schema` when it has one. */
      value: JsonValue;
    }
  | {
      decision: "respond";
      edited?: null;
      value?: null;
      /** @minLength 1 */
      comment: string;
    }
  | {
      decision: "approve" | "reject";
      edited?: null;
      value?: null;
    }
);

/**
 * Sent first when a client rejoins from an id older than the stored log (retention): the
 * events up to ``seq`` are gone; the stream goes on from ``first_available_seq``. Not part of a
 * run: ``run_id`` is empty.
 */
export interface ResyncEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "resync";
  /** The oldest stored event after the gap; None if none is stored yet. */
  first_available_seq: number | null;
}

export interface RunStartedEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "run_started";
  graph: string;
  trigger: "message" | "resume" | "expiry" | "recovery" | "retry";
}

export interface StepEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "step";
  /** The graph node that started. */
  node: string;
  /** What it does, for people. */
  label: string;
}

export interface ThreadDetail {
  thread_id: string;
  consent_policy: "ask" | "auto_approve" | "auto_reject";
  graph: string;
  project_id: string;
  note_id: string | null;
  title: string;
  status: "idle" | "running" | "awaiting_consent";
  last_reason: "completed" | "interrupted" | "expired" | "failed" | "cancelled" | "step_limit" | "timeout" | "budget_exhausted" | null;
  /** @format date-time */
  created_at: string;
  /** @format date-time */
  updated_at: string;
  pending_consents: ConsentEvent[];
  tokens_used: number;
}

export interface ThreadList {
  threads: ThreadSummary[];
}

export interface ThreadSummary {
  thread_id: string;
  consent_policy: "ask" | "auto_approve" | "auto_reject";
  graph: string;
  project_id: string;
  note_id: string | null;
  title: string;
  status: "idle" | "running" | "awaiting_consent";
  last_reason: "completed" | "interrupted" | "expired" | "failed" | "cancelled" | "step_limit" | "timeout" | "budget_exhausted" | null;
  /** @format date-time */
  created_at: string;
  /** @format date-time */
  updated_at: string;
}

export interface TokenEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "token";
  message_id: string;
  /** Text to append to the message with this id. */
  delta: string;
}

/** Model tokens, as the provider reported them (the offline model counts words). */
export interface TokenUsage {
  /** @minimum 0 */
  input_tokens: number;
  /** @minimum 0 */
  output_tokens: number;
}

/**
 * A tool call a model asked for in the thread, with its result once the tool returned: what
 * its ``tool_call`` and ``tool_result`` events told.
 */
export interface ToolCall {
  tool_call_id: string;
  /** The run that told the call. */
  run_id: string;
  /** The tool. */
  name: string;
  /**
   * The arguments the model gave it (as last edited).
   * Open: the schema does not fix these values, hence `unknown`.
   */
  args: Record<string, unknown>;
  /** The assistant message that asked for it; null for a result whose call was never told. */
  message_id: string | null;
  /** `pending`: no result yet (the run stopped before the tool ran, or waits for a consent); `success` or `error`: the result's. */
  status: "pending" | "success" | "error";
  /** The result as its `tool_result` carried it (cut when `truncated`). */
  content: string | null;
  /** The whole result's length in characters. */
  content_chars: number | null;
  truncated: boolean;
  /** @format date-time */
  created_at: string;
  /**
   * When its result was stored.
   * @format date-time
   */
  finished_at: string | null;
  /** The transcript message (`GET /v1/threads/{id}/messages`) said last before the call; null: before the first. */
  after_message_id: string | null;
}

/**
 * The model asked for a tool: one event per call of its message (a message with calls and no
 * text is told by these alone, never as a ``message``). Kept apart from the transcript, with its
 * result, at ``GET /v1/threads/{thread_id}/tool-calls``. The same ``tool_call_id`` told again
 * (its arguments edited before it ran) replaces the call told before.
 */
export interface ToolCallEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "tool_call";
  /** The model's id of the call; its `tool_result` names it. */
  tool_call_id: string;
  /** The tool asked for. */
  name: string;
  /**
   * The arguments the model gave it.
   * Open: the schema does not fix these values, hence `unknown`.
   */
  args: Record<string, unknown>;
  /** The assistant message that asked for it. */
  message_id: string;
}

/**
 * The thread's tool calls in the order the model asked for them; apart from its transcript,
 * which keeps what the user and the assistant said.
 */
export interface ToolCallList {
  thread_id: string;
  tool_calls: ToolCall[];
}

/**
 * A tool returned (or failed): what the model reads next. ``content`` is cut past 8,000
 * characters; ``content_chars`` states the whole result's size.
 */
export interface ToolResultEvent {
  thread_id: string;
  run_id: string;
  /**
   * Per-thread number of the stored event, one more than the stored event before it (a `token`, never stored, carries that event's); also the SSE `id:`.
   * @minimum 1
   */
  seq: number;
  /** @format date-time */
  ts: string;
  type: "tool_result";
  /** The `tool_call` this answers. */
  tool_call_id: string;
  /** The tool that ran (empty when the graph did not name it). */
  name: string;
  /** `error`: the tool failed; `content` is what the model is told about it. */
  status: "success" | "error";
  /** The result as text, cut when `truncated`. */
  content: string;
  /**
   * The whole result's length in characters.
   * @minimum 0
   */
  content_chars: number;
  /** `content` holds only the first characters of it. */
  truncated: boolean;
}

/** The `type` of every SSE event (also its SSE `event:` name). */
export type ConsentryEventType = ConsentryEvent["type"];

/** The event of one `type`: `ConsentryEventOf<"final">` is `FinalEvent`. */
export type ConsentryEventOf<T extends ConsentryEventType> = Extract<ConsentryEvent, { type: T }>;
