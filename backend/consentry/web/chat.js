// The chat beside the open note: the note's conversations (threads), answers streamed token by
// token and shown as Markdown, steps and tool calls as quiet lines (a tool call opens to show
// its arguments and result), consent cards. A reload, or another
// browser, shows the same state: the note's conversations come from the server
// (GET /v1/threads?note_id=), the transcript, its tool calls (each in its place) and the pending
// consents from the thread, and a run still going is joined with the last event id this page saw.

import { consentCard } from "./consent-card.js";
import { isUnreachable } from "./consentry.js";
import { Conversations } from "./conversations.js";
import { $, h } from "./dom.js";
import { showMarkdown } from "./markdown.js";
import { toolCallBatch } from "./tool-call-card.js";

const FINAL_TEXT = {
  expired: "The request expired; nothing was changed.",
  failed: "The run failed.",
  cancelled: "Stopped.",
  step_limit: "The run took too many steps and was stopped.",
  timeout: "The run took too long and was stopped.",
  budget_exhausted: "The token budget is used up.",
};

const seqKey = (threadId) => `consentry.seq.${threadId}`;

/** "get_weather(city: "Tokyo")": a tool call in one line (its arguments shortened). */
function toolSummary(call) {
  const args = Object.entries(call.args ?? {}).map(([key, value]) => `${key}: ${JSON.stringify(value)}`).join(", ");
  return `${call.name}(${args.length > 60 ? `${args.slice(0, 59)}…` : args})`;
}

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
    this.graphSelect = $("#graph-select");
    this.streams = new Set(); // the AbortControllers of the streams this page follows
    this.generation = 0; // bumped on every switch, so a late answer never lands in another chat
    this.shownGeneration = 0; // the generation whose conversation is shown: until then, no send
    this.conversations = new Conversations(client, { onSwitch: (threadId) => this.switchTo(threadId) });
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

  /** The served graphs a message can start (GET /v1/graphs): with more than the tutor, a new
   * conversation may talk to any of them (an existing one keeps its graph). */
  async loadGraphs() {
    const { graphs } = await this.client.request("GET", "/v1/graphs");
    const talking = graphs.filter((graph) => graph.accepts_message);
    this.graphSelect.replaceChildren(...talking.map((graph) => h("option", { value: graph.name }, graph.name)));
    this.picked = talking.some((graph) => graph.name === "tutor") ? "tutor" : talking[0]?.name ?? "";
    this.graphSelect.value = this.picked;
    $("#graph-row").hidden = talking.length < 2;
    this.askTutor = this.input.getAttribute("placeholder");
    this.graphSelect.addEventListener("change", () => this.showGraph((this.picked = this.graphSelect.value)));
  }

  /** The graph shown in the list, named in the message box's prompt: the open conversation's, or
   * the one a new conversation talks to (the person's pick). */
  showGraph(graph) {
    if (!graph) return;
    this.graphSelect.value = graph;
    const prompt = graph === "tutor" ? this.askTutor : `Write to ${graph}… (Enter sends, Shift+Enter: new line)`;
    this.input.setAttribute("placeholder", prompt);
  }

  /** Switch to the conversations of `note` (or of the project when no note is open): the one
   * this browser had open, else the newest. */
  async open(note, project) {
    const generation = this.leave();
    this.note = note;
    this.project = project;
    $("#chat-context").textContent = note ? `About “${note.title}”` : `Project “${project.name}”`;
    await this.show(this.conversations.load(note, project), generation);
  }

  /** Another conversation of the same note, picked from the list. */
  async switchTo(threadId) {
    if (this.busy) return;
    const generation = this.leave();
    await this.show(threadId, generation);
  }

  /** Stop showing the current conversation: the runs go on on the server; this page moves on. */
  leave() {
    for (const stream of this.streams) stream.abort();
    this.streams.clear();
    this.threadId = null;
    this.graphSelect.disabled = false;
    this.showGraph(this.picked);
    this.log.replaceChildren();
    delete this.log.dataset.shown; // set again once the next conversation (or none) is shown
    const generation = ++this.generation;
    this.setBusy(); // no send until the conversation is shown: it would not be in it
    return generation;
  }

  /** Show `threadId` (or no conversation; or the promise of either, being looked up);
   * `data-shown` on the log says it is done, and sending is possible again. */
  async show(threadId, generation) {
    try {
      const shown = await threadId;
      if (generation !== this.generation) return; // another conversation was opened meanwhile
      await this.fillLog(shown, generation);
      if (generation === this.generation) this.log.dataset.shown = shown ?? "";
    } finally {
      if (generation === this.generation) {
        this.shownGeneration = generation;
        this.setBusy();
      }
    }
  }

  async fillLog(threadId, generation) {
    this.threadId = threadId;
    this.graphSelect.disabled = Boolean(threadId); // a conversation keeps its graph
    this.conversations.render(threadId);
    if (!threadId) return this.hint();
    let thread;
    let messages;
    let toolCalls;
    try {
      [thread, { messages }, { tool_calls: toolCalls }] = await Promise.all([
        this.client.getThread(threadId),
        this.client.getMessages(threadId),
        this.client.request("GET", `/v1/threads/${encodeURIComponent(threadId)}/tool-calls`),
      ]);
    } catch (error) {
      if (error.code !== "thread_not_found") throw error;
      this.conversations.forget(threadId);
      if (generation !== this.generation) return;
      this.threadId = null;
      this.conversations.render(null);
      return this.hint();
    }
    if (generation !== this.generation) return;
    this.conversations.seen(thread);
    this.showGraph(thread.graph);
    for (const message of messages) this.setMessage(message.role, message.message_id, message.content);
    this.placeToolCalls(toolCalls);
    for (const consent of thread.pending_consents) this.consent(consent);
    if (thread.status === "running") this.join(threadId);
    this.scroll();
  }

  /** Follow the thread's events after the last one this page saw: a run going on, or what
   * happened while the page was not following (a consent decided in the inbox, say). */
  join(threadId = this.threadId) {
    if (!threadId || threadId !== this.threadId || this.streams.size) return;
    const generation = this.generation;
    const lastEventId = localStorage.getItem(seqKey(threadId));
    this.follow((handlers, signal) => this.client.joinStream(threadId, handlers, { lastEventId, signal }))
      .catch((error) => { if (generation === this.generation) this.line("error", error.message); });
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

  /** "New conversation": an empty chat; the thread is created by its first message. */
  async startOver() {
    if (this.busy) return;
    this.conversations.forgetChoice();
    await this.show(null, this.leave());
    this.input.focus();
  }

  /**
   * Send the message in the box. A refused message stays in the box, with the reason; with
   * `onPendingConsent: "reject"` the thread's pending consents are rejected first.
   */
  async send({ onPendingConsent = null } = {}) {
    const text = this.input.value.trim();
    if (!text || this.busy) return;
    this.input.value = "";
    this.log.querySelector(".hint")?.remove();
    const bubble = this.bubble("user");
    bubble.textContent = text;
    const body = { message: text };
    if (this.threadId) body.thread_id = this.threadId;
    else {
      body.project_id = this.project.project_id;
      if (this.graphSelect.value) body.graph = this.graphSelect.value;
    }
    if (this.note) body.note_id = this.note.note_id;
    if (onPendingConsent) body.on_pending_consent = onPendingConsent;
    try {
      await this.follow((handlers, signal) => this.client.chat(body, handlers, { signal }));
    } catch (error) {
      if (error.name === "AbortError") return;
      bubble.closest(".msg").remove(); // refused: it was never sent, give the text back
      if (!this.input.value) this.input.value = text;
      this.refused(error);
      return;
    }
    if (onPendingConsent === "reject") {
      for (const card of this.log.querySelectorAll('.consent-card[data-state="pending"]')) {
        card.lock("Rejected by your new message: nothing was changed.");
      }
    }
  }

  /** Why a message was not sent, in words, with what to do about it. */
  refused(error) {
    this.clearRefusal();
    let line;
    const unrejectable = [...this.log.querySelectorAll('.consent-card[data-state="pending"]')]
      .some((card) => card.dataset.kind === "interrupt");
    if (error.code === "consent_pending" && unrejectable) {
      line = this.line("error", "Answer the question above first: a message cannot set it aside.");
      this.log.querySelector('.consent-card[data-state="pending"]')?.scrollIntoView({ block: "nearest" });
    } else if (error.code === "consent_pending") {
      line = this.line("error", "Approve or reject the change above first. ", h("button.reject-and-send.danger", {
        type: "button",
        onclick: () => this.send({ onPendingConsent: "reject" }),
      }, "Reject it and send my message"));
      const pending = this.log.querySelector('.consent-card[data-state="pending"]');
      pending?.scrollIntoView({ block: "nearest" });
    } else if (isUnreachable(error)) {
      line = this.line("error", "Can't reach Consentry — your message is kept; retry. ",
        h("button.retry", { type: "button", onclick: () => this.send() }, "Retry"));
    } else {
      line = this.line("error", error.message);
    }
    line.classList.add("refusal");
  }

  clearRefusal() {
    for (const line of this.log.querySelectorAll("p.refusal")) line.remove();
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
        if (!accepted) {
          resolve((accepted = true));
          if (generation === this.generation) this.clearRefusal(); // a later send worked
        }
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
        this.threadId = threadId; // a new conversation: the server made its thread
        this.graphSelect.disabled = true; // which keeps its graph
        this.conversations.created(threadId);
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
      token: (e) => {
        if (!here()) return;
        const text = this.bubble("assistant", e.message_id);
        text.parentElement.dataset.state = "streaming"; // plain text until the message is whole
        text.append(e.delta);
      },
      model_retry: (e) => {
        if (!here()) return;
        if (e.discard_message_id) this.bubble("assistant", e.discard_message_id).textContent = "";
        this.line("step", `The model is busy; trying again in ${Math.ceil(e.retry_in_seconds)} s.`);
      },
      message: (e) => here() && this.setMessage(e.role, e.message_id, e.content),
      tool_call: (e) => here() && this.toolCall(e),
      tool_result: (e) => here() && this.toolResult(e),
      consent: (e) => here() && this.consent(e),
      note: (e) => {
        this.app.noteApplied(e);
        if (!here()) return;
        this.line("applied", `Saved “${e.title}”, version ${e.version}.`);
        // the card whose decision this wrote shows what was written
        for (const card of this.log.querySelectorAll(".consent-card")) card.written(e);
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
    const existing = this.card(event.approval_id);
    if (existing) return existing;
    const threadId = event.thread_id;
    const batch = event.kind === "tool_call" && event.interrupt_id ? this.batch(threadId, event.interrupt_id) : null;
    const card = consentCard(event, {
      note: this.app.openNote(),
      batch,
      send: async (decision, extra) => {
        await this.follow((handlers, signal) => this.client.decide(threadId, event.approval_id, decision, { ...extra, signal }, handlers));
        return null;
      },
    });
    if (batch) batch.add(card);
    else this.log.append(card);
    this.app.inboxChanged();
    return card;
  }

  /** The reviewed tool calls of one model turn (kind `tool_call`, one `interrupt_id`): their
   * cards together, their decisions sent in one request (`resume` as a list). */
  batch(threadId, interruptId) {
    const existing = this.log.querySelector(`.consent-batch[data-interrupt-id="${CSS.escape(interruptId)}"]`);
    if (existing) return existing;
    const batch = toolCallBatch(interruptId, {
      sendAll: async (resume, { idempotencyKey }) => {
        await this.follow((handlers, signal) => this.client.chat({ thread_id: threadId, resume }, handlers, { idempotencyKey, signal }));
        return null;
      },
    });
    this.log.append(batch);
    return batch;
  }

  /** The card of a consent, if this chat shows it. */
  card(approvalId) {
    return this.log.querySelector(`.consent-card[data-approval-id="${CSS.escape(approvalId)}"]`);
  }

  /** A whole message: the tutor's as Markdown, the person's as they typed it. */
  setMessage(role, messageId, content) {
    const text = this.bubble(role, messageId);
    delete text.parentElement.dataset.state;
    if (role === "assistant") showMarkdown(text, content);
    else text.textContent = content;
  }

  /** The tool calls of a reloaded thread, each after the message said last before it. */
  placeToolCalls(toolCalls) {
    const last = new Map(); // the element each call goes after, by the message it follows
    for (const call of toolCalls) {
      const anchor = call.after_message_id ?? "";
      const line = this.toolLine(call);
      if (call.status === "pending") line.querySelector(".tool-state").textContent = "no result";
      this.toolResult(call);
      const after = last.get(anchor)
        ?? (anchor ? this.log.querySelector(`.msg[data-message-id="${CSS.escape(anchor)}"]`) : null);
      if (after) after.after(line);
      else if (!anchor) this.log.prepend(line);
      // a message the transcript does not have (yet): the line stays where toolLine put it
      last.set(anchor, line);
    }
  }

  /** A tool call, as a quiet line that opens to show its arguments (and then its result). */
  toolCall(event) {
    const line = this.toolLine(event);
    line.querySelector(".tool-args").textContent = JSON.stringify(event.args, null, 2);
    line.querySelector(".tool-summary").textContent = toolSummary(event);
    return line;
  }

  /** A tool's result (a `tool_result` event, or a listed tool call), on its call's line. */
  toolResult(result) {
    if (result.status === "pending") return;
    const line = this.toolLine(result);
    line.dataset.status = result.status;
    line.querySelector(".tool-state").textContent = result.status === "error" ? "failed" : "done";
    const body = line.querySelector(".tool-result");
    body.hidden = false;
    body.querySelector("pre").textContent = result.content;
    body.querySelector(".tool-cut").textContent = result.truncated
      ? `Only the first ${result.content.length.toLocaleString()} of ${result.content_chars.toLocaleString()} characters are kept.`
      : "";
  }

  /** The line of a tool call (made the first time it is named), with what is known of it. */
  toolLine(call) {
    const existing = this.log.querySelector(`details.tool[data-tool-call-id="${CSS.escape(call.tool_call_id)}"]`);
    if (existing) return existing;
    const line = h("details.tool", { dataset: { toolCallId: call.tool_call_id, status: "pending" } },
      h("summary", {}, h("span.tool-summary", {}, toolSummary(call)), " ", h("span.tool-state", {}, "running…")),
      h("p.tool-label", {}, "Arguments"),
      h("pre.tool-args", {}, call.args ? JSON.stringify(call.args, null, 2) : ""),
      h("div.tool-result", { hidden: true }, h("p.tool-label", {}, "Result"), h("pre"), h("p.tool-cut")));
    this.log.append(line);
    this.scroll();
    return line;
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

  line(kind, ...content) {
    const line = h(`p.${kind}`, { role: kind === "error" ? "alert" : null }, ...content);
    this.log.append(line);
    this.scroll();
    return line;
  }

  /** Busy while a stream runs, or while the conversation to send to is not shown yet. */
  setBusy() {
    const running = this.streams.size > 0;
    const busy = running || this.shownGeneration !== this.generation;
    this.busy = busy;
    $("#chat-send").disabled = busy;
    $("#chat-stop").hidden = !running;
    this.conversations.setBusy(busy);
    this.log.setAttribute("aria-busy", busy ? "true" : "false");
  }

  scroll() {
    this.log.scrollTop = this.log.scrollHeight;
  }
}
