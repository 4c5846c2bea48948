// How a note's change is shown: the diff as hunks (diff.js computes them), changed words marked,
// unchanged stretches folded behind a button; and, above a diff that removes lines, whose they
// are.

import { hunks, pairChangedLines } from "./diff.js";
import { h } from "./dom.js";

/** The diff as hunks: changed lines with three lines of context, the rest folded behind a
 * button that unfolds it; changed words marked inside a changed line. */
export function diffView(lines, caption) {
  const added = lines.filter((l) => l.op === "add").length;
  const removed = lines.filter((l) => l.op === "del").length;
  const words = pairChangedLines(lines);
  const list = h("div.diff-lines", { role: "list" });
  for (const part of hunks(lines)) {
    const draw = (line) => diffLine(line, words.get(line.index));
    list.append(...(part.type === "lines" ? part.lines.map(draw) : [foldButton(part.lines, draw)]));
  }
  return h("figure.diff", {},
    h("figcaption", {}, `${caption}: ${added} line${added === 1 ? "" : "s"} added, ${removed} removed`),
    list);
}

function foldButton(lines, draw) {
  const count = lines.length;
  const first = lines[0].newNo ?? lines[0].oldNo;
  const button = h("button.diff-fold", {
    type: "button",
    role: "listitem",
    title: `Show lines ${first}–${first + count - 1}`,
    onclick: () => {
      const drawn = lines.map(draw);
      button.replaceWith(...drawn);
      drawn[0].tabIndex = -1; // the keyboard's place: where the button was
      drawn[0].focus();
    },
  }, `… ${count} unchanged line${count === 1 ? "" : "s"}`);
  return button;
}

const MARK = { add: "+", del: "−", same: " " };
const LABEL = { add: "added", del: "removed", same: null };

function diffLine(line, segments) {
  const text = segments
    ? segments.map((s) => (s.changed ? h("span.word", {}, s.text) : s.text))
    : line.text;
  const body = line.op === "add" ? h("ins", {}, text) : line.op === "del" ? h("del", {}, text) : text;
  return h(`div.diff-line.${line.op}`,
    { role: "listitem", "aria-label": LABEL[line.op], dataset: { line: line.newNo ?? line.oldNo } },
    h("span.diff-mark", { "aria-hidden": "true" }, MARK[line.op]),
    body);
}

/** When a note edit removes lines, say whose, plainly, above the diff: the lines a person
 * wrote or changed (`person_lines_removed`), or only the tutor's own earlier lines. */
export function removalNotice(p, removed) {
  const lines = (n) => `${n} line${n === 1 ? "" : "s"}`;
  const yours = p.person_lines_removed;
  if (typeof yours !== "number") {
    return removed ? h("p.warning.removes-lines", {}, `This removes ${lines(removed)} of your note.`) : null;
  }
  if (yours > 0) {
    return h("p.warning.removes-lines", {},
      `This removes ${lines(yours)} you wrote or edited (marked − below). Approve only if you mean to lose them.`);
  }
  if (!removed) return null;
  return h("p.removes-lines.own", {},
    `This rewrites ${lines(removed)} the tutor wrote earlier; every line you wrote stays.`);
}
