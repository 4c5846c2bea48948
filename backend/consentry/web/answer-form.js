// The answer box of a raw `interrupt(value)` (a consent of kind `interrupt`): a small form made
// from the interrupt's `response_schema` when the schema is simple (one scalar, or an object of
// scalar properties), else a JSON textarea. Reading it turns what was typed into the JSON value
// to send (in the free box: JSON when it reads as JSON, else the text itself, as the terminal
// client does); what cannot be read (a required field left empty) is said inline and nothing is
// sent. A yes/no question (`{"type": "boolean"}`, `isYesNo`) needs no box: interrupt-card.js gives
// it a Yes and a No button, and the question in words (`questionOf`). Whether the value fits the
// schema is the server's to say (422 `invalid_answer`, with the errors shown by `showErrors`).

import { h } from "./dom.js";

const SCALARS = new Set(["string", "number", "integer", "boolean"]);

/** The fields of a graph's value that say its question, in the order looked for. */
const QUESTION_KEYS = ["question", "message", "text", "prompt"];

/** The question a raw interrupt's value asks, in words: the value itself when it is text, else
 * its `question`, `message`, `text` or `prompt` field; null when it has none. */
export function questionOf(value) {
  if (typeof value === "string") return value.trim() ? value : null;
  if (!value || typeof value !== "object" || Array.isArray(value)) return null;
  const key = QUESTION_KEYS.find((k) => typeof value[k] === "string" && value[k].trim());
  return key ? value[key] : null;
}

/** Whether the value is its question and nothing more (text, or an object of one such field). */
export function onlyQuestion(value) {
  if (typeof value === "string") return questionOf(value) !== null;
  return questionOf(value) !== null && Object.keys(value).length === 1;
}

/** Whether an answer is yes or no: the schema is one boolean, and nothing more to fill in. */
export function isYesNo(schema) {
  return scalarType(schema) === "boolean";
}

/** `schema`'s scalar type ("string", "integer"…), or null when it is not one scalar type. */
function scalarType(schema) {
  if (!schema || typeof schema !== "object") return null;
  const type = Array.isArray(schema.type) && schema.type.length === 1 ? schema.type[0] : schema.type;
  if (SCALARS.has(type)) return type;
  // an enum of strings, without a type
  if (type === undefined && Array.isArray(schema.enum) && schema.enum.every((v) => typeof v === "string")) return "string";
  return null;
}

/** The fields of a form for `schema` ([{name, schema, required}], name null for a scalar
 * answer), or null when the schema is not simple enough for one. */
export function formFields(schema) {
  if (!schema || typeof schema !== "object") return null;
  if (scalarType(schema)) return [{ name: null, schema, required: true }];
  const properties = schema.properties;
  if (schema.type !== "object" || !properties || typeof properties !== "object") return null;
  const names = Object.keys(properties);
  if (!names.length || !names.every((name) => scalarType(properties[name]))) return null;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return names.map((name) => ({ name, schema: properties[name], required: required.has(name) }));
}

/**
 * @param {object|null} schema the interrupt's `response_schema`
 * @returns {{element: HTMLElement, read: () => ({value: unknown}|{error: string}),
 *   showErrors: (errors: {path: (string|number)[], message: string}[]) => void, focus: () => void}}
 */
export function answerForm(schema) {
  const fields = formFields(schema);
  return fields ? schemaForm(fields) : jsonBox();
}

function schemaForm(fields) {
  const problems = h("ul.answer-errors", { role: "alert", hidden: true });
  const inputs = fields.map((field) => fieldInput(field));
  const element = h("div.answer-form", {}, ...inputs.map((i) => i.row), problems);
  const say = (errors) => {
    problems.replaceChildren(...errors.map((text) => h("li", {}, text)));
    problems.hidden = errors.length === 0;
  };
  return {
    element,
    read() {
      const object = {};
      let scalar;
      const errors = [];
      for (const input of inputs) {
        input.control.removeAttribute("aria-invalid");
        const read = input.read();
        if ("error" in read) {
          errors.push(read.error);
          input.control.setAttribute("aria-invalid", "true");
        } else if (input.name === null) scalar = read.value;
        else if (read.value !== undefined) object[input.name] = read.value; // left empty: left out
      }
      say(errors);
      if (errors.length) return { error: errors[0] };
      return { value: inputs[0].name === null ? scalar : object };
    },
    showErrors(errors) {
      say(errors.map((e) => {
        const input = inputs.find((i) => i.name !== null && i.name === e.path?.[0]);
        input?.control.setAttribute("aria-invalid", "true");
        return input ? `${input.label}: ${e.message}` : e.message;
      }));
    },
    focus: () => inputs[0].control.focus(),
  };
}

/** One labelled input for a scalar field, typed after its schema. */
function fieldInput({ name, schema, required }) {
  const type = scalarType(schema);
  const label = schema.title ?? name ?? "Your answer";
  let control;
  if (type === "boolean") {
    control = h("input", { type: "checkbox", checked: schema.default === true });
  } else if (Array.isArray(schema.enum)) {
    const blank = required ? [] : [h("option", { value: "" }, "—")];
    control = h("select", { required }, ...blank, ...schema.enum.map((v, i) => h("option", { value: String(i) }, String(v))));
    if (required) control.value = String(Math.max(0, schema.enum.indexOf(schema.default)));
  } else if (type === "number" || type === "integer") {
    control = h("input", {
      type: "number",
      step: type === "integer" ? "1" : "any",
      inputmode: type === "integer" ? "numeric" : "decimal",
      min: schema.minimum !== undefined ? String(schema.minimum) : null,
      max: schema.maximum !== undefined ? String(schema.maximum) : null,
      required,
    });
  } else {
    control = h("input", {
      type: "text",
      required,
      maxLength: Number.isInteger(schema.maxLength) ? schema.maxLength : null,
    });
  }
  control.classList.add("answer-input");
  if (name !== null) control.dataset.field = name;
  const said = [schema.description, rangeText(type, schema)].filter(Boolean).join(" ");
  const hint = said ? h("span.field-hint", {}, said) : null;
  const mark = required && type !== "boolean" ? h("span.required", { title: "required" }, " *") : null;
  const row = h("label.answer-field", { dataset: { type } }, h("span.field-label", {}, label, mark), control, hint);
  const read = () => {
    if (type === "boolean") return { value: control.checked };
    if (Array.isArray(schema.enum)) {
      if (control.value === "") return required ? { error: `${label}: choose one` } : { value: undefined };
      return { value: schema.enum[Number(control.value)] };
    }
    if (control.validity?.badInput) return { error: `${label}: not a number` };
    const text = control.value;
    if (text.trim() === "") return required ? { error: `${label}: fill this in` } : { value: undefined };
    if (type === "string") return { value: text };
    const number = Number(text);
    return Number.isNaN(number) ? { error: `${label}: not a number` } : { value: number };
  };
  return { name, label, control, row, read };
}

/** "A whole number from 0 to 150.": what a number field takes, from its schema. */
function rangeText(type, schema) {
  if (type !== "number" && type !== "integer") return null;
  const what = type === "integer" ? "A whole number" : "A number";
  const [low, high] = [schema.minimum, schema.maximum];
  if (low !== undefined && high !== undefined) return `${what} from ${low} to ${high}.`;
  if (low !== undefined) return `${what}, at least ${low}.`;
  if (high !== undefined) return `${what}, at most ${high}.`;
  return type === "integer" ? `${what}.` : null;
}

function jsonBox() {
  const area = h("textarea.answer-json", {
    rows: 3,
    spellcheck: false,
    "aria-label": "Your answer",
    placeholder: "Lisbon",
  });
  const hint = h("p.field-hint", {}, "Text as you type it; JSON (a number, true or false, a list, an object, \"quoted text\") is sent as JSON.");
  const problems = h("ul.answer-errors", { role: "alert", hidden: true });
  const say = (errors) => {
    problems.replaceChildren(...errors.map((text) => h("li", {}, text)));
    problems.hidden = errors.length === 0;
    if (errors.length) area.setAttribute("aria-invalid", "true");
    else area.removeAttribute("aria-invalid");
  };
  return {
    element: h("div.answer-form", {}, h("span.field-label", { "aria-hidden": "true" }, "Your answer"), area, hint, problems),
    read() {
      const text = area.value.trim();
      let error = null;
      if (!text) error = "Type your answer first.";
      else {
        let value = text;
        try {
          value = JSON.parse(text);
        } catch {
          // not JSON: the text itself
        }
        say([]);
        return { value };
      }
      say([error]);
      return { error };
    },
    showErrors(errors) {
      say(errors.map((e) => (e.path?.length ? `${e.path.join(".")}: ${e.message}` : e.message)));
    },
    focus: () => area.focus(),
  };
}
