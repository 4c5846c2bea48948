// Markdown as people read it: the tutor's answers in the chat, and a note's preview.
//
// marked turns the text into HTML, and DOMPurify keeps only safe HTML from that (no
// `javascript:` link, say); the result is inserted as nodes, never through innerHTML. Both
// libraries are vendored in ./vendor/ (versions and licences in its README).
// HTML written in the text (a note may hold `<script>` or `<img onerror=…>`) is shown as the
// text it is, never parsed: even DOMPurify's inert parse of a `style` attribute is reported as a
// violation of the app's Content Security Policy. An image shows as a link with its alt text
// (the policy loads images from this server only); no `id` or `name` can shadow the app's own
// elements.

import { Marked } from "./vendor/marked.esm.js";
import DOMPurify from "./vendor/purify.es.mjs";

const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const markdown = new Marked({
  gfm: true,
  breaks: true, // a new line is a new line, as people type in a chat or a plain-text note
  async: false,
  renderer: {
    html({ text, block }) {
      return block ? `<p>${escapeHtml(text.trim())}</p>` : escapeHtml(text);
    },
    image({ href, text }) {
      return `<a href="${escapeHtml(href ?? "")}">${escapeHtml(text || href || "image")}</a>`;
    },
  },
});

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["img", "style", "form", "button", "textarea", "select", "video", "audio", "iframe"],
  FORBID_ATTR: ["style", "id", "name"],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank"); // a link never takes the app away
    node.setAttribute("rel", "noopener noreferrer");
  }
});

/** `text` as sanitized HTML nodes (a DocumentFragment). */
export function renderMarkdown(text) {
  return DOMPurify.sanitize(markdown.parse(text ?? ""), PURIFY);
}

/** Show `text` in `element` as Markdown. */
export function showMarkdown(element, text) {
  element.replaceChildren(renderMarkdown(text));
  element.classList.add("markdown");
  return element;
}
