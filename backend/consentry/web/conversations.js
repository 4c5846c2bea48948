// A note's conversations: the threads about it, most recently active first, as the server lists
// them (GET /v1/threads?note_id=), so they follow the person to another browser. This browser
// remembers only which one it had open (localStorage), to show it again after a reload.

import { $, fill, h, when } from "./dom.js";

const LIST_LIMIT = 50;

/** Where this browser remembers which conversation of a note (or of a project's chat) is open. */
const choiceKey = (noteId, projectId) => (noteId ? `consentry.thread.note.${noteId}` : `consentry.thread.project.${projectId}`);

/** Make `thread` the conversation its note (or project) opens with (the inbox's link to it). */
export function chooseConversation({ thread_id: threadId, note_id: noteId, project_id: projectId }) {
  localStorage.setItem(choiceKey(noteId, projectId), threadId);
}

export class Conversations {
  /**
   * @param {import("./consentry.js").ConsentryClient} client
   * @param {{onSwitch: (threadId: string|null) => void}} options called when the person picks one
   */
  constructor(client, { onSwitch }) {
    this.client = client;
    this.select = $("#conversation-select");
    this.row = $("#conversation-row");
    this.threads = [];
    this.current = null;
    this.generation = 0;
    this.select.addEventListener("change", () => {
      const threadId = this.select.value || null;
      this.remember(threadId);
      onSwitch(threadId);
    });
  }

  /** The conversations of `note` (or of the project's chat without a note); resolves with the
   * one to open: the one this browser had open, else the newest, else null (a new one). */
  async load(note, project) {
    const generation = ++this.generation;
    this.note = note;
    this.project = project;
    this.key = choiceKey(note?.note_id, project.project_id);
    this.threads = [];
    this.render(null);
    const remembered = localStorage.getItem(this.key);
    const threads = await this.fetch();
    if (generation !== this.generation) return null;
    this.threads = threads ?? [];
    // a thread the list lacks (one from before the server kept a thread's note) still opens
    return remembered ?? this.threads[0]?.thread_id ?? null;
  }

  /** The note's threads, or null when the server cannot list them by note (an older server:
   * its summaries have no `note_id`). */
  async fetch() {
    const query = this.note ? { noteId: this.note.note_id } : { projectId: this.project.project_id };
    const { threads } = await this.client.listThreads({ ...query, limit: LIST_LIMIT });
    if (threads.some((t) => !("note_id" in t))) return null;
    return threads.filter((t) => (this.note
      ? t.note_id === this.note.note_id
      : t.note_id === null && t.project_id === this.project.project_id));
  }

  /** Show the list with `threadId` chosen (null: a new conversation, not yet sent). */
  render(threadId) {
    this.current = threadId;
    const options = this.threads.map((t) => h("option", { value: t.thread_id },
      `${t.title || "Conversation"} · ${when(t.updated_at)}`));
    if (threadId === null) options.unshift(h("option", { value: "" }, "New conversation"));
    else if (!this.threads.some((t) => t.thread_id === threadId)) {
      options.unshift(h("option", { value: threadId }, "This conversation"));
    }
    fill(this.select, options);
    this.select.value = threadId ?? "";
    this.row.hidden = options.length < 2; // nothing to switch to
  }

  /** The open thread's summary (its detail): named in the list even when the list lacks it. */
  seen(thread) {
    if (thread.thread_id !== this.current || this.threads.some((t) => t.thread_id === thread.thread_id)) return;
    if ("note_id" in thread && thread.note_id === (this.note?.note_id ?? null)) {
      this.threads = [thread, ...this.threads];
      this.render(this.current);
    }
  }

  /** A first message made a new thread: remember it, and list it. */
  created(threadId) {
    this.remember(threadId);
    this.current = threadId;
    const generation = this.generation;
    this.fetch().then((threads) => {
      if (generation !== this.generation || threads === null) return;
      this.threads = threads;
      this.render(this.current);
    }).catch(() => {}); // the list is refreshed on the next open
  }

  remember(threadId) {
    if (threadId) localStorage.setItem(this.key, threadId);
    else localStorage.removeItem(this.key);
  }

  /** "New conversation": open the newest again after a reload, unless a message makes one. */
  forgetChoice() {
    localStorage.removeItem(this.key);
  }

  /** A thread that is gone. */
  forget(threadId) {
    if (localStorage.getItem(this.key) === threadId) localStorage.removeItem(this.key);
    this.threads = this.threads.filter((t) => t.thread_id !== threadId);
  }

  setBusy(busy) {
    this.select.disabled = busy;
    $("#new-conversation").disabled = busy;
  }
}
