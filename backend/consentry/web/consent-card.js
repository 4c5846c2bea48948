// A consent card: what the graph asks, its expiry as a countdown ("No deadline" when it has
// none), and the decisions it allows. The consent kit's kinds show their proposal (the note kinds
// as a diff) with approve, edit and reject; a raw `interrupt(value)` (kind `interrupt`) shows the
// value and an answer box (answer-form.js); a reviewed tool call (kind `tool_call`) shows the tool
// and its arguments (tool-call-card.js). The buttons lock on the first click, so a double click
// sends one decision. A card decided elsewhere (another tab, the inbox, the terminal) says who
// decided, and locks.

import { answerForm } from "./answer-form.js";
import { isUnreachable, newIdempotencyKey } from "./consentry.js";
import { hunks, lineDiff, pairChangedLines } from "./diff.js";
import { countdown, h } from "./dom.js";
import { capitalized, isCurrentUser, personName } from "./people.js";
import { toolCallView } from "./tool-call-card.js";

/** Refusals that end the card: anything else (a network error, 503, an invalid edit or answer)
 * leaves it open to try again. */
const FINAL_REFUSALS = new Set([
  "already_decided", "consent_expired", "approval_not_pending", "no_pending_consent",
  "approval_not_found", "thread_not_found",
]);

const STATUS_TEXT = {
  approve: "Approved",
  edit: "Approved with your edit",
  reject: "Rejected: nothing was changed.",
  answer: "Answered.",
};

const TOOL_STATUS_TEXT = {
  approve: "Approved: the tool runs.",
  edit: "Approved with your arguments: the tool runs with them.",
  reject: "Rejected: the tool does not run.",
  respond: "Replied: the model gets your reply; the tool does not run.",
};

/** What a decision sent from this card did, in words. */
export function decidedText(kind, decision) {
  return (kind === "tool_call" ? TOOL_STATUS_TEXT[decision] : null) ?? STATUS_TEXT[decision] ?? "Sent.";
}

const EXPIRED_TEXT = "This request expired: nothing was changed.";

/**
 * @param {object} consent a `consent` event, or an inbox approval (same fields)
 * @param {object} options
 * @param {(decision: string, extra: {edited?: object, comment?: string, value?: unknown}) => Promise<string>} options.send
 *   sends the decision; resolves with a line to show, rejects with a ConsentryError
 * @param {object|null} [options.note] the open note, to warn when it moved past the proposal
 * @param {object|null} [options.batch] kind `tool_call`: the `toolCallBatch` the card belongs to
 */
export function consentCard(consent, { send, note = null, batch = null }) {
  const status = h("p.consent-status", { role: "status", tabindex: "-1" });
  const clock = consent.expires_at
    ? h("p.countdown", { dataset: { expiresAt: consent.expires_at } })
    : h("p.countdown.no-deadline", {}, "No deadline");
  const card = h(
    "article.consent-card",
    { dataset: { approvalId: consent.approval_id, kind: consent.kind, state: "pending" }, tabindex: "-1" },
    h("h3.consent-title", {}, consent.title),
  );

  let locked = false;
  const setLocked = (value) => {
    locked = value;
    for (const control of card.querySelectorAll("button:not(.diff-fold), textarea, input, select")) control.disabled = value;
  };
  const lock = () => {
    setLocked(true);
    status.focus(); // the focused button is disabled: keep the keyboard user's place
  };
  let view = null;
  /** Lock the card while `sending()` goes, and say how it went: true when it was decided. */
  const track = async (sending, decision) => {
    if (locked) return false; // the second click of a double click
    lock();
    card.dataset.state = "sending";
    status.classList.remove("error");
    status.textContent = "Sending…";
    try {
      const line = await sending();
      card.dataset.state = "decided";
      status.textContent = line ?? decidedText(consent.kind, decision);
      return true;
    } catch (error) {
      status.textContent = refusalText(error);
      status.classList.add("error");
      if (FINAL_REFUSALS.has(error?.code)) {
        card.dataset.state = "refused";
      } else {
        card.dataset.state = "pending"; // nothing was decided: try again
        setLocked(false);
      }
      view.refused?.(error);
      return false;
    }
  };
  // One idempotency key per decision: sent again after a lost answer, it is answered once.
  const keys = new Map();
  const decide = (decision, extra) => {
    if (locked) return;
    const fingerprint = JSON.stringify([decision, extra]);
    if (!keys.has(fingerprint)) keys.set(fingerprint, newIdempotencyKey());
    track(() => send(decision, { ...extra, idempotencyKey: keys.get(fingerprint) }), decision);
  };
  const viewOf = consent.kind === "interrupt" ? interruptView : consent.kind === "tool_call" ? toolCallView : kitView;
  view = viewOf(consent, { decide, note, batch });
  const parts = [...view.body, clock, ...view.editors, h("div.consent-actions", {}, ...view.actions), status];
  card.append(...parts.filter(Boolean));
  card.track = track;
  card.choice = view.choice ?? (() => null);
  card.picked = view.picked ?? (() => null);
  card.regroup = view.regroup;

  card.expire = () => {
    if (locked) return;
    lock();
    card.dataset.state = "expired";
    status.textContent = EXPIRED_TEXT;
  };
  card.lock = (text) => {
    lock();
    card.dataset.state = "decided";
    status.textContent = text;
  };
  /** The approval changed elsewhere (GET /v1/approvals/stream): say who decided, and lock.
   * A decision this card is sending, or has sent, tells its own outcome. */
  card.settle = (approval) => {
    if (approval.status === "pending" || ["sending", "decided"].includes(card.dataset.state)) return;
    if (approval.status === "expired") {
      card.expire();
      return;
    }
    lock();
    status.classList.remove("error");
    card.dataset.state = approval.status === "cancelled" ? "expired" : "decided";
    card.dataset.decidedBy = approval.decided?.decided_by ?? "";
    status.textContent = outcomeText(approval.status, approval.decided, { elsewhere: true });
    batch?.changed();
  };
  tick(card);
  return card;
}

/** The consent kit's kinds: the proposal (a diff for the note kinds), Approve, Edit… (for the
 * kinds with an editor), and Reject with an optional comment. */
function kitView(consent, { decide, note }) {
  const allowed = new Set(consent.allowed_decisions);
  const comment = h("input.consent-comment", {
    type: "text",
    placeholder: "Comment (optional)",
    "aria-label": "Comment on your decision",
    maxLength: 2000,
  });
  const editor = editorFor(consent);
  const actions = [];
  const withComment = () => (comment.value.trim() ? { comment: comment.value.trim() } : {});
  // An open editor with changes is what the person means to approve: Approve sends it.
  const editing = () => editor.element !== null && !editor.element.hidden && editor.changed();
  if (allowed.has("approve")) {
    const approve = h("button.approve.primary", {
      type: "button",
      onclick: () => (editing()
        ? decide("edit", { edited: editor.edited(), ...withComment() })
        : decide("approve", withComment())),
    }, "Approve");
    editor.onChange(() => { approve.textContent = editing() ? "Approve my edit" : "Approve"; });
    actions.push(approve);
  }
  if (allowed.has("edit") && editor.element) {
    actions.push(h("button.edit", {
      type: "button",
      "aria-expanded": "false",
      onclick: (e) => {
        editor.element.hidden = false;
        e.currentTarget.setAttribute("aria-expanded", "true");
        editor.focus();
      },
    }, "Edit…"));
    editor.onSend(() => decide("edit", { edited: editor.edited(), ...withComment() }));
  }
  if (allowed.has("reject")) {
    actions.push(
      h("button.reject.danger", {
        type: "button",
        title: "Nothing is changed",
        onclick: () => decide("reject", withComment()),
      }, "Reject"),
      comment,
    );
  }
  return { body: [staleWarning(consent, note), proposalView(consent)], editors: [editor.element], actions };
}

/** A raw `interrupt(value)`: the value as JSON, and an answer box; Answer sends what it reads.
 * An answer the server finds misfit (422 `invalid_answer`) shows its errors; the card stays. */
function interruptView(consent, { decide }) {
  const value = consent.value ?? consent.proposal?.value ?? null;
  const form = answerForm(consent.response_schema ?? null);
  const answer = h("button.answer.primary", {
    type: "button",
    onclick: () => {
      const read = form.read();
      if ("value" in read) decide("answer", { value: read.value });
      else form.focus();
    },
  }, "Answer");
  form.element.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && e.target.tagName === "INPUT" && !e.isComposing) {
      e.preventDefault();
      answer.click();
    }
  });
  return {
    body: [h("pre.proposal-json.interrupt-value", { "aria-label": "What the graph asks, as JSON" }, JSON.stringify(value, null, 2))],
    editors: [form.element],
    actions: [answer],
    refused: (error) => {
      if (error?.code === "invalid_answer") form.showErrors(error.details?.errors ?? []);
    },
  };
}

/** What happened to a consent, in words: "You approved this elsewhere.", "Ada rejected this:
 * nothing was changed." */
export function outcomeText(statusName, decided, { elsewhere = false } = {}) {
  if (statusName === "expired") return EXPIRED_TEXT;
  if (statusName === "cancelled") return "Cancelled: the conversation moved on; nothing was changed.";
  const who = capitalized(personName(decided?.decided_by, decided?.decided_by_name));
  const where = elsewhere && isCurrentUser(decided?.decided_by) ? " elsewhere" : "";
  if (statusName === "approved") return `${who} approved this${where}.`;
  if (statusName === "edited") return `${who} approved this with an edit${where}.`;
  if (statusName === "rejected") return `${who} rejected this${where}: nothing was changed.`;
  if (statusName === "answered") return `${who} answered this${where}.`;
  return `${who} decided this${where}.`;
}

function refusalText(error) {
  if (error?.code === "already_decided") {
    const decided = error.details?.decided;
    return `${outcomeText(decided?.status ?? error.details?.status, decided)} Nothing more was sent.`;
  }
  if (error?.code === "consent_expired") return EXPIRED_TEXT;
  if (isUnreachable(error)) return "Can't reach Consentry: nothing was decided. Try again.";
  return error?.message ?? String(error);
}

function staleWarning(consent, note) {
  const base = consent.proposal?.base_version;
  if (consent.kind !== "note_edit" || !note || note.note_id !== consent.proposal.note_id) return null;
  if (base === undefined || note.version === base) return null;
  return h("p.warning", {},
    `The note moved on since this was drafted (version ${base}, now ${note.version}): `
    + "approving writes nothing. Ask the tutor again to draft on the current version.");
}

/** The proposal as people read it: a diff for the note kinds, the JSON for other graphs'. */
function proposalView(consent) {
  const p = consent.proposal ?? {};
  if (consent.kind === "note_edit") return diffView(lineDiff(p.base_content, p.proposed_content), `“${p.title}”`);
  if (consent.kind === "note_create") return diffView(lineDiff("", p.content), `new note “${p.title}”`);
  if (consent.kind === "note_delete") return diffView(lineDiff(p.content, ""), `delete “${p.title}”`);
  return h("pre.proposal-json", {}, JSON.stringify(p, null, 2));
}

/** The diff as hunks: changed lines with three lines of context, the rest folded behind a
 * button that unfolds it; changed words marked inside a changed line. */
export function diffView(lines, caption) {
  const added = lines.filter((l) => l.op === "add").length;
  const removed = lines.filter((l) => l.op === "del").length;
  const words = pairChangedLines(lines);
  const list = h("div.diff-lines", { role: "list" });
  for (const part of hunks(lines)) {
    const draw = (line) => diffLine(line, words.get(line.index));
    list.append(...(part.type === "lines" ? part.lines.map(draw) : [foldButton(part.lines, draw)]));
  }
  return h("figure.diff", {},
    h("figcaption", {}, `${caption}: ${added} line${added === 1 ? "" : "s"} added, ${removed} removed`),
    list);
}

function foldButton(lines, draw) {
  const count = lines.length;
  const first = lines[0].newNo ?? lines[0].oldNo;
  const button = h("button.diff-fold", {
    type: "button",
    role: "listitem",
    title: `Show lines ${first}–${first + count - 1}`,
    onclick: () => {
      const drawn = lines.map(draw);
      button.replaceWith(...drawn);
      drawn[0].tabIndex = -1; // the keyboard's place: where the button was
      drawn[0].focus();
    },
  }, `… ${count} unchanged line${count === 1 ? "" : "s"}`);
  return button;
}

const MARK = { add: "+", del: "−", same: " " };
const LABEL = { add: "added", del: "removed", same: null };

function diffLine(line, segments) {
  const text = segments
    ? segments.map((s) => (s.changed ? h("span.word", {}, s.text) : s.text))
    : line.text;
  const body = line.op === "add" ? h("ins", {}, text) : line.op === "del" ? h("del", {}, text) : text;
  return h(`div.diff-line.${line.op}`,
    { role: "listitem", "aria-label": LABEL[line.op], dataset: { line: line.newNo ?? line.oldNo } },
    h("span.diff-mark", { "aria-hidden": "true" }, MARK[line.op]),
    body);
}

/** The edit form: pre-filled with the proposal, sending the kind's edit schema. */
function editorFor(consent) {
  const p = consent.proposal ?? {};
  let content = null;
  let title = null;
  if (consent.kind === "note_edit") content = p.proposed_content;
  else if (consent.kind === "note_create") {
    content = p.content;
    title = p.title;
  }
  if (content === null) {
    return { element: null, edited: null, changed: () => false, onSend: () => {}, onChange: () => {}, focus: () => {} };
  }
  const send = h("button.edit-send.primary", { type: "button" }, "Save my version");
  const cancel = h("button.edit-cancel", { type: "button", title: "Drop my changes" }, "Cancel");
  const titleInput = title === null ? null
    : h("input.edit-title", { type: "text", value: title, "aria-label": "Title of the new note" });
  const area = h("textarea.edit-content", { rows: 10, "aria-label": "Your version of the note" });
  area.value = content;
  const element = h("div.consent-editor", { hidden: true }, titleInput, area, h("div.row", {}, send, cancel));
  const changeHandlers = [];
  const changed = () => changeHandlers.forEach((handler) => handler());
  for (const field of [titleInput, area]) field?.addEventListener("input", changed);
  cancel.addEventListener("click", () => {
    // Cancel drops the edit: the proposal is what Approve then sends
    area.value = content;
    if (titleInput) titleInput.value = title;
    element.hidden = true;
    changed();
    const opener = element.closest(".consent-card")?.querySelector("button.edit");
    opener?.setAttribute("aria-expanded", "false");
    opener?.focus();
  });
  return {
    element,
    edited: () => {
      const edited = { content: area.value };
      if (titleInput && titleInput.value.trim() && titleInput.value !== title) edited.title = titleInput.value.trim();
      return edited;
    },
    changed: () => area.value !== content || (titleInput !== null && titleInput.value !== title),
    onSend: (handler) => send.addEventListener("click", handler),
    onChange: (handler) => changeHandlers.push(handler),
    focus: () => area.focus(),
  };
}

/** Update every visible countdown; expire the cards whose time is up. */
export function tick(root = document) {
  const now = Date.now();
  const targets = root.matches?.(".consent-card") ? [root] : root.querySelectorAll(".consent-card");
  for (const card of targets) {
    const clock = card.querySelector(".countdown");
    if (!clock) continue;
    if (!clock.dataset.expiresAt) { // no deadline: it waits until someone decides
      clock.hidden = !["pending", "sending"].includes(card.dataset.state);
      continue;
    }
    const left = (Date.parse(clock.dataset.expiresAt) - now) / 1000;
    if (!["pending", "sending"].includes(card.dataset.state)) {
      clock.hidden = true;
    } else if (left <= 0) {
      clock.textContent = "Expired";
      card.expire();
    } else {
      clock.textContent = `Expires in ${countdown(left)}`;
    }
  }
}
