// How the app names people: the signed-in person is "you", anybody else by their display name
// (the API's `decided_by_name`), never by a `tenant/user` principal.

let current = null; // GET /v1/me: {principal, tenant, user, name}

/** Remember who is signed in (null when the server cannot say). */
export function setCurrentUser(me) {
  current = me;
}

export function isCurrentUser(principal) {
  return Boolean(current && principal && principal === current.principal);
}

/**
 * Who `principal` is, in words: "you", a display name, "the conversation's policy" (a consent
 * decided by `auto_approve` / `auto_reject`), "Consentry" (`system`: an expiry, say).
 */
export function personName(principal, name = null) {
  if (!principal) return "someone";
  if (principal === "policy") return "the conversation's policy";
  if (principal === "system") return "Consentry";
  if (isCurrentUser(principal)) return "you";
  if (name) return name;
  const slash = principal.indexOf("/");
  return slash === -1 ? principal : principal.slice(slash + 1); // better than tenant/user
}

/** "you" → "You", "ada" → "Ada": the start of a sentence. */
export function capitalized(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}
