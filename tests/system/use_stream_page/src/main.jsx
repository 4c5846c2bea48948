// A chat page as a LangGraph app writes it: React and `useStream` from
// @langchain/langgraph-sdk, pointed at a Consentry server on another origin
// (tests/system/test_sdk_use_stream.py bundles it with esbuild and drives it).
//
// With `&history=1`, a person's message can be edited and sent again from the state it was first
// asked in (`getMessagesMetadata(...).firstSeenState.parent_checkpoint`, as
// Agent Chat UI does: the server forks the thread there), and the branches of
// a message are switched with `setBranch`.
//
// With `&blocks=1`, a message's content is sent as LangChain content blocks
// (`[{type: "text", text}]`), as Agent Chat UI sends it. A tool-call review
// (LangChain's HumanInTheLoopMiddleware: `action_requests`) is approved with
// `{decisions: [...]}` beside an empty input, as Agent Chat UI's card answers it.
//
// The page's URL names the server and the assistant: `?api=http://…&assistant=tutor`.
// The thread id is kept in sessionStorage, so a reload shows the same thread;
// `reconnectOnMount` keeps the running run's id there too, and rejoins it.
import { useEffect, useRef, useState } from "react";
import { createRoot } from "react-dom/client";
import { useStream } from "@langchain/langgraph-sdk/react";

const params = new URLSearchParams(window.location.search);
const API_URL = params.get("api");
const ASSISTANT = params.get("assistant") ?? "tutor";
const THREAD_KEY = "consentry:thread";
// `&reconnect=0`: useStream's defaults, without `reconnectOnMount`.
const RECONNECT = params.get("reconnect") !== "0";
const HISTORY = params.get("history") === "1";
const BLOCKS = params.get("blocks") === "1";

// What the page rendered, in order, for the test to read: the assistant's
// texts and whether a run was streaming (tokens shown before the run ended).
window.__renders = [];

function text(message) {
  if (typeof message.content === "string") return message.content;
  return message.content.map((part) => part.text ?? "").join("");
}

function Interrupt({ interrupt, onApprove, onAnswer, onDecisions }) {
  const [answer, setAnswer] = useState("");
  const reviewed = interrupt.value?.action_requests;
  return (
    <section id="interrupt" data-interrupt-id={interrupt.id}>
      <h2>Waiting for you</h2>
      <p className="interrupt-id">{interrupt.id}</p>
      <pre className="interrupt-value">{JSON.stringify(interrupt.value, null, 2)}</pre>
      <button id="approve" onClick={onApprove}>
        Approve
      </button>
      <input
        id="answer"
        aria-label="Answer"
        value={answer}
        onChange={(event) => setAnswer(event.target.value)}
      />
      <button id="send-answer" onClick={() => onAnswer(answer)}>
        Answer
      </button>
      {reviewed ? (
        <button
          id="approve-all"
          onClick={() => onDecisions(reviewed.map(() => ({ type: "approve" })))}
        >
          Approve every call
        </button>
      ) : null}
    </section>
  );
}

function Branches({ meta, onSwitch }) {
  const options = meta?.branchOptions ?? [];
  if (options.length < 2) return null;
  const at = options.indexOf(meta.branch);
  return (
    <span className="branches">
      <button className="previous" disabled={at <= 0} onClick={() => onSwitch(options[at - 1])}>
        ‹
      </button>
      <span className="branch">
        {at + 1}/{options.length}
      </span>
      <button
        className="next"
        disabled={at >= options.length - 1}
        onClick={() => onSwitch(options[at + 1])}
      >
        ›
      </button>
    </span>
  );
}

function Human({ message, meta, onResend, onSwitch }) {
  const [editing, setEditing] = useState(null);
  if (editing !== null) {
    return (
      <span className="editing">
        <input
          className="edit-text"
          aria-label="Edit message"
          value={editing}
          onChange={(event) => setEditing(event.target.value)}
        />
        <button
          className="resend"
          onClick={() => {
            onResend(editing.trim());
            setEditing(null);
          }}
        >
          Send again
        </button>
      </span>
    );
  }
  return (
    <>
      <span className="text">{text(message)}</span>
      <button className="edit" onClick={() => setEditing(text(message))}>
        Edit
      </button>
      <Branches meta={meta} onSwitch={onSwitch} />
    </>
  );
}

function App() {
  const [threadId, setThreadId] = useState(() => sessionStorage.getItem(THREAD_KEY));
  const [draft, setDraft] = useState("");
  const [runs, setRuns] = useState([]);
  const stream = useStream({
    apiUrl: API_URL,
    assistantId: ASSISTANT,
    threadId,
    onThreadId: (id) => {
      sessionStorage.setItem(THREAD_KEY, id);
      setThreadId(id);
    },
    reconnectOnMount: RECONNECT,
    // `&history=1`: the thread's history (its turns), for a message's first state and its
    // branches, as Agent Chat UI asks for them.
    fetchStateHistory: HISTORY,
    onCreated: (run) => setRuns((seen) => [...seen, run.run_id]),
  });
  const messages = stream.messages;
  const answers = messages.filter((m) => m.type === "ai").map(text);
  const last = useRef(null);
  useEffect(() => {
    const seen = { loading: stream.isLoading, answers };
    if (JSON.stringify(seen) !== last.current) {
      last.current = JSON.stringify(seen);
      window.__renders.push(seen);
    }
  });

  const send = (event) => {
    event.preventDefault();
    const content = draft.trim();
    if (!content) return;
    setDraft("");
    const human = { type: "human", content: BLOCKS ? [{ type: "text", text: content }] : content };
    stream.submit(
      { messages: [human] },
      { optimisticValues: (prev) => ({ ...prev, messages: [...(prev.messages ?? []), human] }) },
    );
  };
  const resume = (value) => stream.submit(undefined, { command: { resume: value } });
  // Agent Chat UI's answer to a tool-call review: an empty input beside the command.
  const decide = (decisions) => stream.submit({}, { command: { resume: { decisions } } });
  // Agent Chat UI's edit: the new text, from the state the message was first asked in.
  const resend = (message, index, content) => {
    const meta = stream.getMessagesMetadata(message, index);
    const human = { type: "human", content };
    stream.submit(
      { messages: [human] },
      {
        checkpoint: meta?.firstSeenState?.parent_checkpoint,
        optimisticValues: (prev) => ({
          ...prev,
          messages: [...(prev.messages ?? []).slice(0, index), human],
        }),
      },
    );
  };
  const { messages: _, ...rest } = stream.values ?? {};

  return (
    <main>
      <h1>useStream × Consentry</h1>
      <p id="thread">{threadId ?? "no thread yet"}</p>
      <p id="status" data-loading={String(stream.isLoading)}>
        {stream.isLoading ? "Streaming…" : "Idle"}
      </p>
      <ol id="runs">
        {runs.map((run) => (
          <li key={run}>{run}</li>
        ))}
      </ol>
      <ul id="messages">
        {messages.map((message, index) => (
          <li key={message.id ?? index} className={`msg ${message.type}`}>
            <b>{message.type}</b>{" "}
            {message.type === "human" ? (
              <Human
                message={message}
                meta={stream.getMessagesMetadata(message, index)}
                onResend={(content) => resend(message, index, content)}
                onSwitch={(branch) => stream.setBranch(branch)}
              />
            ) : (
              <span className="text">{text(message)}</span>
            )}
          </li>
        ))}
      </ul>
      {stream.interrupt && !stream.isLoading ? (
        <Interrupt
          interrupt={stream.interrupt}
          onApprove={() => resume({ decision: "approve" })}
          onAnswer={resume}
          onDecisions={decide}
        />
      ) : null}
      {stream.error ? <p id="error">{String(stream.error?.message ?? stream.error)}</p> : null}
      <form id="composer" onSubmit={send}>
        <input
          id="message"
          aria-label="Message"
          value={draft}
          onChange={(event) => setDraft(event.target.value)}
        />
        <button id="send" type="submit" disabled={stream.isLoading}>
          Send
        </button>
      </form>
      <h2>State</h2>
      <pre id="state">{JSON.stringify(rest, null, 2)}</pre>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<App />);
