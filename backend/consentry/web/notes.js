// Projects and notes: the list, the editor (plain text, saves that never overwrite silently)
// with its Markdown preview, search, and version history with restore, each version credited
// to whoever wrote and approved it.

import { $, fill, h, snippet, when } from "./dom.js";
import { showMarkdown } from "./markdown.js";
import { isCurrentUser, personName } from "./people.js";

const VIEW_KEY = "consentry.noteView"; // "write" or "preview": the person's last choice

/** Who a version is by, in words: "by you", "your edit, approved", "by the tutor, approved by
 * you", from the version's author and the decision that let the tutor write it. */
export function versionCredit(version) {
  if (version.author !== "assistant") return "by you";
  if (!("decision" in version) || !version.decided_by) return "by the tutor (approved)";
  const who = personName(version.decided_by, version.decided_by_name);
  if (version.decision === "edit") return isCurrentUser(version.decided_by) ? "your edit, approved" : `${who}’s edit, approved`;
  return `by the tutor, approved by ${who}`;
}

export class NotesPane {
  /**
   * @param {import("./consentry.js").ConsentryClient} client
   * @param {{toast: (message: string, kind?: string) => void, noteOpened: (note: object|null, project: object) => void}} app
   */
  constructor(client, app) {
    this.client = client;
    this.app = app;
    this.projects = [];
    this.project = null;
    this.note = null; // the note as the server last gave it
    this.title = $("#note-title");
    this.content = $("#note-content");
    this.version = $("#note-version");
    this.status = $("#note-status");
    this.conflict = $("#note-conflict");
    this.editor = $("#editor");
    this.versions = $("#versions");
    this.preview = $("#note-preview");
    this.previewToggle = $("#note-preview-toggle");
    this.previewToggle.addEventListener("click", () => this.setView(this.previewing ? "write" : "preview"));
    this.setView(localStorage.getItem(VIEW_KEY) === "preview" ? "preview" : "write", { remember: false });
    $("#project-select").addEventListener("change", (e) => this.run(() => this.openProject(e.target.value)));
    $("#new-project").addEventListener("click", () => this.run(() => this.createProject()));
    $("#new-note").addEventListener("click", () => this.run(() => this.createNote()));
    $("#note-save").addEventListener("click", () => this.run(() => this.save()));
    $("#note-history").addEventListener("click", () => this.run(() => this.toggleHistory()));
    $("#conflict-reload").addEventListener("click", () => this.run(() => this.reload()));
    $("#conflict-overwrite").addEventListener("click", () => this.run(() => this.save({ overwrite: true })));
    $("#search-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.run(() => this.search($("#search-input").value));
    });
    for (const field of [this.title, this.content]) field.addEventListener("input", () => this.markDirty());
    this.editor.addEventListener("keydown", (e) => {
      if ((e.ctrlKey || e.metaKey) && e.key === "s") {
        e.preventDefault();
        this.run(() => this.save());
      }
    });
    window.addEventListener("beforeunload", (e) => { if (this.dirty) e.preventDefault(); });
  }

  get previewing() {
    return this.previewToggle.getAttribute("aria-pressed") === "true";
  }

  /** Write (the plain-text editor) or Preview (the note as Markdown, unsaved text included). */
  setView(view, { remember = true } = {}) {
    const preview = view === "preview";
    this.previewToggle.setAttribute("aria-pressed", String(preview));
    this.content.hidden = preview;
    this.preview.hidden = !preview;
    if (preview) showMarkdown(this.preview, this.content.value);
    if (remember) localStorage.setItem(VIEW_KEY, view);
  }

  /** The preview follows the text whenever it changes under it (a note opened, an approved
   * edit, a reload). */
  renderPreview() {
    if (this.previewing) showMarkdown(this.preview, this.content.value);
  }

  get dirty() {
    return this.note !== null && (this.title.value !== this.note.title || this.content.value !== this.note.content);
  }

  async run(action) {
    try {
      await action();
    } catch (error) {
      this.app.toast(error.message ?? String(error), "error");
    }
  }

  async load() {
    const { projects } = await this.client.listProjects();
    this.projects = projects;
    const remembered = localStorage.getItem("consentry.project");
    const project = projects.find((p) => p.project_id === remembered) ?? projects.find((p) => p.is_default) ?? projects[0];
    this.renderProjects();
    await this.openProject(project.project_id, { noteId: localStorage.getItem("consentry.note") });
  }

  renderProjects() {
    fill($("#project-select"), this.projects.map((p) => h("option", { value: p.project_id }, p.name)));
  }

  async openProject(projectId, { noteId = null } = {}) {
    if (!this.confirmDiscard()) {
      $("#project-select").value = this.project.project_id;
      return;
    }
    this.project = this.projects.find((p) => p.project_id === projectId);
    $("#project-select").value = projectId;
    localStorage.setItem("consentry.project", projectId);
    fill($("#search-results"));
    const { notes } = await this.refreshList();
    const note = notes.find((n) => n.note_id === noteId) ?? null;
    if (note) await this.openNote(note.note_id, { force: true });
    else this.show(null);
  }

  async refreshList() {
    const list = await this.client.listNotes(this.project.project_id);
    fill($("#note-list"), list.notes.map((note) => h("li", { dataset: { noteId: note.note_id } },
      h("button.note-link", {
        type: "button",
        "aria-current": this.note?.note_id === note.note_id ? "page" : null,
        onclick: () => this.run(() => this.openNote(note.note_id)),
      }, note.title))));
    $("#note-list-empty").hidden = list.notes.length > 0;
    return list;
  }

  async createProject() {
    const name = prompt("Name of the new project");
    if (!name?.trim()) return;
    const project = await this.client.createProject(name.trim());
    this.projects.push(project);
    this.renderProjects();
    await this.openProject(project.project_id);
  }

  async createNote() {
    if (!this.confirmDiscard()) return;
    const note = await this.client.createNote(this.project.project_id, { title: "Untitled", content: "" });
    await this.refreshList();
    await this.openNote(note.note_id, { force: true });
    this.title.select();
  }

  confirmDiscard() {
    return !this.dirty || confirm("Discard your unsaved changes to this note?");
  }

  async openNote(noteId, { force = false } = {}) {
    if (!force && !this.confirmDiscard()) return;
    this.show(await this.client.getNote(noteId));
    this.content.focus();
  }

  /** Show `note` (or nothing) in the editor, and tell the chat which note is open. */
  show(note) {
    this.display(note);
    this.app.noteOpened(note, this.project);
  }

  /** Put `note` in the editor and the preview (the chat is left as it is). */
  display(note) {
    this.note = note;
    this.editor.hidden = note === null;
    $("#no-note").hidden = note !== null;
    this.conflict.hidden = true;
    this.versions.hidden = true;
    if (note) {
      this.title.value = note.title;
      this.content.value = note.content;
      localStorage.setItem("consentry.note", note.note_id);
    } else {
      localStorage.removeItem("consentry.note");
    }
    this.renderPreview();
    this.renderVersion();
    for (const item of document.querySelectorAll("#note-list li")) {
      const button = item.querySelector("button");
      if (item.dataset.noteId === note?.note_id) button.setAttribute("aria-current", "page");
      else button.removeAttribute("aria-current");
    }
  }

  renderVersion() {
    if (!this.note) return;
    this.version.textContent = `Version ${this.note.version}`;
    this.status.textContent = this.dirty ? "Unsaved changes" : `Saved ${when(this.note.updated_at)}`;
  }

  markDirty() {
    this.renderVersion();
  }

  async save({ overwrite = false } = {}) {
    if (!this.note) return;
    if (!overwrite && !this.dirty) {
      // nothing changed: a new version would only make a pending proposal stale
      this.app.toast("No changes to save.");
      return;
    }
    const base = overwrite ? Number(this.conflict.dataset.currentVersion) : this.note.version;
    try {
      const saved = await this.client.updateNote(this.note.note_id, {
        version: base, title: this.title.value, content: this.content.value,
      });
      this.note = saved;
      this.app.noteSaved(saved);
      this.conflict.hidden = true;
      this.renderVersion();
      await this.refreshList();
      this.app.toast(`Saved version ${saved.version}`);
    } catch (error) {
      if (error.code !== "version_conflict") throw error;
      const current = error.details.current_version;
      this.conflict.dataset.currentVersion = current;
      $("#conflict-text").textContent = `This note changed since you opened it: it is now at version ${current}, `
        + `yours is based on version ${this.note.version}. Nothing was saved.`;
      this.conflict.hidden = false;
      $("#conflict-reload").focus();
    }
  }

  async reload() {
    this.show(await this.client.getNote(this.note.note_id));
  }

  /** Back from the inbox: decisions there may have changed notes. Unsaved text stays. The
   * chat is drawn again only when asked (`chat`: the app has no live approvals stream); a live
   * chat keeps its cards as they are, with whatever a person was typing into them. */
  async refresh({ chat = true } = {}) {
    const { notes } = await this.refreshList();
    if (!this.note) return chat ? this.app.noteOpened(null, this.project) : undefined;
    const current = notes.find((n) => n.note_id === this.note.note_id);
    if (!current) return this.afterRun();
    if (!this.dirty) this.display(await this.client.getNote(this.note.note_id));
    if (chat) this.app.noteOpened(this.note, this.project);
  }

  /** A `note` event: an approved edit was written. The open note follows it at once, unless
   * the person has unsaved changes (their next save then shows the conflict). */
  async applied(event) {
    // the notes list follows at the run's end (afterRun), once per run
    if (!this.note || this.note.note_id !== event.note_id) return;
    if (this.dirty) {
      this.app.toast(`The tutor's edit is saved as version ${event.version}; you have unsaved changes.`);
      return;
    }
    this.note = { ...this.note, title: event.title, content: event.content, version: event.version, updated_at: event.ts };
    this.title.value = event.title;
    this.content.value = event.content;
    this.renderPreview();
    this.renderVersion();
    this.versions.hidden = true;
  }

  /** After a run: the tutor may have created or deleted a note (approved consents). */
  async afterRun() {
    const { notes } = await this.refreshList();
    if (this.note && !notes.some((n) => n.note_id === this.note.note_id)) {
      this.app.toast(`“${this.note.title}” was deleted.`);
      this.show(null);
    }
  }

  async search(q) {
    if (!q.trim()) {
      fill($("#search-results"));
      return;
    }
    const { hits } = await this.client.searchNotes(this.project.project_id, q.trim());
    fill($("#search-results"), hits.length ? hits.map((hit) => h("li", { dataset: { noteId: hit.note_id } },
      h("button.note-link", { type: "button", onclick: () => this.run(() => this.openNote(hit.note_id)) },
        h("strong", {}, hit.title)),
      h("p.snippet", {}, snippet(hit.snippet)))) : h("li.empty", {}, "No note matches."));
  }

  async toggleHistory() {
    if (!this.versions.hidden) {
      this.versions.hidden = true;
      return;
    }
    const { versions } = await this.client.listNoteVersions(this.note.note_id);
    const view = $("#version-view");
    fill($("#version-list"), [...versions].reverse().map((v) => h("li", { dataset: { version: v.version } },
      h("button.version-link", { type: "button", onclick: () => this.viewVersion(v, view) },
        `Version ${v.version}`, h("span.muted", {}, ` · ${versionCredit(v)} · ${when(v.created_at)}`)))));
    view.hidden = true;
    this.versions.hidden = false;
  }

  viewVersion(version, view) {
    fill(view,
      h("h4", {}, `Version ${version.version}: ${version.title}`),
      version.content ? showMarkdown(h("div.version-content"), version.content) : h("p.muted", {}, "(empty)"),
      version.version === this.note.version ? h("p.muted", {}, "This is the current version.")
        : h("button.primary", {
          id: "version-restore",
          type: "button",
          onclick: () => this.run(() => this.restore(version)),
        }, `Restore version ${version.version}`));
    view.hidden = false;
  }

  /** Restoring writes the old text as a new version, so history keeps every step. */
  async restore(version) {
    if (!this.confirmDiscard()) return;
    this.title.value = version.title;
    this.content.value = version.content;
    this.renderPreview();
    await this.save();
    this.versions.hidden = true;
  }
}
