// How a consent card says what happened: a decision sent from it, an outcome decided elsewhere
// ("Ada rejected this: nothing was changed."), a refusal. People are named as people.js names them.

import { isUnreachable } from "./consentry.js";
import { capitalized, isCurrentUser, personName } from "./people.js";

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

export const EXPIRED_TEXT = "This request expired: nothing was changed.";

/** What happened to a consent, in words: "You approved this elsewhere.", "Ada rejected this:
 * nothing was changed." */
export function outcomeText(statusName, decided, { elsewhere = false } = {}) {
  if (statusName === "expired") return EXPIRED_TEXT;
  if (statusName === "cancelled") return "Cancelled: the conversation moved on; nothing was changed.";
  if (statusName === "superseded") {
    return "Superseded: the conversation went on from an earlier point; nothing was changed.";
  }
  const who = capitalized(personName(decided?.decided_by, decided?.decided_by_name));
  const where = elsewhere && isCurrentUser(decided?.decided_by) ? " elsewhere" : "";
  if (statusName === "approved") return `${who} approved this${where}.`;
  if (statusName === "edited") return `${who} approved this with an edit${where}.`;
  if (statusName === "rejected") return `${who} rejected this${where}: nothing was changed.`;
  if (statusName === "answered") return `${who} answered this${where}.`;
  return `${who} decided this${where}.`;
}

export function refusalText(error) {
  if (error?.code === "already_decided") {
    const decided = error.details?.decided;
    return `${outcomeText(decided?.status ?? error.details?.status, decided)} Nothing more was sent.`;
  }
  if (error?.code === "consent_expired") return EXPIRED_TEXT;
  if (isUnreachable(error)) return "Can't reach Consentry: nothing was decided. Try again.";
  return error?.message ?? String(error);
}
