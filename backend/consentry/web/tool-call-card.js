// A reviewed tool call (a consent of kind `tool_call`, from LangChain's HumanInTheLoopMiddleware):
// the tool, its arguments as a table, the description, and the decisions its review allows:
// Approve, Edit (its arguments, as a JSON object), Reject (an optional reason, told to the model),
// Respond (a reply that the model reads as the tool's result; the tool does not run).
//
// The calls of one model turn share an `interrupt_id` and are decided together, in one request:
// `toolCallBatch` holds their cards. While it holds one card, the card's buttons send at once;
// with several, each card's buttons pick its decision and "Send decisions" sends them all.

import { newIdempotencyKey } from "./consentry.js";
import { h } from "./dom.js";

/** An argument's value as people read it: text as it is, anything else as JSON. */
function shown(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

/** The review's description, without the "Tool: name / Args: {…}" lines the middleware adds by
 * default (the card shows the tool and its arguments already). */
export function descriptionOf(proposal) {
  const text = typeof proposal.description === "string" ? proposal.description : "";
  const cut = text.indexOf(`\n\nTool: ${proposal.name}\nArgs: `);
  return (cut === -1 ? text : text.slice(0, cut)).trim();
}

/** The tool's arguments as a key/value table. */
export function argsTable(args) {
  const entries = Object.entries(args ?? {});
  if (!entries.length) return h("p.muted.tool-no-args", {}, "No arguments.");
  return h("table.tool-args-table", {},
    h("caption.visually-hidden", {}, "Arguments"),
    h("tbody", {}, ...entries.map(([key, value]) => h("tr", {},
      h("th", { scope: "row" }, key),
      h("td", { dataset: typeof value === "string" ? {} : { json: "" } }, shown(value))))));
}

/**
 * The body and the buttons of a tool-call card.
 * @param {object} consent the `consent` event (or inbox approval) of kind `tool_call`
 * @param {object} options
 * @param {(decision: string, extra: object) => void} options.decide send one decision now
 * @param {object|null} options.batch the card's `toolCallBatch`, or null (always sends at once)
 */
export function toolCallView(consent, { decide, batch }) {
  const p = consent.proposal ?? {};
  const allowed = new Set(consent.allowed_decisions);
  const together = () => (batch?.size() ?? 1) > 1;
  let picked = null;

  const reason = h("input.consent-comment", {
    type: "text",
    placeholder: "Reason to reject (optional)",
    title: "Told to the model with the rejection",
    "aria-label": "Reason to reject, told to the model (optional)",
    maxLength: 2000,
  });
  const editArea = h("textarea.tool-edit-args", { rows: 6, spellcheck: false, "aria-label": "The call's arguments, as a JSON object" });
  editArea.value = JSON.stringify(p.args ?? {}, null, 2);
  const editError = h("p.field-error", { role: "alert", hidden: true });
  const editSend = h("button.edit-send.primary", { type: "button", onclick: () => sendNow("edit") }, "Send my arguments");
  const editor = h("div.consent-editor.tool-editor", { hidden: true },
    h("label.field-label", {}, "Arguments (a JSON object)"), editArea, editError,
    h("div.row", {}, editSend, h("button.edit-cancel", { type: "button", onclick: () => close(editor, "edit") }, "Cancel")));
  const replyArea = h("textarea.tool-reply", { rows: 3, maxLength: 2000, "aria-label": "Your reply, returned as the tool's result" });
  const replyError = h("p.field-error", { role: "alert", hidden: true });
  const replySend = h("button.respond-send.primary", { type: "button", onclick: () => sendNow("respond") }, "Send reply");
  const replyBox = h("div.consent-editor.tool-respond", { hidden: true },
    h("label.field-label", {}, "Your reply: the model reads it as the tool's result (the tool does not run)"),
    replyArea, replyError,
    h("div.row", {}, replySend, h("button.respond-cancel", { type: "button", onclick: () => close(replyBox, "respond") }, "Cancel")));

  const buttons = {};
  const button = (decision, tag, text, title, onclick) => {
    if (!allowed.has(decision)) return null;
    buttons[decision] = h(tag, { type: "button", title, dataset: { decision }, "aria-pressed": null, onclick }, text);
    return buttons[decision];
  };
  const actions = [
    button("approve", "button.approve.primary", "Approve", "Run the tool with these arguments", () => choose("approve")),
    button("edit", "button.edit", "Edit…", "Change the arguments, then run the tool", () => open(editor, "edit", editArea)),
    button("reject", "button.reject.danger", "Reject", "The tool does not run", () => choose("reject")),
    button("respond", "button.respond", "Respond…", "Answer in the tool's place: the tool does not run", () => open(replyBox, "respond", replyArea)),
    allowed.has("reject") ? reason : null,
  ].filter(Boolean);

  function mark(decision) {
    picked = decision;
    const many = together();
    for (const [name, b] of Object.entries(buttons)) {
      if (many) b.setAttribute("aria-pressed", String(name === decision));
      else b.removeAttribute("aria-pressed");
    }
    editSend.hidden = many;
    replySend.hidden = many;
    batch?.changed();
  }
  function choose(decision) {
    editor.hidden = decision !== "edit";
    replyBox.hidden = decision !== "respond";
    if (together()) mark(decision);
    else sendNow(decision);
  }
  function open(box, decision, field) {
    editor.hidden = box !== editor;
    replyBox.hidden = box !== replyBox;
    buttons.edit?.setAttribute("aria-expanded", String(box === editor));
    buttons.respond?.setAttribute("aria-expanded", String(box === replyBox));
    if (together()) mark(decision);
    else mark(null);
    field.focus();
  }
  function close(box, decision) {
    box.hidden = true;
    buttons[decision]?.setAttribute("aria-expanded", "false");
    if (picked === decision) mark(null);
    buttons[decision]?.focus();
  }
  function sendNow(decision) {
    picked = decision;
    const made = choice();
    if (made) decide(made.decision, made.extra);
  }

  /** The decision picked, with what goes with it; null (said on the card) when it is not ready. */
  function choice() {
    editError.hidden = true;
    replyError.hidden = true;
    if (picked === "edit") {
      let edited;
      try {
        edited = JSON.parse(editArea.value);
      } catch (error) {
        return refuse(editError, `The arguments are not JSON: ${error.message}`);
      }
      if (edited === null || typeof edited !== "object" || Array.isArray(edited)) {
        return refuse(editError, "The arguments must be a JSON object: {\"name\": value, …}.");
      }
      return { decision: "edit", extra: { edited } };
    }
    if (picked === "respond") {
      const text = replyArea.value.trim();
      if (!text) return refuse(replyError, "Write the reply the model gets instead of the tool's result.");
      return { decision: "respond", extra: { comment: text } };
    }
    if (picked === "reject") return { decision: "reject", extra: reason.value.trim() ? { comment: reason.value.trim() } : {} };
    if (picked === "approve") return { decision: "approve", extra: {} };
    return null;
  }
  function refuse(line, text) {
    line.textContent = text;
    line.hidden = false;
    return null;
  }

  const said = descriptionOf(p);
  const description = said && said !== consent.title ? h("p.tool-description", {}, said) : null;
  return {
    body: [
      h("p.tool-call-name", {}, "Tool ", h("code", {}, p.name ?? "?")),
      argsTable(p.args),
      description,
    ],
    editors: [editor, replyBox],
    actions,
    choice,
    /** A batch grew to several (or back to one): the buttons pick, or send. */
    regroup: () => mark(together() ? picked : null),
    picked: () => picked,
  };
}

/**
 * The tool calls of one review (one `interrupt_id`), decided together in one request.
 * @param {string} interruptId
 * @param {object} options
 * @param {(decisions: object[], options: {idempotencyKey: string}) => Promise<unknown>} options.sendAll
 *   sends [{approval_id, decision, edited?, comment?}, …] as one request's `resume`
 */
export function toolCallBatch(interruptId, { sendAll }) {
  const cards = [];
  const heading = h("p.batch-heading", { hidden: true });
  const list = h("div.batch-cards");
  const status = h("p.batch-status", { role: "status" });
  const send = h("button.batch-send.primary", { type: "button", hidden: true, onclick: () => sendDecisions() }, "Send decisions");
  const element = h("section.consent-batch", { dataset: { interruptId }, "aria-label": "Tool calls to review together" },
    heading, list, h("div.batch-footer", {}, send, status));
  const keys = new Map();
  const pending = () => cards.filter((c) => c.dataset.state === "pending");

  function update() {
    const many = cards.length > 1;
    heading.hidden = !many;
    heading.textContent = `The model wants to make ${cards.length} tool calls. Choose a decision for each, then send them together.`;
    const open = pending();
    send.hidden = !many || open.length === 0;
    const chosen = open.filter((c) => c.picked() !== null).length;
    send.textContent = open.length === cards.length && chosen === open.length ? "Send decisions" : `Send decisions (${chosen} of ${open.length} chosen)`;
  }

  async function sendDecisions() {
    if (pending().length !== cards.length) {
      status.textContent = "Some of these calls were decided elsewhere: nothing was sent.";
      return;
    }
    const choices = cards.map((card) => card.choice());
    const missing = choices.findIndex((c) => c === null);
    if (missing !== -1) {
      status.textContent = "Choose a decision for each call first.";
      cards[missing].focus();
      return;
    }
    status.textContent = "";
    const decisions = cards.map((card, i) => ({ approval_id: card.dataset.approvalId, decision: choices[i].decision, ...choices[i].extra }));
    const fingerprint = JSON.stringify(decisions);
    if (!keys.has(fingerprint)) keys.set(fingerprint, newIdempotencyKey());
    send.disabled = true;
    const sending = sendAll(decisions, { idempotencyKey: keys.get(fingerprint) });
    const sent = await Promise.all(cards.map((card, i) => card.track(() => sending, choices[i].decision)));
    send.disabled = false;
    if (sent.every(Boolean)) send.hidden = true;
    else update();
  }

  element.size = () => cards.length;
  element.changed = update;
  /** Add a card made with `{batch: element}`. */
  element.add = (card) => {
    cards.push(card);
    list.append(card);
    for (const each of cards) each.regroup?.();
    update();
    return card;
  };
  return element;
}
