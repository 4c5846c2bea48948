// The built-in web app: notes beside a chat with the tutor, and an approvals inbox.
// It talks to the server only through the public API, with the reference client.

import { ChatPane } from "./chat.js";
import { tick } from "./consent-card.js";
import { ConsentryClient } from "./consentry.js";
import { chooseConversation } from "./conversations.js";
import { $ } from "./dom.js";
import { Inbox } from "./inbox.js";
import { NotesPane } from "./notes.js";
import { setCurrentUser } from "./people.js";

const KEY = "consentry.apiKey";
const client = new ConsentryClient({
  apiKey: sessionStorage.getItem(KEY),
  onUnauthorized: () => askForKey(), // a key revoked mid-session asks again
});

const app = {
  toast(message, kind = "info") {
    const toast = $("#toast");
    toast.textContent = message;
    toast.dataset.kind = kind;
    toast.classList.add("shown");
    clearTimeout(app.toastTimer);
    app.toastTimer = setTimeout(() => toast.classList.remove("shown"), kind === "error" ? 8000 : 3000);
  },
  noteOpened: (note, project) => guard(chat.open(note, project)),
  noteApplied: (event) => guard(notes.applied(event)),
  noteSaved: (note) => chat.renamed(note),
  runEnded() {
    app.inboxChanged();
    guard(notes.afterRun());
  },
  openNote: () => notes.note,
  /** Show a conversation (the inbox's link to one): its note, or its project's chat, with it
   * chosen. */
  openConversation: (threadId) => guard((async () => {
    const thread = await client.getThread(threadId);
    chooseConversation(thread);
    await notes.openProject(thread.project_id, { noteId: thread.note_id });
    location.hash = "#/notes";
  })()),
  inboxCount(count) {
    const badge = $("#inbox-count");
    badge.textContent = String(count);
    badge.hidden = count === 0;
  },
  inboxChanged() {
    clearTimeout(app.inboxTimer); // several events at once: one request
    app.inboxTimer = setTimeout(() => guard(inbox.pending().then((list) => app.inboxCount(list.length))), 200);
  },
};

const notes = new NotesPane(client, app);
const chat = new ChatPane(client, app);
const inbox = new Inbox(client, app);

async function guard(promise) {
  try {
    await promise;
  } catch (error) {
    if (error.code === "unauthorized") askForKey();
    else app.toast(error.message ?? String(error), "error");
  }
}

function askForKey() {
  const dialog = $("#key-dialog");
  $("#change-key").hidden = false; // closed with Escape, it can be opened again
  $("#key-error").hidden = !client.apiKey;
  if (!dialog.open) dialog.showModal();
  $("#key-input").focus();
}

$("#key-form").addEventListener("submit", () => {
  client.apiKey = $("#key-input").value.trim();
  sessionStorage.setItem(KEY, client.apiKey);
  $("#key-input").value = "";
  $("#change-key").hidden = false;
  guard(start());
});
$("#change-key").addEventListener("click", askForKey);
$("#change-key").hidden = !client.apiKey;

let inboxWasShown = false;

function route() {
  const inboxShown = location.hash === "#/inbox";
  const back = inboxWasShown && !inboxShown;
  inboxWasShown = inboxShown;
  $("#inbox-view").hidden = !inboxShown;
  $("#notes-view").hidden = inboxShown;
  for (const link of [$("#nav-notes"), $("#nav-inbox")]) {
    if (link.getAttribute("href") === (inboxShown ? "#/inbox" : "#/notes")) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (inboxShown) return inbox.load();
  // Decisions there may have changed notes. A live approvals stream kept the chat's cards and
  // its conversation current: only without one is the chat drawn again.
  return back ? notes.refresh({ chat: !live }) : Promise.resolve();
}
window.addEventListener("hashchange", () => guard(route()));

/** Who is signed in, so the app says "you" rather than a principal. */
async function whoAmI() {
  try {
    setCurrentUser(await client.getMe());
  } catch (error) {
    if (error.code === "unauthorized") throw error;
    setCurrentUser(null); // a server that cannot say: people are named by their display names
  }
}

// The approvals stream keeps the badge, the inbox and the open cards live: a consent asked,
// decided elsewhere (another tab, the inbox, the terminal, the API) or expired shows at once.
let watching = null; // the AbortController of the stream this page follows
let live = false; // the server streams approvals (else the badge is refreshed on focus)

function watchApprovals() {
  watching?.abort();
  const controller = new AbortController();
  watching = controller;
  client.watchApprovals({
    ready: ({ pending }) => {
      live = true;
      app.inboxCount(pending);
    },
    approval: (event) => {
      const { approval } = event;
      app.inboxChanged();
      chat.card(approval.approval_id)?.settle(approval);
      if (approval.thread_id === chat.threadId) chat.join(); // what the decision set going
      inbox.changed(event);
    },
  }, { signal: controller.signal }).catch((error) => {
    if (controller.signal.aborted) return;
    live = false;
    if (error.code === "unauthorized") askForKey();
    else if (error.status !== 404) app.toast(error.message ?? String(error), "error");
  });
}

async function start() {
  await whoAmI();
  await chat.loadGraphs();
  await notes.load();
  await route();
  app.inboxChanged();
  watchApprovals();
}

setInterval(() => tick(document), 1000);
document.addEventListener("visibilitychange", () => {
  // without the stream, consents asked elsewhere show when the page is looked at again
  if (document.visibilityState === "visible" && !live) app.inboxChanged();
});
guard(start());
