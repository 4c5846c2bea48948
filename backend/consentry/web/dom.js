// Small DOM helpers for the built-in app. Text always goes in as text nodes, never as HTML.

/** h("button.primary", {onclick}, "Save") → <button class="primary">Save</button> */
export function h(tag, props = {}, ...children) {
  const [name, ...classes] = tag.split(".");
  const element = document.createElement(name);
  if (classes.length) element.className = classes.join(" ");
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) element.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (key in element && typeof value !== "string") element[key] = value;
    else element.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export const $ = (selector, root = document) => root.querySelector(selector);

/** Replace an element's children. */
export function fill(element, ...children) {
  element.replaceChildren();
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) element.append(child);
  }
  return element;
}

/** A search snippet, with the `**matched**` terms as <mark>. */
export function snippet(text) {
  return text.split(/\*\*(.*?)\*\*/g).map((part, i) => (i % 2 ? h("mark", {}, part) : part));
}

/** "2026-11-30T10:00:00Z" → a short local date and time. */
export function when(iso) {
  return new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** Seconds left → "2 d 03:04:05", "03:04". */
export function countdown(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const days = Math.floor(s / 86400);
  const clock = [Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60), s % 60]
    .map((n) => String(n).padStart(2, "0"));
  const text = days || clock[0] !== "00" ? clock.join(":") : clock.slice(1).join(":");
  return days ? `${days} d ${text}` : text;
}
