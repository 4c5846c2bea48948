// A chat page as a CopilotKit-style app writes it, small: HttpAgent of @ag-ui/client pointed at
// Consentry's AG-UI endpoint on another origin (tests/system/test_agui_client.py bundles it with
// esbuild and drives it in Chromium). The conversation is the agent's `messages` (HttpAgent
// applies the run's events to them); an interrupt the run ended with is a card whose Approve and
// Reject buttons send the next run's `resume`.
//
// The page's URL names the server and the graph: `?api=http://…&graph=tutor`.
import { HttpAgent } from "@ag-ui/client";

const params = new URLSearchParams(window.location.search);
const API_URL = params.get("api");
const GRAPH = params.get("graph") ?? "tutor";

const agent = new HttpAgent({ url: `${API_URL}/v1/agui/${GRAPH}` });
// Every event the agent's subscriber got (after @ag-ui/client's verification), for the test.
window.__events = [];

const $ = (id) => document.getElementById(id);
$("thread").textContent = agent.threadId;

function element(tag, attributes = {}, ...children) {
  const made = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) made.setAttribute(name, value);
  made.append(...children);
  return made;
}

function showMessages(messages) {
  const shown = messages
    .filter((m) => (m.role === "user" || m.role === "assistant") && m.content)
    .map((m) =>
      element(
        "li",
        { class: `msg ${m.role}`, "data-id": m.id },
        element("span", { class: "role" }, m.role === "user" ? "You" : "Assistant"),
        element("span", { class: "text" }, m.content),
      ),
    );
  $("conversation").replaceChildren(...shown);
}

function setRunning(running) {
  $("status").dataset.running = String(running);
  $("status").textContent = running ? "running…" : "idle";
  $("send").disabled = running;
}

function showError(message) {
  $("slot").replaceChildren(element("p", { id: "error", role: "alert" }, message));
}

function showInterrupt(interrupt) {
  const approve = element("button", { id: "approve", type: "button" }, "Approve");
  const reject = element("button", { id: "reject", type: "button" }, "Reject");
  const approved = { status: "resolved", payload: { decision: "approve" } };
  approve.onclick = () => run({ resume: [{ interruptId: interrupt.id, ...approved }] });
  reject.onclick = () => run({ resume: [{ interruptId: interrupt.id, status: "cancelled" }] });
  const details = interrupt.metadata?.content ?? JSON.stringify(interrupt.metadata ?? {}, null, 2);
  $("slot").replaceChildren(
    element(
      "section",
      { id: "interrupt", "data-interrupt-id": interrupt.id, "data-reason": interrupt.reason },
      element("h2", {}, "Waiting for you"),
      element("p", { class: "interrupt-message" }, interrupt.message ?? interrupt.reason),
      element("pre", { class: "interrupt-details" }, details),
      approve,
      reject,
    ),
  );
}

const subscriber = {
  onEvent: ({ event }) => {
    window.__events.push(event);
  },
  onMessagesChanged: ({ messages }) => showMessages(messages),
  onRunFinishedEvent: (params) => {
    if (params.outcome === "interrupt") showInterrupt(params.interrupts[0]);
  },
  onRunErrorEvent: ({ event }) => showError(`${event.code}: ${event.message}`),
};
agent.subscribe(subscriber);

async function run(parameters) {
  $("slot").replaceChildren();
  setRunning(true);
  try {
    await agent.runAgent(parameters);
  } catch (error) {
    showError(String(error?.message ?? error));
  } finally {
    setRunning(false);
  }
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const content = $("message").value.trim();
  if (!content || agent.isRunning) return;
  $("message").value = "";
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content });
  run({});
});
