// A chat page as a LangGraph app writes it: React and `useStream` from
// @langchain/langgraph-sdk, pointed at a Consentry server on another origin
// (tests/system/test_sdk_use_stream.py bundles it with esbuild and drives it).
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

// What the page rendered, in order, for the test to read: the assistant's
// texts and whether a run was streaming (tokens shown before the run ended).
window.__renders = [];

function text(message) {
  if (typeof message.content === "string") return message.content;
  return message.content.map((part) => part.text ?? "").join("");
}

function Interrupt({ interrupt, onApprove, onAnswer }) {
  const [answer, setAnswer] = useState("");
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
    </section>
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
    const human = { type: "human", content };
    stream.submit(
      { messages: [human] },
      { optimisticValues: (prev) => ({ ...prev, messages: [...(prev.messages ?? []), human] }) },
    );
  };
  const resume = (value) => stream.submit(undefined, { command: { resume: value } });
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
            <b>{message.type}</b> <span className="text">{text(message)}</span>
          </li>
        ))}
      </ul>
      {stream.interrupt && !stream.isLoading ? (
        <Interrupt
          interrupt={stream.interrupt}
          onApprove={() => resume({ decision: "approve" })}
          onAnswer={resume}
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
