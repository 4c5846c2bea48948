// A consent card: what the graph asks, as a diff; its expiry as a countdown; approve, edit and
// reject. The buttons lock on the first click, so a double click sends one decision.

import { newIdempotencyKey } from "./consentry.js";
import { lineDiff } from "./diff.js";
import { countdown, h } from "./dom.js";

/** Refusals that end the card: anything else (a network error, 503, an invalid edit) leaves
 * it open to try again. */
const FINAL_REFUSALS = new Set([
  "already_decided", "consent_expired", "approval_not_pending", "no_pending_consent",
  "approval_not_found", "thread_not_found",
]);

const STATUS_TEXT = {
  approve: "Approved",
  edit: "Approved with your edit",
  reject: "Rejected",
};

/**
 * @param {object} consent a `consent` event, or an inbox approval (same fields)
 * @param {object} options
 * @param {(decision: string, extra: {edited?: object, comment?: string}) => Promise<string>} options.send
 *   sends the decision; resolves with a line to show, rejects with a ConsentryError
 * @param {object|null} [options.note] the open note, to warn when it moved past the proposal
 */
export function consentCard(consent, { send, note = null }) {
  const allowed = new Set(consent.allowed_decisions);
  const status = h("p.consent-status", { role: "status", tabindex: "-1" });
  const comment = h("input.consent-comment", {
    type: "text",
    placeholder: "Comment (optional)",
    "aria-label": "Comment on your decision",
    maxLength: 2000,
  });
  const editor = editorFor(consent);
  const actions = h("div.consent-actions");
  const card = h(
    "article.consent-card",
    { dataset: { approvalId: consent.approval_id, kind: consent.kind, state: "pending" }, tabindex: "-1" },
    h("h3.consent-title", {}, consent.title),
    staleWarning(consent, note),
    proposalView(consent),
    h("p.countdown", { dataset: { expiresAt: consent.expires_at } }),
    editor.element,
    actions,
    status,
  );

  let locked = false;
  const setLocked = (value) => {
    locked = value;
    for (const button of card.querySelectorAll("button")) button.disabled = value;
    comment.disabled = value;
  };
  const lock = () => {
    setLocked(true);
    status.focus(); // the focused button is disabled: keep the keyboard user's place
  };
  // One idempotency key per decision: sent again after a lost answer, it is answered once.
  const keys = new Map();
  const decide = async (decision, extra) => {
    if (locked) return; // the second click of a double click
    lock();
    card.dataset.state = "sending";
    status.classList.remove("error");
    status.textContent = "Sending…";
    const fingerprint = JSON.stringify([decision, extra]);
    if (!keys.has(fingerprint)) keys.set(fingerprint, newIdempotencyKey());
    try {
      const line = await send(decision, { ...extra, idempotencyKey: keys.get(fingerprint) });
      card.dataset.state = "decided";
      status.textContent = line ?? STATUS_TEXT[decision];
    } catch (error) {
      status.textContent = refusalText(error);
      status.classList.add("error");
      if (FINAL_REFUSALS.has(error?.code)) {
        card.dataset.state = "refused";
      } else {
        card.dataset.state = "pending"; // nothing was decided: try again
        setLocked(false);
      }
    }
  };
  const withComment = () => (comment.value.trim() ? { comment: comment.value.trim() } : {});
  if (allowed.has("approve")) {
    actions.append(h("button.approve.primary", { type: "button", onclick: () => decide("approve", withComment()) }, "Approve"));
  }
  if (allowed.has("edit") && editor.edited) {
    actions.append(h("button.edit", {
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
    actions.append(
      h("button.reject.danger", { type: "button", onclick: () => decide("reject", withComment()) }, "Reject"),
      comment,
    );
  }
  card.expire = () => {
    if (locked) return;
    lock();
    card.dataset.state = "expired";
    status.textContent = "This request expired: nothing was changed.";
  };
  card.lock = (text) => {
    lock();
    card.dataset.state = "decided";
    status.textContent = text;
  };
  tick(card);
  return card;
}

function refusalText(error) {
  if (error?.code === "already_decided") {
    const decided = error.details?.decided;
    const who = decided?.decided_by ? ` by ${decided.decided_by}` : "";
    return `Already decided${who}: ${decided?.status ?? "decided"}. Nothing more was sent.`;
  }
  if (error?.code === "consent_expired") return "This request expired: nothing was changed.";
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

function diffView(lines, caption) {
  const added = lines.filter((l) => l.op === "add").length;
  const removed = lines.filter((l) => l.op === "del").length;
  return h("figure.diff", {},
    h("figcaption", {}, `${caption}: ${added} line${added === 1 ? "" : "s"} added, ${removed} removed`),
    h("div.diff-lines", { role: "list" }, lines.map((line) => h(
      `div.diff-line.${line.op}`,
      { role: "listitem", "aria-label": line.op === "add" ? "added" : line.op === "del" ? "removed" : null },
      h("span.diff-mark", { "aria-hidden": "true" }, line.op === "add" ? "+" : line.op === "del" ? "−" : " "),
      line.op === "add" ? h("ins", {}, line.text) : line.op === "del" ? h("del", {}, line.text) : line.text,
    ))),
  );
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
  const send = h("button.edit-send.primary", { type: "button" }, "Save my version");
  const cancel = h("button.edit-cancel", { type: "button" }, "Cancel");
  cancel.addEventListener("click", () => {
    const opener = element.closest(".consent-card")?.querySelector("button.edit");
    opener?.setAttribute("aria-expanded", "false");
    opener?.focus();
  });
  if (content === null) return { element: null, edited: null, onSend: () => {}, focus: () => {} };
  const titleInput = title === null ? null
    : h("input.edit-title", { type: "text", value: title, "aria-label": "Title of the new note" });
  const area = h("textarea.edit-content", { rows: 10, "aria-label": "Your version of the note" });
  area.value = content;
  const element = h("div.consent-editor", { hidden: true }, titleInput, area, h("div.row", {}, send, cancel));
  cancel.addEventListener("click", () => { element.hidden = true; });
  return {
    element,
    edited: () => {
      const edited = { content: area.value };
      if (titleInput && titleInput.value.trim() && titleInput.value !== title) edited.title = titleInput.value.trim();
      return edited;
    },
    onSend: (handler) => send.addEventListener("click", handler),
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
    const left = (Date.parse(clock.dataset.expiresAt) - now) / 1000;
    if (card.dataset.state === "decided" || card.dataset.state === "refused") {
      clock.hidden = true;
    } else if (left <= 0) {
      clock.textContent = "Expired";
      card.expire();
    } else {
      clock.textContent = `Expires in ${countdown(left)}`;
    }
  }
}
