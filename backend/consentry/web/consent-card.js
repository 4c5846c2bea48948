// A consent card: what the graph asks, its expiry as a countdown ("No deadline" when it has
// none), and the decisions it allows, in one row. The consent kit's kinds show their proposal (the
// note kinds as a diff) with approve, edit and reject; a raw `interrupt(value)` (kind `interrupt`)
// shows the question and an answer box (interrupt-card.js); a reviewed tool call (kind
// `tool_call`) shows the tool and its arguments (tool-call-card.js). The buttons lock on the first
// click, so a double click sends one decision. A card decided elsewhere (another tab, the inbox,
// the terminal) says who decided, and locks. Once decided, a note kind's card shows what was
// written (the proposal, or the person's edit) instead of the proposal, or that nothing was.

import { EXPIRED_TEXT, decidedText, outcomeText, refusalText } from "./consent-words.js";
import { newIdempotencyKey } from "./consentry.js";
import { lineDiff } from "./diff.js";
import { diffView, removalNotice } from "./diff-view.js";
import { countdown, h } from "./dom.js";
import { interruptView } from "./interrupt-card.js";
import { toolCallView } from "./tool-call-card.js";

/** Refusals that end the card: anything else (a network error, 503, an invalid edit or answer)
 * leaves it open to try again. */
const FINAL_REFUSALS = new Set([
  "already_decided", "consent_expired", "approval_not_pending", "no_pending_consent",
  "approval_not_found", "thread_not_found",
]);

/** The status a decision gives its consent (the API's `status`). */
const STATUS_OF = { approve: "approved", edit: "edited", reject: "rejected", answer: "answered", respond: "answered" };

/**
 * @param {object} consent a `consent` event, or an inbox approval (same fields)
 * @param {object} options
 * @param {(decision: string, extra: {edited?: object, comment?: string, value?: unknown}) => Promise<string>} options.send
 *   sends the decision; resolves with a line to show, rejects with a ConsentryError
 * @param {object|null} [options.note] the open note, to warn when it moved past the proposal
 * @param {object|null} [options.batch] kind `tool_call`: the `toolCallBatch` the card belongs to
 * @param {(card: HTMLElement) => void} [options.settled] told once the card waits no more
 *   (decided here or elsewhere, expired, refused for good)
 */
export function consentCard(consent, { send, note = null, batch = null, settled = () => {} }) {
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
    // the focused button is disabled: keep the keyboard user's place (a card locked by news
    // from elsewhere leaves the focus where it is)
    const focused = card.contains(document.activeElement);
    setLocked(true);
    if (focused) status.focus();
  };
  let view = null;
  /** It waits no more: `state` on the card, and what the consent's `status` means for it. */
  const finish = (state, statusName, decided = null) => {
    card.dataset.state = state;
    view.settled?.(statusName, decided);
    actions.hidden = Boolean(view.hideActionsOnceSettled); // its outcome says what was done
    tick(card); // no countdown any more
    settled(card);
  };
  /** Lock the card while `sending()` goes, and say how it went: true when it was decided. */
  const track = async (sending, decision, extra = {}) => {
    if (locked) return false; // the second click of a double click
    lock();
    card.dataset.state = "sending";
    status.classList.remove("error");
    status.textContent = "Sending…";
    try {
      const line = await sending();
      status.textContent = line ?? decidedText(consent.kind, decision);
      finish("decided", STATUS_OF[decision], { decision, edited: extra.edited ?? null, value: extra.value ?? null });
      return true;
    } catch (error) {
      status.textContent = refusalText(error);
      status.classList.add("error");
      view.refused?.(error);
      if (FINAL_REFUSALS.has(error?.code)) {
        const decided = error.details?.decided ?? null;
        const statusName = error.code === "consent_expired" ? "expired" : decided?.status ?? error.details?.status;
        finish("refused", statusName, decided);
      } else {
        card.dataset.state = "pending"; // nothing was decided: try again
        setLocked(false);
      }
      return false;
    }
  };
  // One idempotency key per decision: sent again after a lost answer, it is answered once.
  const keys = new Map();
  const decide = (decision, extra) => {
    if (locked) return;
    const fingerprint = JSON.stringify([decision, extra]);
    if (!keys.has(fingerprint)) keys.set(fingerprint, newIdempotencyKey());
    track(() => send(decision, { ...extra, idempotencyKey: keys.get(fingerprint) }), decision, extra);
  };
  const viewOf = consent.kind === "interrupt" ? interruptView : consent.kind === "tool_call" ? toolCallView : kitView;
  view = viewOf(consent, { decide, note, batch });
  const actions = h("div.consent-actions", {}, ...view.actions);
  const parts = [...view.body, clock, ...view.editors, actions, status];
  card.append(...parts.filter(Boolean));
  card.track = track;
  card.choice = view.choice ?? (() => null);
  card.picked = view.picked ?? (() => null);
  card.regroup = view.regroup;
  /** The run's `note` event: what a decision wrote (the card checks that it is its own). */
  card.written = (noteEvent) => view.written?.(noteEvent, card.dataset.state);

  card.expire = () => {
    if (locked) return;
    lock();
    status.textContent = EXPIRED_TEXT;
    finish("expired", "expired");
  };
  /** Decided by other means than its buttons (a message that rejected it, say). */
  card.lock = (text, statusName = "rejected") => {
    lock();
    status.textContent = text;
    finish("decided", statusName);
  };
  /** The approval changed elsewhere (GET /v1/approvals/stream, or an inbox listing it decided):
   * say who decided, and lock. A decision this card is sending, or has sent, tells its own
   * outcome. */
  card.settle = (approval, { elsewhere = true } = {}) => {
    if (approval.status === "pending" || ["sending", "decided"].includes(card.dataset.state)) return;
    if (approval.status === "expired") {
      card.expire();
      return;
    }
    lock();
    status.classList.remove("error");
    card.dataset.decidedBy = approval.decided?.decided_by ?? "";
    status.textContent = outcomeText(approval.status, approval.decided, { elsewhere });
    const closed = ["cancelled", "superseded"].includes(approval.status);
    finish(closed ? "expired" : "decided", approval.status, approval.decided);
    batch?.changed();
  };
  tick(card);
  return card;
}

/** The consent kit's kinds: the proposal (a diff for the note kinds), and one row of actions:
 * Approve, Edit… (for the kinds with an editor), Reject with an optional comment. While the
 * editor is open, Edit… gives its place to Cancel (drop my changes, back to the proposal), and
 * Approve, once the text changed, reads "Approve my edit" and sends it. Once decided, the
 * proposal gives its place to what was written. */
function kitView(consent, { decide, note }) {
  const allowed = new Set(consent.allowed_decisions);
  const comment = h("input.consent-comment", {
    type: "text",
    placeholder: "Comment (optional)",
    "aria-label": "Comment on your decision",
    maxLength: 2000,
  });
  const editor = allowed.has("edit") ? editorFor(consent) : null;
  const actions = [];
  const withComment = () => (comment.value.trim() ? { comment: comment.value.trim() } : {});
  // An open editor with changes is what the person means to approve: Approve sends it.
  const editing = () => editor !== null && !editor.element.hidden && editor.changed();
  if (allowed.has("approve")) {
    const approve = h("button.approve.primary", {
      type: "button",
      onclick: () => (editing()
        ? decide("edit", { edited: editor.edited(), ...withComment() })
        : decide("approve", withComment())),
    }, "Approve");
    editor?.onChange(() => { approve.textContent = editing() ? "Approve my edit" : "Approve"; });
    actions.push(approve);
  }
  if (editor) {
    const open = h("button.edit", {
      type: "button",
      "aria-expanded": "false",
      "aria-controls": editor.element.id,
      onclick: () => {
        editor.show();
        open.setAttribute("aria-expanded", "true");
        open.hidden = true;
        cancel.hidden = false;
        editor.focus();
      },
    }, "Edit…");
    const cancel = h("button.edit-cancel", {
      type: "button",
      hidden: true,
      title: "Drop my changes: back to the proposal",
      onclick: () => {
        editor.reset(); // the proposal is what Approve then sends
        open.setAttribute("aria-expanded", "false");
        open.hidden = false;
        cancel.hidden = true;
        open.focus();
      },
    }, "Cancel");
    actions.push(open, cancel);
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
  let shown = proposalView(consent);
  let outcome = null; // [status, decided] once decided
  let written = null; // the `note` event of what the decision wrote
  const redraw = () => {
    const next = decidedView(consent, ...outcome, written);
    shown.replaceWith(next);
    shown = next;
  };
  return {
    body: [staleWarning(consent, note), shown],
    editors: [editor?.element],
    actions,
    hideActionsOnceSettled: true,
    settled: (statusName, decided) => {
      outcome = [statusName, decided];
      // What was written shows instead of the editor, unless it holds text of the person's that
      // was not written (decided elsewhere meanwhile): that stays, to copy.
      if (editor?.changed() && decided?.edited?.content !== editor.edited().content) editor.keep();
      else if (editor) editor.element.hidden = true;
      redraw();
    },
    written: (noteEvent, state) => {
      const writing = outcome === null || ["approved", "edited"].includes(outcome[0]);
      if (written || !writing || !["sending", "decided"].includes(state) || !writes(consent, noteEvent)) return;
      written = noteEvent;
      if (outcome) redraw();
    },
  };
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
  if (consent.kind === "note_edit") {
    const lines = lineDiff(p.base_content, p.proposed_content);
    const diff = diffView(lines, `“${p.title}”`);
    const notice = removalNotice(p, lines.filter((l) => l.op === "del").length);
    return notice ? h("div.proposal", {}, notice, diff) : diff;
  }
  if (consent.kind === "note_create") return diffView(lineDiff("", p.content), `new note “${p.title}”`);
  if (consent.kind === "note_delete") return diffView(lineDiff(p.content, ""), `delete “${p.title}”`);
  return h("pre.proposal-json", {}, JSON.stringify(p, null, 2));
}

/** What a decided proposal wrote, in place of the proposal: the proposal's diff (approved), the
 * diff from the base to the person's text (edited), or the proposal folded away as "Proposed,
 * not written" (rejected, expired, cancelled). `written` is the run's `note` event (the version
 * written), once it came: until then the caption says what was approved. */
function decidedView(consent, statusName, decided, written) {
  const p = consent.proposal ?? {};
  if (statusName !== "approved" && statusName !== "edited") {
    return h("details.not-written", {},
      h("summary", {}, consent.kind.startsWith("note_") ? "Proposed, not written" : "Proposed, not carried out"),
      proposalView(consent));
  }
  const edited = (statusName === "edited" ? decided?.edited : null) ?? {};
  const title = written?.title ?? edited.title ?? p.title;
  const approved = statusName === "edited" ? "Approved with an edit" : "Approved";
  if (consent.kind === "note_edit") {
    const content = written?.content ?? edited.content ?? p.proposed_content;
    const caption = written ? `Written to “${title}” as version ${written.version}` : `${approved} for “${title}”`;
    return diffView(lineDiff(p.base_content, content), caption);
  }
  if (consent.kind === "note_create") {
    const content = written?.content ?? edited.content ?? p.content;
    return diffView(lineDiff("", content), written ? `Written as the new note “${title}”` : `${approved}: new note “${title}”`);
  }
  if (statusName === "edited") return h("pre.proposal-json", { "aria-label": "The edit approved" }, JSON.stringify(edited, null, 2));
  return proposalView(consent);
}

/** Whether a `note` event is the write of this card's proposal: the note it edits, at the version
 * after the one it was drafted on (for a new note: version 1, in its project). */
function writes(consent, noteEvent) {
  const p = consent.proposal ?? {};
  if (consent.kind === "note_edit") return noteEvent.note_id === p.note_id && noteEvent.version === p.base_version + 1;
  if (consent.kind === "note_create") return noteEvent.project_id === p.project_id && noteEvent.version === 1;
  return false;
}

let editors = 0; // the editors drawn: each has its own id (a consent may show in the chat and the inbox)

/** The edit form, pre-filled with the proposal (its buttons are the card's), for the kinds a
 * person edits here (null for the others). */
function editorFor(consent) {
  const p = consent.proposal ?? {};
  let content = null;
  let title = null;
  if (consent.kind === "note_edit") content = p.proposed_content;
  else if (consent.kind === "note_create") {
    content = p.content;
    title = p.title;
  }
  if (content === null) return null;
  const titleInput = title === null ? null
    : h("input.edit-title", { type: "text", value: title, "aria-label": "Title of the new note" });
  const area = h("textarea.edit-content", { rows: 10, "aria-label": "Your version of the note" });
  area.value = content;
  const element = h("div.consent-editor", { id: `consent-editor-${++editors}`, hidden: true }, titleInput, area);
  const changeHandlers = [];
  const changed = () => changeHandlers.forEach((handler) => handler());
  for (const field of [titleInput, area]) field?.addEventListener("input", changed);
  return {
    element,
    edited: () => {
      const edited = { content: area.value };
      if (titleInput && titleInput.value.trim() && titleInput.value !== title) edited.title = titleInput.value.trim();
      return edited;
    },
    changed: () => area.value !== content || (titleInput !== null && titleInput.value !== title),
    show: () => {
      element.hidden = false;
      changed();
    },
    /** Locked with text that was not sent: read-only, so it can still be copied. */
    keep: () => {
      for (const field of [titleInput, area]) {
        if (!field) continue;
        field.disabled = false;
        field.readOnly = true;
      }
    },
    /** Drop the person's changes and close: the proposal again. */
    reset: () => {
      area.value = content;
      if (titleInput) titleInput.value = title;
      element.hidden = true;
      changed();
    },
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
