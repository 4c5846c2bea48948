#!/usr/bin/env bash
# A full consent round trip with curl: create a note, chat, ask for a note edit, approve it.
# Usage: docs/examples/consent_round_trip.sh [BASE_URL]   (default http://127.0.0.1:8000)
# Needs curl, and python3 to pick ids out of JSON and print each SSE event on one line
# (`seq type fields…`, envelope fields and token deltas left out).
# tests/system/test_readme_session.py runs this script against a real server.
set -euo pipefail
BASE=${1:-http://127.0.0.1:8000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
json() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
show() {
  python3 -c '
import json, sys
tokens = 0
for line in sys.stdin:
    if not line.startswith("data: "):
        continue
    e = json.loads(line[6:])
    if e["type"] == "token":
        tokens += 1
        continue
    if tokens:
        print(f"      ({tokens} token events)")
        tokens = 0
    rest = {k: v for k, v in e.items() if k not in ("thread_id", "run_id", "seq", "ts", "type")}
    if "proposal" in rest:
        rest["proposal"] = {"note_id": "…", "base_version": rest["proposal"]["base_version"], "diff": "…"}
    seq, kind = e["seq"], e["type"]
    print(f"{seq:>4} {kind:<11} {json.dumps(rest, ensure_ascii=False)[:150]}")
'
}

# 1. Your default project, and a note in it.
PROJECT=$(curl -s "$BASE/v1/projects" | json '["projects"][0]["project_id"]')
NOTE=$(curl -s "$BASE/v1/projects/$PROJECT/notes" -H 'content-type: application/json' \
  -d '{"title": "RAG", "content": "RAG looks documents up first, then answers from them."}' \
  | json '["note_id"]')

# 2. Ask the tutor a question: tokens stream, the answer is grounded in the note.
echo '$ POST /v1/chat {"message": "What is RAG?", "note_id": …}'
curl -sN "$BASE/v1/chat" -H 'content-type: application/json' \
  -d "{\"message\": \"What is RAG?\", \"note_id\": \"$NOTE\"}" > $WORK/1.sse
show < $WORK/1.sse
THREAD=$(grep -m1 -o '"thread_id":"[^"]*"' $WORK/1.sse | cut -d'"' -f4)

# 3. Ask for a note edit: the stream ends with a consent event and final(interrupted).
echo '$ POST /v1/chat {"thread_id": …, "message": "Add a summary of our discussion to my note"}'
curl -sN "$BASE/v1/chat" -H 'content-type: application/json' \
  -d "{\"thread_id\": \"$THREAD\", \"message\": \"Add a summary of our discussion to my note\", \"note_id\": \"$NOTE\"}" \
  > $WORK/2.sse
show < $WORK/2.sse
APPROVAL=$(grep -m1 -o '"approval_id":"[^"]*"' $WORK/2.sse | cut -d'"' -f4)

# 4. The thread waits for the decision (a reloaded page gets the pending consent from here).
echo '$ GET /v1/threads/{thread_id}'
curl -s "$BASE/v1/threads/$THREAD" | json '["status"]'

# 5. Approve: the edit is written as a new note version.
echo '$ POST /v1/chat {"thread_id": …, "resume": {"approval_id": …, "decision": "approve"}}'
curl -sN "$BASE/v1/chat" -H 'content-type: application/json' \
  -d "{\"thread_id\": \"$THREAD\", \"resume\": {\"approval_id\": \"$APPROVAL\", \"decision\": \"approve\"}}" \
  | show

# 6. A second click on "approve" changes nothing.
echo '$ POST /v1/chat (the same decision again)'
curl -s "$BASE/v1/chat" -H 'content-type: application/json' \
  -d "{\"thread_id\": \"$THREAD\", \"resume\": {\"approval_id\": \"$APPROVAL\", \"decision\": \"approve\"}}"
echo
echo '$ GET /v1/notes/{note_id}/versions'
curl -s "$BASE/v1/notes/$NOTE/versions" \
  | json '["versions"]' | python3 -c 'import ast,sys; [print(v["version"], v["author"], v["approval_id"]) for v in ast.literal_eval(sys.stdin.read())]'
