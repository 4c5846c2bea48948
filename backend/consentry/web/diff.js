// Diffs for consent cards: what the tutor wants to change, as people review a change elsewhere
// (GitHub's review, a word processor's suggestions): the changed lines with a little context,
// the unchanged stretches folded, and the changed words marked inside a changed line.
// No DOM here: consent-card.js draws what these functions return.

/** [{op: "same" | "add" | "del", text}] turning `before` into `after`, line by line. */
export function lineDiff(before, after) {
  const a = splitLines(before);
  const b = splitLines(after);
  return lcsDiff(a, b).map(({ op, token }) => ({ op, text: token }));
}

/**
 * The lines of a `lineDiff` as hunks: every changed line with `context` unchanged lines on each
 * side, and each longer unchanged stretch as one fold. Returns
 * [{type: "lines", lines} | {type: "fold", lines}], each line with its numbers in the old and
 * new text (`oldNo`, `newNo`: null where the line is not there) and its `index` in `lines`.
 * A fold shorter than
 * `minFold` lines is shown rather than folded; a diff with no change is one fold.
 */
export function hunks(lines, { context = 3, minFold = 2 } = {}) {
  let oldNo = 0;
  let newNo = 0;
  const numbered = lines.map((line, index) => ({
    ...line,
    index,
    oldNo: line.op === "add" ? null : ++oldNo,
    newNo: line.op === "del" ? null : ++newNo,
  }));
  const changed = numbered.map((line) => line.op !== "same");
  if (!changed.includes(true)) return numbered.length ? [{ type: "fold", lines: numbered }] : [];
  // shown: within `context` lines of a change
  const shown = numbered.map((_, i) => {
    for (let d = -context; d <= context; d++) if (changed[i + d]) return true;
    return false;
  });
  const result = [];
  let i = 0;
  while (i < numbered.length) {
    let j = i;
    while (j < numbered.length && shown[j] === shown[i]) j++;
    const stretch = numbered.slice(i, j);
    const fold = !shown[i] && stretch.length >= minFold;
    const last = result[result.length - 1];
    if (!fold && last?.type === "lines") last.lines.push(...stretch);
    else result.push({ type: fold ? "fold" : "lines", lines: stretch });
    i = j;
  }
  return result;
}

/**
 * The removed and added lines of each change paired up, in order (the first removed line with
 * the first added one…), as GitHub pairs them: a pair alike enough gets its words diffed.
 * Returns a Map from the index in `lines` of a removed or added line to its segments,
 * [{text, changed}], for the lines that have a partner.
 */
export function pairChangedLines(lines) {
  const words = new Map();
  let i = 0;
  while (i < lines.length) {
    if (lines[i].op === "same") {
      i++;
      continue;
    }
    const removed = [];
    const added = [];
    for (; i < lines.length && lines[i].op !== "same"; i++) (lines[i].op === "del" ? removed : added).push(i);
    for (let k = 0; k < Math.min(removed.length, added.length); k++) {
      const pair = wordDiff(lines[removed[k]].text, lines[added[k]].text);
      if (pair) {
        words.set(removed[k], pair.before);
        words.set(added[k], pair.after);
      }
    }
  }
  return words;
}

const MAX_WORD_TOKENS = 400; // past this a line is highlighted whole (the table is tokens²)
const MIN_SIMILARITY = 0.4; // share of the characters unchanged: below it, two different lines

/**
 * The words that changed between two versions of a line: {before, after}, each
 * [{text, changed}] covering its line, or null when the lines are too different (or too long)
 * for a word diff to help.
 */
export function wordDiff(before, after) {
  const a = tokens(before);
  const b = tokens(after);
  if (a.length > MAX_WORD_TOKENS || b.length > MAX_WORD_TOKENS) return null;
  const ops = lcsDiff(a, b);
  const kept = ops.filter((o) => o.op === "same" && /\S/.test(o.token)).reduce((n, o) => n + o.token.length, 0);
  const size = Math.max(before.replace(/\s/g, "").length, after.replace(/\s/g, "").length);
  if (!size || kept / size < MIN_SIMILARITY) return null;
  return {
    before: segments(ops.filter((o) => o.op !== "add")),
    after: segments(ops.filter((o) => o.op !== "del")),
  };
}

/** Runs of tokens merged into segments; a space between two changed words is changed too,
 * so "one nucleus" is marked as one change, not two. */
function segments(ops) {
  const changedAt = (k) => k >= 0 && k < ops.length && ops[k].op !== "same";
  const result = [];
  ops.forEach((o, k) => {
    const changed = changedAt(k) || (!/\S/.test(o.token) && changedAt(k - 1) && changedAt(k + 1));
    const last = result[result.length - 1];
    if (last && last.changed === changed) last.text += o.token;
    else result.push({ text: o.token, changed });
  });
  return result;
}

/** Words, runs of spaces, and single punctuation marks. */
function tokens(line) {
  return line.match(/\s+|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu) ?? [];
}

/** A longest-common-subsequence diff of two token lists: [{op, token}]. */
function lcsDiff(a, b) {
  // Trim the common head and tail first: proposals usually append, so the table stays small.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head
         && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const x = a.slice(head, a.length - tail);
  const y = b.slice(head, b.length - tail);
  const lengths = Array.from({ length: x.length + 1 }, () => new Uint32Array(y.length + 1));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lengths[i][j] = x[i] === y[j] ? lengths[i + 1][j + 1] + 1
        : Math.max(lengths[i + 1][j], lengths[i][j + 1]);
    }
  }
  const middle = [];
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    if (x[i] === y[j]) { middle.push({ op: "same", token: x[i] }); i++; j++; }
    else if (lengths[i + 1][j] >= lengths[i][j + 1]) middle.push({ op: "del", token: x[i++] });
    else middle.push({ op: "add", token: y[j++] });
  }
  while (i < x.length) middle.push({ op: "del", token: x[i++] });
  while (j < y.length) middle.push({ op: "add", token: y[j++] });
  return [
    ...a.slice(0, head).map((token) => ({ op: "same", token })),
    ...middle,
    ...a.slice(a.length - tail).map((token) => ({ op: "same", token })),
  ];
}

function splitLines(text) {
  if (!text) return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}
