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
  allowed_decisions: ("approve" | "edit" | "reject")[];
  /** @format date-time */
  created_at: string;
  /** @format date-time */
  expires_at: string;
  status: "pending" | "approved" | "edited" | "rejected" | "expired" | "cancelled";
  /** None while pending. */
  decided: RecordedDecision | null;
}

/**
 * ``GET /v1/approvals/stream``, ``event: approval``: one of the caller's approvals changed.
 * ``approval`` is as it is when the frame was read (apply frames by ``approval_id``).
 */
export interface ApprovalChange {
  change: "requested" | "decided" | "expired" | "cancelled";
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
  /** `run_started`, `run_ended`, `consent_requested`, `consent_decided`, `consent_expired`, `consent_cancelled`, `effect_applied` or `error`. */
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
 * Start a run: exactly one of ``message`` or ``resume``.
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
   * Not blank.
   * @pattern \S
   * @default null
   */
  message?: string | null;
  /**
   * A decision on a pending consent, or a list of decisions on several pending consents of the thread (parallel branches), applied together; each consent once (422 `duplicate_decision`).
   * @minItems 1
   * @maxItems 50
   * @default null
   */
  resume?: ResumeDecision | ResumeDecision[] | null;
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
      resume?: null;
    }
  | {
      thread_id: string;
      message?: null;
      /**
       * @minItems 1
       * @maxItems 50
       */
      resume: ResumeDecision | ResumeDecision[];
    }
);

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
  /** The LangGraph interrupt id; send it back in `resume`. */
  approval_id: string;
  /** What is asked, e.g. `note_edit`; fixes the proposal schema. */
  kind: string;
  title: string;
  /**
   * Structured proposal; for `note_edit` see NoteEditProposal.
   * Open: the schema does not fix these values, hence `unknown`.
   */
  proposal: Record<string, unknown>;
  allowed_decisions: ("approve" | "edit" | "reject")[];
  /** @format date-time */
  expires_at: string;
}

/** One kind of consent a graph may ask for, with the JSON Schemas of its payloads. */
export interface ConsentKindDetail {
  /** The graph that asks it (the `graph` of `POST /v1/chat`). */
  graph: string;
  /** The `kind` of its `consent` events. */
  kind: string;
  description: string;
  allowed_decisions: ("approve" | "edit" | "reject")[];
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
  status: "pending" | "approved" | "edited" | "rejected" | "expired" | "cancelled";
}

/**
 * A decision on one consent (the body of ``POST /v1/approvals/{id}/decision``).
 * Closed: the server rejects properties not declared here.
 */
export type DecisionRequest = {
  decision: "approve" | "edit" | "reject";
  /**
   * With `edit`: the person's version, in the kind's edit schema.
   * Open: the schema does not fix these values, hence `unknown`.
   * @default null
   */
  edited?: Record<string, unknown> | null;
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
    }
  | {
      decision: "approve" | "reject";
      edited?: null;
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
  status: "pending" | "approved" | "edited" | "rejected" | "expired" | "cancelled";
  /** `approve`, `edit`, `reject`, or `expire`. */
  decision: string | null;
  /** `tenant/user`, `policy` or `system`. */
  decided_by: string | null;
  /** The display name of the person who decided, as it was at decision time (`CONSENTRY_API_KEYS` `token=tenant:user:Display Name`); null for `policy`, `system`, and a key without a name. */
  decided_by_name: string | null;
  /** @format date-time */
  decided_at: string | null;
  /** Open: the schema does not fix these values, hence `unknown`. */
  edited: Record<string, unknown> | null;
  comment: string | null;
}

/**
 * A person's answer to a ``consent`` event.
 * Closed: the server rejects properties not declared here.
 */
export type ResumeDecision = {
  /**
   * From the consent event.
   * @minLength 1
   * @maxLength 64
   */
  approval_id: string;
  decision: "approve" | "edit" | "reject";
  /**
   * With `edit`: the person's version, in the consent kind's edit schema (for `note_edit`: `{content, title?}`).
   * Open: the schema does not fix these values, hence `unknown`.
   * @default null
   */
  edited?: Record<string, unknown> | null;
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
    }
  | {
      decision: "approve" | "reject";
      edited?: null;
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

/** The `type` of every SSE event (also its SSE `event:` name). */
export type ConsentryEventType = ConsentryEvent["type"];

/** The event of one `type`: `ConsentryEventOf<"final">` is `FinalEvent`. */
export type ConsentryEventOf<T extends ConsentryEventType> = Extract<ConsentryEvent, { type: T }>;
