// The chat beside the open note: one conversation (thread) per note, answers streamed token by
// token, steps as quiet lines, consent cards. A reload shows the same state again: the
// transcript and the pending consents come from the thread, and a run still going is joined
// with the last event id this page saw.

import { consentCard } from "./consent-card.js";
import { $, h } from "./dom.js";

const FINAL_TEXT = {
  expired: "The request expired; nothing was changed.",
  failed: "The run failed.",
  cancelled: "Stopped.",
  step_limit: "The run took too many steps and was stopped.",
  timeout: "The run took too long and was stopped.",
  budget_exhausted: "The token budget is used up.",
};

const threadKey = (note, project) => (note ? `consentry.thread.note.${note.note_id}` : `consentry.thread.project.${project.project_id}`);
const seqKey = (threadId) => `consentry.seq.${threadId}`;

export class ChatPane {
  /**
   * @param {import("./consentry.js").ConsentryClient} client
   * @param {{toast: Function, noteApplied: (event: object) => void, openNote: () => object|null, inboxChanged: () => void}} app
   */
  constructor(client, app) {
    this.client = client;
    this.app = app;
    this.log = $("#chat-log");
    this.input = $("#chat-input");
    this.threadId = null;
    this.streams = new Set(); // the AbortControllers of the streams this page follows
    this.generation = 0; // bumped on every switch, so a late answer never lands in another chat
    $("#chat-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.send();
    });
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { // not while an IME composes
        e.preventDefault();
        this.send();
      }
    });
    $("#chat-stop").addEventListener("click", () => this.stop());
    $("#new-conversation").addEventListener("click", () => this.startOver());
  }

  /** Switch to the conversation of `note` (or of the project when no note is open). */
  async open(note, project) {
    for (const stream of this.streams) stream.abort(); // the runs go on; this page moves on
    this.streams.clear();
    const generation = ++this.generation;
    const key = threadKey(note, project);
    const threadId = localStorage.getItem(key);
    this.note = note;
    this.project = project;
    this.key = key;
    this.threadId = threadId;
    this.log.replaceChildren();
    this.setBusy();
    $("#chat-context").textContent = note ? `About “${note.title}”` : `Project “${project.name}”`;
    if (!threadId) return this.hint();
    let thread;
    let messages;
    try {
      [thread, { messages }] = await Promise.all([
        this.client.getThread(threadId),
        this.client.getMessages(threadId),
      ]);
    } catch (error) {
      if (error.code !== "thread_not_found") throw error;
      if (localStorage.getItem(key) === threadId) localStorage.removeItem(key);
      if (generation !== this.generation) return;
      this.threadId = null;
      return this.hint();
    }
    if (generation !== this.generation) return; // another note was opened meanwhile
    for (const message of messages) this.bubble(message.role, message.message_id).textContent = message.content;
    for (const consent of thread.pending_consents) this.consent(consent);
    if (thread.status === "running") {
      const lastEventId = localStorage.getItem(seqKey(threadId));
      this.follow((handlers, signal) => this.client.joinStream(threadId, handlers, { lastEventId, signal }))
        .catch((error) => { if (generation === this.generation) this.line("error", error.message); });
    }
    this.scroll();
  }

  /** The open note was saved: keep its title in the header. */
  renamed(note) {
    if (this.note?.note_id !== note.note_id) return;
    this.note = note;
    $("#chat-context").textContent = `About “${note.title}”`;
  }

  hint() {
    this.log.append(h("p.hint", {}, this.note
      ? "Ask about this note, or ask the tutor to add a summary of your discussion to it."
      : "Ask a question, or open a note to talk about it."));
  }

  startOver() {
    if (this.busy) return;
    localStorage.removeItem(this.key);
    this.open(this.note, this.project);
    this.input.focus();
  }

  async send() {
    const text = this.input.value.trim();
    if (!text || this.busy) return;
    this.input.value = "";
    this.log.querySelector(".hint")?.remove();
    const bubble = this.bubble("user");
    bubble.textContent = text;
    const body = { message: text };
    if (this.threadId) body.thread_id = this.threadId;
    else body.project_id = this.project.project_id;
    if (this.note) body.note_id = this.note.note_id;
    try {
      await this.follow((handlers, signal) => this.client.chat(body, handlers, { signal }));
    } catch (error) {
      if (error.name === "AbortError") return;
      bubble.closest(".msg").remove(); // refused: it was never sent, give the text back
      if (!this.input.value) this.input.value = text;
      this.line("error", error.message);
    }
  }

  async stop() {
    if (!this.threadId) return;
    try {
      await this.client.cancelRun(this.threadId);
    } catch (error) {
      if (error.code !== "no_active_run") this.app.toast(error.message, "error");
    }
  }

  /**
   * Follow a stream that `start(handlers, signal)` opens, beside any other this page follows.
   * Resolves once the request was accepted, rejects if it was refused; the stream is followed
   * on until it ends.
   */
  follow(start) {
    const controller = new AbortController();
    this.streams.add(controller);
    this.setBusy();
    const generation = this.generation;
    return new Promise((resolve, reject) => {
      let accepted = false;
      const handlers = this.handlers(generation, () => {
        if (!accepted) resolve((accepted = true));
      });
      start(handlers, controller.signal).then(
        () => {
          if (!accepted) resolve((accepted = true));
        },
        (error) => {
          if (controller.signal.aborted) return;
          if (accepted) this.line("error", error.message);
          else reject(error);
        },
      ).finally(() => {
        this.streams.delete(controller);
        this.setBusy();
      });
    });
  }

  handlers(generation, accepted) {
    const here = () => generation === this.generation;
    const remember = (threadId) => {
      if (here() && threadId && threadId !== this.threadId) {
        this.threadId = threadId;
        localStorage.setItem(this.key, threadId);
      }
    };
    return {
      accepted: ({ threadId }) => { // the response's headers: before its first event
        accepted();
        remember(threadId);
      },
      event: (e) => {
        accepted();
        if (!here()) return;
        remember(e.thread_id);
        // tokens are not stored: a join names the last stored event it saw
        if (e.seq && e.type !== "token") localStorage.setItem(seqKey(e.thread_id), String(e.seq));
        this.scroll();
      },
      step: (e) => here() && this.line("step", e.label),
      token: (e) => here() && this.bubble("assistant", e.message_id).append(e.delta),
      model_retry: (e) => {
        if (!here()) return;
        if (e.discard_message_id) this.bubble("assistant", e.discard_message_id).textContent = "";
        this.line("step", `The model is busy; trying again in ${Math.ceil(e.retry_in_seconds)} s.`);
      },
      message: (e) => { if (here()) this.bubble(e.role, e.message_id).textContent = e.content; },
      consent: (e) => here() && this.consent(e),
      note: (e) => {
        this.app.noteApplied(e);
        if (here()) this.line("applied", `Saved “${e.title}”, version ${e.version}.`);
      },
      error: (e) => here() && this.line("error", e.message),
      resync: () => here() && this.line("step", "Older events of this conversation are no longer kept."),
      reconnecting: () => here() && this.line("step", "Connection lost; joining again…"),
      final: (e) => {
        if (here() && FINAL_TEXT[e.reason]) this.line(e.reason === "failed" ? "error" : "step", FINAL_TEXT[e.reason]);
        this.app.runEnded();
      },
    };
  }

  consent(event) {
    const existing = this.log.querySelector(`.consent-card[data-approval-id="${CSS.escape(event.approval_id)}"]`);
    if (existing) return existing;
    const threadId = event.thread_id;
    const card = consentCard(event, {
      note: this.app.openNote(),
      send: async (decision, extra) => {
        await this.follow((handlers, signal) => this.client.decide(threadId, event.approval_id, decision, { ...extra, signal }, handlers));
        return null;
      },
    });
    this.log.append(card);
    this.app.inboxChanged();
    return card;
  }

  bubble(role, messageId = null) {
    if (messageId) {
      const existing = this.log.querySelector(`.msg[data-message-id="${CSS.escape(messageId)}"] .text`);
      if (existing) return existing;
    }
    const text = h("div.text");
    this.log.append(h(`div.msg.${role}`, { dataset: messageId ? { messageId } : {} },
      h("span.who", {}, role === "user" ? "You" : "Tutor"), text));
    return text;
  }

  line(kind, text) {
    this.log.append(h(`p.${kind}`, { role: kind === "error" ? "alert" : null }, text));
    this.scroll();
  }

  setBusy() {
    const busy = this.streams.size > 0;
    this.busy = busy;
    $("#chat-send").disabled = busy;
    $("#chat-stop").hidden = !busy;
    this.log.setAttribute("aria-busy", busy ? "true" : "false");
  }

  scroll() {
    this.log.scrollTop = this.log.scrollHeight;
  }
}
