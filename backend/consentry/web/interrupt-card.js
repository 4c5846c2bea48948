// The body and the buttons of a raw `interrupt(value)`'s card (a consent of kind `interrupt`). A
// yes/no question (`response_schema` `{"type": "boolean"}`) is the question in words and a Yes
// and a No button, each sending its answer; what else the graph sent is folded away as JSON. Any
// other question shows the value as JSON and an answer box (answer-form.js), which Answer sends.
// An answer the server finds misfit (422 `invalid_answer`) shows its errors; the card stays.

import { answerForm, isYesNo, onlyQuestion, questionOf } from "./answer-form.js";
import { h } from "./dom.js";

/**
 * @param {object} consent the `consent` event (or inbox approval) of kind `interrupt`
 * @param {{decide: (decision: string, extra: object) => void}} options
 */
export function interruptView(consent, options) {
  const value = consent.value ?? consent.proposal?.value ?? null;
  return isYesNo(consent.response_schema) ? yesNoView(consent, value, options) : answerView(consent, value, options);
}

/** The value as JSON, and an answer box; Answer sends what it reads. */
function answerView(consent, value, { decide }) {
  const form = answerForm(consent.response_schema ?? null);
  const answer = h("button.answer.primary", {
    type: "button",
    onclick: () => {
      const read = form.read();
      if ("value" in read) decide("answer", { value: read.value });
      else form.focus();
    },
  }, "Answer");
  form.element.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && e.target.tagName === "INPUT" && !e.isComposing) {
      e.preventDefault();
      answer.click();
    }
  });
  return {
    body: [asJson(value)],
    editors: [form.element],
    actions: [answer],
    refused: (error) => {
      if (error?.code === "invalid_answer") form.showErrors(error.details?.errors ?? []);
    },
  };
}

/** The question in words (unless the card's title says it already: the server takes the title
 * from it), the rest of the value folded as JSON, and Yes / No. Once answered, the answer given
 * stays pressed. */
function yesNoView(consent, value, { decide }) {
  const question = questionOf(value) ?? consent.response_schema?.description ?? null;
  const repeated = question !== null && question.split(/\s+/).join(" ").trim() === consent.title;
  const rest = onlyQuestion(value) ? null : h("details.interrupt-details", {},
    h("summary", {}, "What the graph sent, as JSON"),
    asJson(value));
  const answers = [[true, "Yes"], [false, "No"]].map(([answer, text]) => h(`button.answer-${text.toLowerCase()}`, {
    type: "button",
    dataset: { answer: String(answer) },
    onclick: () => decide("answer", { value: answer }),
  }, text));
  return {
    body: [question !== null && !repeated ? h("p.interrupt-question", {}, question) : null, rest],
    editors: [],
    actions: answers,
    settled: (statusName, decided) => {
      if (statusName !== "answered" || typeof decided?.value !== "boolean") return;
      for (const button of answers) button.setAttribute("aria-pressed", String(button.dataset.answer === String(decided.value)));
    },
  };
}

function asJson(value) {
  return h("pre.proposal-json.interrupt-value", { "aria-label": "What the graph asks, as JSON" }, JSON.stringify(value, null, 2));
}
