// Drives Consentry's AG-UI endpoint with HttpAgent of @ag-ui/client, as an application would
// (tests/system/test_agui_client.py).
//
//   node src/drive.mjs <server base URL> <graph> <thread id>  < steps.json
//
// steps.json: a JSON list of steps, each run as one `agent.runAgent(...)` on the same agent:
//   {"message": "text"}          a user message added to the agent's conversation, then a run;
//   {"resume": [entry, ...]}     a run with `runAgent({resume})` (ResumeEntry of @ag-ui/core 1.0),
//                                an entry without `interruptId` answers the interrupt at its
//                                position in the last interrupt outcome this script received.
//
// Printed on stdout, one JSON object a line, all of it after @ag-ui/client's own parsing,
// enforcement and verification:
//   {"kind": "input", "step", "input"}             the RunAgentInput the agent sent;
//   {"kind": "event", "step", "event"}             every event, as the subscriber's onEvent got it;
//   {"kind": "callback", "step", "name", ...}      what the typed callbacks were given (a run's
//                                                  outcome and interrupts, a tool call's parsed
//                                                  arguments, a message's text);
//   {"kind": "warning", "step", "level", "text"}   anything the client warned about (a stripped
//                                                  field, a subscriber's error, ...);
//   {"kind": "log", "step", "level", "text"}       anything else it logged;
//   {"kind": "result", "step", "newMessages", "messages", "state", "pendingInterrupts"};
//   {"kind": "error", "step", "name", "message", "status"}  then exit 1: the run failed in the
//                                                  client (an HTTP error, a frame it rejected).

import { HttpAgent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";

const [baseUrl, graph, threadId] = process.argv.slice(2);
if (!baseUrl || !graph || !threadId) {
  process.stderr.write("usage: node drive.mjs <server> <graph> <thread id> < steps.json\n");
  process.exit(2);
}
const steps = JSON.parse(readFileSync(0, "utf8"));

let step = -1;
const print = (line) => process.stdout.write(`${JSON.stringify({ ...line, step })}\n`);
const said = (args) =>
  args.map((a) => (a instanceof Error ? a.stack : typeof a === "string" ? a : JSON.stringify(a)));
// stdout is this script's JSON lines only: what the client logs is a line of its own, and what it
// warns or errs about (a stripped field, a subscriber's error, a failed run) a warning.
for (const level of ["debug", "info", "log", "warn", "error"]) {
  const kind = level === "warn" || level === "error" ? "warning" : "log";
  console[level] = (...args) => print({ kind, level, text: said(args).join(" ") });
}

const agent = new HttpAgent({ url: `${baseUrl}/v1/agui/${graph}`, threadId });
let lastInterrupts = [];

const subscriber = {
  onRunInitialized: ({ input }) => print({ kind: "input", input }),
  onEvent: ({ event }) => print({ kind: "event", event }),
  onRunFinishedEvent: (params) => {
    const { event, agent: _agent, input: _input, messages: _m, state: _s, ...told } = params;
    if (told.outcome === "interrupt") lastInterrupts = told.interrupts;
    print({ kind: "callback", name: "onRunFinishedEvent", ...told });
  },
  onRunErrorEvent: ({ event }) =>
    print({ kind: "callback", name: "onRunErrorEvent", code: event.code, message: event.message }),
  onTextMessageEndEvent: ({ event, textMessageBuffer }) =>
    print({
      kind: "callback",
      name: "onTextMessageEndEvent",
      messageId: event.messageId,
      text: textMessageBuffer,
    }),
  onToolCallEndEvent: ({ event, toolCallName, toolCallArgs }) =>
    print({
      kind: "callback",
      name: "onToolCallEndEvent",
      toolCallId: event.toolCallId,
      toolCallName,
      toolCallArgs,
    }),
  onRunFailed: ({ error }) =>
    print({ kind: "callback", name: "onRunFailed", message: error.message }),
};

function resumeOf(entries) {
  return entries.map((entry, position) => {
    if (entry.interruptId !== undefined) return entry;
    const interrupt = lastInterrupts[position];
    if (interrupt === undefined) throw new Error(`no interrupt at position ${position} to resume`);
    return { interruptId: interrupt.id, ...entry };
  });
}

try {
  for (const [index, given] of steps.entries()) {
    step = index;
    let parameters = {};
    if (typeof given.message === "string") {
      agent.addMessage({ id: randomUUID(), role: "user", content: given.message });
    } else if (Array.isArray(given.resume)) {
      parameters = { resume: resumeOf(given.resume) };
    } else {
      throw new Error(`a step is {"message": ...} or {"resume": [...]}: ${JSON.stringify(given)}`);
    }
    const { newMessages } = await agent.runAgent(parameters, subscriber);
    print({
      kind: "result",
      newMessages,
      messages: agent.messages,
      state: agent.state,
      pendingInterrupts: agent.pendingInterrupts,
    });
  }
} catch (error) {
  const message = String(error?.message ?? error);
  print({ kind: "error", name: error?.name, message, status: error?.status });
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exitCode = 1;
}
