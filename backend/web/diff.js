// A line diff (longest common subsequence), for consent cards: what the tutor wants to change.

/** [{op: "same" | "add" | "del", text}] turning `before` into `after`, line by line. */
export function lineDiff(before, after) {
  const a = splitLines(before);
  const b = splitLines(after);
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
    if (x[i] === y[j]) { middle.push({ op: "same", text: x[i] }); i++; j++; }
    else if (lengths[i + 1][j] >= lengths[i][j + 1]) middle.push({ op: "del", text: x[i++] });
    else middle.push({ op: "add", text: y[j++] });
  }
  while (i < x.length) middle.push({ op: "del", text: x[i++] });
  while (j < y.length) middle.push({ op: "add", text: y[j++] });
  return [
    ...a.slice(0, head).map((text) => ({ op: "same", text })),
    ...middle,
    ...a.slice(a.length - tail).map((text) => ({ op: "same", text })),
  ];
}

function splitLines(text) {
  if (!text) return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}
